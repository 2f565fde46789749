/**
 * ctx's two calls to mem: `search_hard` for the user message and `get_history`
 * for the channel. Each is bounded by 60% of `[daemon] dependency_timeout_ms` (the
 * bound the daemon puts on its call to ctx), so that when mem is slow ctx still
 * answers in time with the skill examples, and cancelled with the caller's request. A failure of any kind (mem down, an error frame, a timeout, a malformed
 * reply) is logged at warn with its reason and yields `undefined`: the context is
 * then built without that part, never an error.
 */
import {
  Endpoint,
  ZinoError,
  castToError,
  chatMessages,
  clientOptions,
  isAbortError,
  type ChatMessage,
  type HandlerContext,
  type ResolvedConfig,
} from '../../runtime/index.js';
import { MEM } from '../../protocol/mem.js';
import type { ScoredMemory } from './budget.js';

/** Messages that look like `{role, content}` with strings; anything else is dropped. */
function messagesOf(value: unknown): ChatMessage[] | undefined {
  return Array.isArray(value) ? chatMessages(value) : undefined;
}

/** Share of the daemon's bound that ctx gives mem, leaving time to answer without it. */
const MEM_SHARE = 0.6;

function mem(config: Readonly<ResolvedConfig>, ctx: HandlerContext): Endpoint<typeof MEM> {
  const timeoutMs = Math.max(1, Math.floor(config.daemon.dependency_timeout_ms * MEM_SHARE));
  return new Endpoint(MEM, config.mem.socket, clientOptions(config, 'mem', { timeoutMs, signal: ctx.signal }));
}

function warn(ctx: HandlerContext, part: string, err: unknown): undefined {
  if (isAbortError(err) && ctx.signal.aborted) return undefined;
  const code = err instanceof ZinoError ? err.code : 'INTERNAL';
  ctx.log.warn({ part, code, reason: castToError(err).message }, 'context part left out: mem failed');
  return undefined;
}

/** The hard memories for `query`, best first; `undefined` when mem could not supply them. */
export async function fetchHardMemories(
  config: Readonly<ResolvedConfig>,
  query: string,
  topK: number,
  ctx: HandlerContext,
): Promise<ScoredMemory[] | undefined> {
  try {
    const reply = await mem(config, ctx).request('search_hard', { query, top_k: topK, request_id: ctx.requestId });
    if (!Array.isArray(reply.results)) throw new ZinoError('UPSTREAM_ERROR', 'mem answered search_hard without a list of results');
    const out: ScoredMemory[] = [];
    // Checked field by field: a reply is data from another process, whatever its declared type.
    for (const r of reply.results as unknown[]) {
      const { messages, score } = (r ?? {}) as Record<string, unknown>;
      const list = messagesOf(messages);
      if (list) out.push({ messages: list, score: typeof score === 'number' ? score : 0 });
    }
    return out;
  } catch (err) {
    return warn(ctx, 'hard_memories', err);
  }
}

/** The channel's last `limit` messages (all when 0); `undefined` when mem could not supply them. */
export async function fetchHistory(
  config: Readonly<ResolvedConfig>,
  channelId: string,
  limit: number,
  ctx: HandlerContext,
): Promise<ChatMessage[] | undefined> {
  try {
    const reply = await mem(config, ctx).request('get_history', { channel_id: channelId, limit, request_id: ctx.requestId });
    const messages = messagesOf(reply.messages);
    if (!messages) throw new ZinoError('UPSTREAM_ERROR', 'mem answered get_history without a list of messages');
    return messages;
  } catch (err) {
    return warn(ctx, 'history', err);
  }
}
