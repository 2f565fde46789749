/**
 * What ctx asks of mem for one `build`: the hard memories for the user message
 * (`search_hard`) and the channel's last messages (`get_history`). All of it is
 * bounded by 60% of `[daemon] dependency_timeout_ms` (the bound the daemon puts on
 * its call to ctx), so that when mem is slow ctx still answers in time with the skill
 * examples, and cancelled with the caller's request. A part that fails in any way
 * (mem down, an error frame, a timeout, a malformed reply) is logged at warn with its
 * reason and left out (`undefined`): the context is then built without it, never an
 * error.
 *
 * When both parts are wanted, mem is asked once, with its opt-in `get_context`
 * (one connection instead of two):
 * - each part comes back as its own reply or its own error, so one failing leaves the
 *   other in, as with two calls;
 * - while mem's index is still being built it answers the history at once and says
 *   the search is `pending`: ctx then asks `search_hard` alone, in the time left;
 * - a mem that does not know the message (UNKNOWN_TYPE, or an error frame without a
 *   ZINO code: one written from the contract alone; or, before it has ever answered
 *   `get_context`, a connection it closes without a reply or a reply that never comes)
 *   is asked with the two contract messages instead (at once, in the time left, unless
 *   it was a timeout), and ctx remembers that for {@link REPROBE_MS} (or until a reload);
 * - any other error frame (mem shutting down, overloaded, …): this request asks
 *   with the two contract messages, each failing or not on its own;
 * - a failed exchange (unreachable, timeout, cancelled, malformed reply) leaves both
 *   parts out: two calls would have met the same mem.
 */
import {
  Endpoint,
  RemoteError,
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

/** Share of the daemon's bound that ctx gives mem, leaving time to answer without it. */
const MEM_SHARE = 0.6;

/** How long ctx keeps asking a mem without `get_context` with the two contract messages before it tries again. */
export const REPROBE_MS = 5 * 60_000;

/** What to ask: the search when `query` is given, the history when `channelId` is. */
export interface ContextAsk {
  query?: string | undefined;
  topK: number;
  channelId?: string | undefined;
  limit: number;
}

/** The parts mem supplied; `undefined` for a part it could not supply, `[]` for one not asked for. */
export interface FetchedParts {
  hard: ScoredMemory[] | undefined;
  history: ChatMessage[] | undefined;
}

/** Messages that look like `{role, content}` with strings; anything else is dropped. */
function messagesOf(value: unknown): ChatMessage[] | undefined {
  return Array.isArray(value) ? chatMessages(value) : undefined;
}

/** Search results checked field by field: a reply is data from another process, whatever its declared type. */
function memoriesOf(value: unknown, what: string): ScoredMemory[] {
  if (!Array.isArray(value)) throw new ZinoError('UPSTREAM_ERROR', `mem answered ${what} without a list of results`);
  const out: ScoredMemory[] = [];
  for (const r of value as unknown[]) {
    const { messages, score } = (r ?? {}) as Record<string, unknown>;
    const list = messagesOf(messages);
    if (list) out.push({ messages: list, score: typeof score === 'number' ? score : 0 });
  }
  return out;
}

function historyOf(value: unknown, what: string): ChatMessage[] {
  const messages = messagesOf(value);
  if (!messages) throw new ZinoError('UPSTREAM_ERROR', `mem answered ${what} without a list of messages`);
  return messages;
}

function warn(ctx: HandlerContext, part: 'hard_memories' | 'history', err: unknown): undefined {
  if (isAbortError(err) && ctx.signal.aborted) return undefined;
  const code = err instanceof ZinoError ? err.code : 'INTERNAL';
  ctx.log.warn({ part, code, reason: castToError(err).message }, 'context part left out: mem failed');
  return undefined;
}

/** True when an error frame says mem does not know the message (or comes from a mem without ZINO's codes). */
function unknownMessage(err: RemoteError): boolean {
  return err.code === 'UNKNOWN_TYPE' || err.frame.code === undefined;
}

/** One part of a `context_parts` reply: an object, possibly carrying an error frame. */
function partOf(value: unknown): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ZinoError('UPSTREAM_ERROR', 'mem answered get_context without this part');
  const part = value as Record<string, unknown>;
  if (part.error !== undefined) throw new RemoteError(part.error !== null && typeof part.error === 'object' ? part.error : {});
  return part;
}

/** Asks mem for the parts of a context; one per ctx process (it remembers whether mem knows `get_context`). */
export class MemFetcher {
  /** `performance.now()` until which mem is asked with the two contract messages. */
  private contractOnlyUntil = -Infinity;
  /** mem has answered `get_context` since the last reset: a failure now is mem's, not the message's. */
  private knows = false;

  constructor(private readonly config: Readonly<ResolvedConfig>) {}

  /** Forgets what was learnt about mem (on reload): the next build tries `get_context` again. */
  reset(): void {
    this.contractOnlyUntil = -Infinity;
    this.knows = false;
  }

  /** The parts of `ask`; see the module comment. */
  async fetch(ask: ContextAsk, ctx: HandlerContext): Promise<FetchedParts> {
    const deadline = performance.now() + Math.max(1, Math.floor(this.config.daemon.dependency_timeout_ms * MEM_SHARE));
    const { query, channelId } = ask;
    if (query === undefined || channelId === undefined || performance.now() < this.contractOnlyUntil) return this.separately(ask, deadline, ctx);
    let reply;
    try {
      reply = await this.mem(ctx, deadline).request('get_context', {
        query,
        top_k: ask.topK,
        channel_id: channelId,
        limit: ask.limit,
        request_id: ctx.requestId,
      });
    } catch (err) {
      if (err instanceof RemoteError) {
        if (unknownMessage(err)) {
          this.contractOnlyUntil = performance.now() + REPROBE_MS;
          ctx.log.info({ code: err.code, reason: err.message, reprobeMs: REPROBE_MS }, 'mem does not know get_context: asking search_hard and get_history');
        } else {
          ctx.log.info({ code: err.code, reason: err.message }, 'mem refused get_context: asking search_hard and get_history');
        }
        return this.separately(ask, deadline, ctx);
      }
      if (!ctx.signal.aborted && err instanceof ZinoError && !this.knows && (err.code === 'CONNECTION_CLOSED' || err.code === 'TIMEOUT')) {
        // A mem that has never answered get_context and closes on it, or never answers it, is one that does not know it
        // (the contract says nothing of unknown messages): the two contract messages from now on, in the time left.
        this.contractOnlyUntil = performance.now() + REPROBE_MS;
        ctx.log.info({ code: err.code, reason: err.message, reprobeMs: REPROBE_MS }, 'mem does not know get_context: asking search_hard and get_history');
        if (err.code === 'CONNECTION_CLOSED') return this.separately(ask, deadline, ctx);
      }
      return { hard: warn(ctx, 'hard_memories', err), history: warn(ctx, 'history', err) };
    }
    this.knows = true;
    const history = ((): ChatMessage[] | undefined => {
      try {
        return historyOf(partOf(reply.history).messages, 'get_context');
      } catch (err) {
        return warn(ctx, 'history', err);
      }
    })();
    let hard: ScoredMemory[] | undefined;
    try {
      const part = partOf(reply.hard);
      hard = part.pending === true ? await this.search(query, ask.topK, deadline, ctx) : memoriesOf(part.results, 'get_context');
    } catch (err) {
      hard = warn(ctx, 'hard_memories', err);
    }
    return { hard, history };
  }

  /** The two contract messages, at once (only those asked for). */
  private async separately(ask: ContextAsk, deadline: number, ctx: HandlerContext): Promise<FetchedParts> {
    const [hard, history] = await Promise.all([
      ask.query === undefined ? [] : this.search(ask.query, ask.topK, deadline, ctx).catch((err: unknown) => warn(ctx, 'hard_memories', err)),
      ask.channelId === undefined ? [] : this.history(ask.channelId, ask.limit, deadline, ctx).catch((err: unknown) => warn(ctx, 'history', err)),
    ]);
    return { hard, history };
  }

  private async search(query: string, topK: number, deadline: number, ctx: HandlerContext): Promise<ScoredMemory[]> {
    const reply = await this.mem(ctx, deadline).request('search_hard', { query, top_k: topK, request_id: ctx.requestId });
    return memoriesOf(reply.results, 'search_hard');
  }

  private async history(channelId: string, limit: number, deadline: number, ctx: HandlerContext): Promise<ChatMessage[]> {
    const reply = await this.mem(ctx, deadline).request('get_history', { channel_id: channelId, limit, request_id: ctx.requestId });
    return historyOf(reply.messages, 'get_history');
  }

  /** mem, for a call that must end by `deadline` (a `performance.now()` time). */
  private mem(ctx: HandlerContext, deadline: number): Endpoint<typeof MEM> {
    const timeoutMs = Math.max(1, Math.ceil(deadline - performance.now()));
    return new Endpoint(MEM, this.config.mem.socket, clientOptions(this.config, 'mem', { timeoutMs, signal: ctx.signal }));
  }
}
