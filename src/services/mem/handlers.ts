/**
 * mem's request handlers: validate every field first (bad input stores nothing),
 * then call the stores. Replies are exactly the contract's.
 */
import { InvalidRequestError, optionalInteger, optionalString, parseMessages, requireString, type HandlersOf } from '../../runtime/index.js';
import { DEFAULT_TOP_K, type MEM } from '../../protocol/mem.js';
import type { HardStore } from './hard.js';
import type { HistoryStore } from './history.js';
import { checkChannelId } from './naming.js';
import type { SoftMemory } from './soft.js';

/** The stores the handlers work on. */
export interface MemStores {
  history: HistoryStore;
  hard: HardStore;
  soft: SoftMemory;
}

function channelId(request: { readonly channel_id?: unknown }): string {
  const id = requireString(request, 'channel_id');
  checkChannelId(id);
  return id;
}

/** Most results one search returns: each is read back from disk. */
export const MAX_TOP_K = 1000;

function topK(request: { readonly top_k?: unknown }): number {
  const value = request.top_k;
  if (value === undefined || value === null) return DEFAULT_TOP_K;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new InvalidRequestError(`field "top_k" must be a positive integer, got ${JSON.stringify(value)}`);
  }
  return Math.min(value, MAX_TOP_K);
}

/** Builds the handlers of every mem request type. */
export function memHandlers(stores: MemStores): HandlersOf<typeof MEM> {
  return {
    async get_history(request, ctx) {
      const id = channelId(request);
      const limit = optionalInteger(request, 'limit', { min: 0 }) ?? 0;
      const { messages, bytesRead } = await stores.history.get(id, limit);
      ctx.log.debug({ limit, returned: messages.length, bytesRead }, 'history read');
      return { type: 'history', messages };
    },

    async append_history(request, ctx) {
      const id = channelId(request);
      const messages = parseMessages(request.messages, 'messages');
      await stores.history.append(id, messages);
      ctx.log.debug({ count: messages.length }, 'history appended');
      return { type: 'ok' };
    },

    async clear_history(request, ctx) {
      await stores.history.clear(channelId(request));
      ctx.log.info('history cleared');
      return { type: 'ok' };
    },

    async search_hard(request, ctx) {
      const query = requireString(request, 'query');
      const k = topK(request);
      const started = performance.now();
      const results = await stores.hard.search(query, k);
      ctx.log.debug(
        { topK: k, returned: results.length, entries: stores.hard.count, searchMs: Math.round((performance.now() - started) * 100) / 100 },
        'hard memories searched',
      );
      return { type: 'hard_memories', results };
    },

    async store_hard(request, ctx) {
      const messages = parseMessages(request.messages, 'messages');
      const tag = optionalString(request, 'tag') ?? null;
      const id = await stores.hard.store(messages, tag);
      ctx.log.debug({ id, count: messages.length }, 'hard memory stored');
      return { type: 'ok', id };
    },

    get_soft() {
      return { type: 'soft_memory', content: stores.soft.get() };
    },

    async set_soft(request, ctx) {
      const content = requireString(request, 'content');
      await stores.soft.set(content);
      ctx.log.debug({ chars: content.length }, 'soft memory replaced');
      return { type: 'ok' };
    },
  };
}
