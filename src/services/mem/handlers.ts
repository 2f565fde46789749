/**
 * mem's request handlers: validate every field first (bad input stores nothing),
 * then call the stores. Replies are the contract's; a reply that would not fit in
 * one frame (`[limits] max_frame_bytes`) is cut to what fits and says so with the
 * extra fields `truncated: true` and `omitted: N` (absent when nothing was left out).
 *
 * Bounds on what is stored, so that one item always fits in a reply:
 * - one `append_history` or `store_hard`: its messages at most half the frame limit;
 * - the soft memory: at most a quarter of it (it goes whole into every system prompt).
 */
import {
  DEFAULT_MAX_FRAME_BYTES,
  InvalidRequestError,
  castToError,
  errorFrame,
  messageBytes,
  type ChatMessage,
  type HandlerContext,
  optionalInteger,
  optionalString,
  parseMessages,
  requireString,
  type HandlersOf,
  type Logger,
} from '../../runtime/index.js';
import { DEFAULT_TOP_K, type ContextPartError, type ContextPartsReply, type HardMemoryResult, type MEM } from '../../protocol/mem.js';
import type { HardStore } from './hard.js';
import type { HistoryStore } from './history.js';
import type { HistoryPage } from './tail.js';
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

/** Room left in a frame for a reply's envelope (type, extra fields) around its list. */
export const REPLY_MARGIN_BYTES = 4096;

/** mem's size bounds, all derived from `[limits] max_frame_bytes`. */
export interface MemLimits {
  /** Largest encoded list of messages or results in one reply. */
  replyBytes: number;
  /** Largest encoded messages of one `append_history` or `store_hard`. */
  recordBytes: number;
  /** Largest soft memory, in UTF-8 bytes. */
  softBytes: number;
}

/** The bounds for a frame limit of `maxFrameBytes`. */
export function memLimits(maxFrameBytes: number): MemLimits {
  return {
    replyBytes: Math.max(0, maxFrameBytes - REPLY_MARGIN_BYTES),
    recordBytes: Math.floor(maxFrameBytes / 2),
    softBytes: Math.floor(maxFrameBytes / 4),
  };
}

function checkRecord(messages: readonly ChatMessage[], limits: MemLimits): void {
  let bytes = 0;
  for (const m of messages) bytes += messageBytes(m);
  if (bytes > limits.recordBytes) {
    throw new InvalidRequestError(
      `field "messages" is ${bytes} bytes encoded, over mem's bound of ${limits.recordBytes} bytes a request (half of [limits] max_frame_bytes)`,
    );
  }
}

/** A search part that is left to `search_hard`: the index is still being built. */
const PENDING = Symbol('pending');

/** A part's outcome: its value, or the error frame its own message would have answered. */
async function settle<T>(part: 'hard' | 'history', ctx: HandlerContext, work: () => Promise<T>): Promise<T | ContextPartError> {
  try {
    return await work();
  } catch (err) {
    const error = errorFrame(err);
    if (error.code === 'INTERNAL') ctx.log.error({ part, err: castToError(err) }, 'context part failed');
    else ctx.log.info({ part, code: error.code, reason: error.message }, 'context part refused');
    return { error };
  }
}

/** The newest of `messages` (oldest first) whose encoded sizes add up to at most `maxBytes`; the older ones join `omitted`. */
export function fitNewest(messages: ChatMessage[], omitted: number, maxBytes: number): { messages: ChatMessage[]; omitted: number } {
  let bytes = 0;
  let from = messages.length;
  while (from > 0) {
    const size = messageBytes(messages[from - 1] as ChatMessage);
    if (bytes + size > maxBytes) break;
    bytes += size;
    from--;
  }
  return from === 0 ? { messages, omitted } : { messages: messages.slice(from), omitted: omitted + from };
}

/**
 * Builds the handlers of every mem request type. With `serviceLog` (the service's
 * logger), the per-request debug lines are skipped unless it is at debug: calling a
 * request's `ctx.log` makes its child logger (pino's `child()` serialises the
 * bindings), which was several per cent of mem's CPU on a request that logs nothing.
 */
export function memHandlers(stores: MemStores, limits: MemLimits = memLimits(DEFAULT_MAX_FRAME_BYTES), serviceLog?: Logger): HandlersOf<typeof MEM> {
  const debug = (): boolean => serviceLog?.isLevelEnabled('debug') ?? true;
  /** `get_history`'s reading: the channel's last `limit` messages that fit in one reply. */
  async function readHistory(request: { readonly channel_id?: unknown; readonly limit?: unknown }, ctx: HandlerContext): Promise<HistoryPage> {
    const id = channelId(request);
    const limit = optionalInteger(request, 'limit', { min: 0 }) ?? 0;
    const { messages, omitted, bytes, bytesRead } = await stores.history.get(id, limit, limits.replyBytes);
    if (debug()) ctx.log.debug({ limit, returned: messages.length, omitted, bytesRead }, 'history read');
    if (omitted > 0) ctx.log.warn({ returned: messages.length, omitted, boundBytes: limits.replyBytes }, 'history reply cut to what fits in a frame');
    return { messages, omitted, bytes };
  }

  /** `search_hard`'s search: the best `k` results that fit in one reply, and their encoded size. */
  async function search(query: string, k: number, ctx: HandlerContext): Promise<{ results: HardMemoryResult[]; omitted: number; bytes: number }> {
    const started = performance.now();
    const found = await stores.hard.search(query, k, ctx.signal);
    // Best first: keep the best results whose encoded size fits in one reply.
    const results = [];
    let bytes = 0;
    for (const r of found) {
      const size = Buffer.byteLength(JSON.stringify(r), 'utf8') + 1;
      if (bytes + size > limits.replyBytes) break;
      bytes += size;
      results.push(r);
    }
    if (debug())
      ctx.log.debug(
        { topK: k, returned: results.length, entries: stores.hard.count, searchMs: Math.round((performance.now() - started) * 100) / 100 },
        'hard memories searched',
      );
    const omitted = found.length - results.length;
    if (omitted > 0) ctx.log.warn({ returned: results.length, omitted, boundBytes: limits.replyBytes }, 'search reply cut to what fits in a frame');
    return { results, omitted, bytes };
  }

  return {
    async get_history(request, ctx) {
      const { messages, omitted } = await readHistory(request, ctx);
      return omitted > 0 ? { type: 'history', messages, truncated: true, omitted } : { type: 'history', messages };
    },

    async append_history(request, ctx) {
      const id = channelId(request);
      const messages = parseMessages(request.messages, 'messages');
      checkRecord(messages, limits);
      await stores.history.append(id, messages);
      if (debug()) ctx.log.debug({ count: messages.length }, 'history appended');
      return { type: 'ok' };
    },

    async clear_history(request, ctx) {
      await stores.history.clear(channelId(request));
      ctx.log.info('history cleared');
      return { type: 'ok' };
    },

    async search_hard(request, ctx) {
      const { results, omitted } = await search(requireString(request, 'query'), topK(request), ctx);
      return omitted > 0 ? { type: 'hard_memories', results, truncated: true, omitted } : { type: 'hard_memories', results };
    },

    async get_context(request, ctx) {
      const wantsSearch = request.query !== undefined && request.query !== null && request.top_k !== 0;
      const wantsHistory = request.channel_id !== undefined && request.channel_id !== null;
      const [found, read] = await Promise.all([
        wantsSearch
          ? settle('hard', ctx, async () => {
              const query = requireString(request, 'query');
              const k = topK(request);
              // Never waits for the index: while it is built, the history is answered and the search is left to search_hard.
              return stores.hard.indexing ? PENDING : search(query, k, ctx);
            })
          : undefined,
        wantsHistory ? settle('history', ctx, () => readHistory(request, ctx)) : undefined,
      ]);
      const reply: ContextPartsReply = { type: 'context_parts' };
      let room = limits.replyBytes;
      if (found === PENDING) reply.hard = { pending: true };
      else if (found && 'error' in found) reply.hard = found;
      else if (found) {
        room -= found.bytes;
        reply.hard = found.omitted > 0 ? { results: found.results, truncated: true, omitted: found.omitted } : { results: found.results };
      }
      if (read && 'error' in read) reply.history = read;
      else if (read) {
        // The two parts share one frame: the search's results first (as ctx ranks them), then the newest messages that still fit.
        const { messages, omitted } = read.bytes <= room ? read : fitNewest(read.messages, read.omitted, room);
        if (omitted > read.omitted)
          ctx.log.warn({ returned: messages.length, omitted, boundBytes: room }, 'history part cut to the room left by the search results');
        reply.history = omitted > 0 ? { messages, truncated: true, omitted } : { messages };
      }
      return reply;
    },

    async store_hard(request, ctx) {
      const messages = parseMessages(request.messages, 'messages');
      checkRecord(messages, limits);
      const tag = optionalString(request, 'tag') ?? null;
      const id = await stores.hard.store(messages, tag);
      if (debug()) ctx.log.debug({ id, count: messages.length }, 'hard memory stored');
      return { type: 'ok', id };
    },

    async forget_hard(request, ctx) {
      const id = request.id;
      if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0) {
        throw new InvalidRequestError(`field "id" must be a non-negative integer (an id from store_hard), got ${JSON.stringify(id ?? null)}`);
      }
      if (!(await stores.hard.forget(id))) throw new InvalidRequestError(`no hard memory has id ${id} (never stored, or already forgotten)`);
      ctx.log.info({ id }, 'hard memory forgotten');
      return { type: 'ok', id };
    },

    status() {
      return { type: 'status', hard_index: stores.hard.indexStatus };
    },

    get_soft() {
      return { type: 'soft_memory', content: stores.soft.get() };
    },

    async set_soft(request, ctx) {
      const content = requireString(request, 'content');
      const bytes = Buffer.byteLength(content, 'utf8');
      if (bytes > limits.softBytes) {
        throw new InvalidRequestError(
          `field "content" is ${bytes} bytes, over mem's bound of ${limits.softBytes} bytes for the soft memory (a quarter of [limits] max_frame_bytes)`,
        );
      }
      await stores.soft.set(content);
      if (debug()) ctx.log.debug({ chars: content.length }, 'soft memory replaced');
      return { type: 'ok' };
    },
  };
}
