/**
 * Running the prompt: through agr (the agentic loop), or, only when agr cannot be
 * reached, straight through rtr (streaming only when rtr's capabilities allow).
 * Frames come out in the shape the client asked for: `chunk`… `done`, or one
 * `response`, or one `error`.
 */
import type net from 'node:net';
import {
  Endpoint,
  ZinoError,
  clientOptions,
  textOf,
  type ChatMessage,
  type ErrorFrame,
  type HandlerContext,
  type ResolvedConfig,
} from '../../runtime/index.js';
import { AGR } from '../../protocol/agr.js';
import type { AgrEvent, ApprovalRequired, ChunkFrame, DoneFrame, ResponseFrame } from '../../protocol/daemon.js';
import { RTR } from '../../protocol/rtr.js';

/** What to run. */
export interface Dispatch {
  messages: ChatMessage[];
  stream: boolean;
  events: boolean;
  /** The client answers approvals. */
  approvals: boolean;
  channelId?: string | undefined;
  /** The request's sampling (its own, else `[agent]`'s). */
  sampling: { temperature: number; top_p: number };
}

/** A frame for the daemon's client: progress, then the terminal `done`, `response` or `error`. */
export type DispatchFrame = ChunkFrame | AgrEvent | ApprovalRequired | DoneFrame | ResponseFrame | ErrorFrame;

/**
 * Frames for the client; the last one is terminal. `via` says who answered.
 * `agrConnection` is a connection to agr opened while the prompt was assembled.
 */
export async function* dispatch(
  config: Readonly<ResolvedConfig>,
  job: Dispatch,
  ctx: HandlerContext,
  agrConnection?: Promise<net.Socket>,
): AsyncGenerator<DispatchFrame> {
  const agr = new Endpoint(AGR, config.agr.socket, clientOptions(config, 'agr', { signal: ctx.signal }));
  const frames = agr.stream(
    'run',
    {
      messages: job.messages,
      temperature: job.sampling.temperature,
      top_p: job.sampling.top_p,
      max_iterations: config.agr.max_iterations,
      stream: job.stream,
      request_id: ctx.requestId,
      ...(job.events ? { events: true } : {}),
      ...(job.approvals ? { approvals: true } : {}),
      ...(job.channelId === undefined ? {} : { channel_id: job.channelId }),
    },
    { connection: agrConnection, mergeChunks: true },
  );
  try {
    for await (const frame of frames) {
      if (frame.type === 'result') {
        const { content, iterations, usage } = frame;
        yield { type: 'response', content, iterations, ...(usage ? { usage } : {}), via: 'agr', ...cutShort(frame) };
      } else if (frame.type === 'done') {
        // Fields added to the rest, not `{ ...done, via, … }`: a literal that starts with a spread gets a hidden class of its own each time (endpoint.ts, frameOf).
        const { limit_reached: _limit, ...rest } = frame;
        const done: DoneFrame = rest;
        done.via = 'agr';
        if (frame.limit_reached === true) done.degraded = ['max_iterations'];
        yield done;
      } else yield frame;
    }
    return;
  } catch (err) {
    if (!(err instanceof ZinoError) || !unreachable(err)) throw err;
    if (agrConnection) {
      // The connection opened early was dropped before agr took the request (agr restarting or
      // stopping): agr never saw it, so one more try on a fresh connection runs nothing twice.
      yield* dispatch(config, job, ctx);
      return;
    }
    ctx.log.warn({ reason: err.message }, 'agr unreachable; answering through rtr directly');
  }
  yield* throughRtr(config, job, ctx);
}

/** `degraded: ["max_iterations"]` when agr says its loop stopped at the limit. */
function cutShort(frame: { limit_reached?: unknown }): { degraded?: ['max_iterations'] } {
  return frame.limit_reached === true ? { degraded: ['max_iterations'] } : {};
}

/** True when agr never took the request: the connection could not be made, or closed before the request was written. */
function unreachable(err: ZinoError): boolean {
  return (err.code === 'UPSTREAM_UNAVAILABLE' || err.code === 'TIMEOUT') && (err.detail.phase === 'connect' || err.detail.phase === 'send');
}

async function* throughRtr(config: Readonly<ResolvedConfig>, job: Dispatch, ctx: HandlerContext): AsyncGenerator<DispatchFrame> {
  const rtr = new Endpoint(RTR, config.rtr.socket, clientOptions(config, 'rtr', { signal: ctx.signal }));
  let streaming = false;
  if (job.stream) {
    const caps = await rtr.request('capabilities', { request_id: ctx.requestId }, { timeoutMs: config.daemon.dependency_timeout_ms });
    streaming = caps.streaming === true;
  }
  const frames = rtr.stream(
    'infer',
    { messages: job.messages, temperature: job.sampling.temperature, top_p: job.sampling.top_p, stream: streaming, request_id: ctx.requestId },
    { mergeChunks: true },
  );
  for await (const frame of frames) {
    if (frame.type === 'response' && job.stream) {
      // rtr could not stream: keep the client's streaming contract with one chunk.
      const content = textOf(frame.content ?? '');
      if (content !== '') yield { type: 'chunk', delta: content };
      yield { type: 'done', full_text: content, ...(frame.usage ? { usage: frame.usage } : {}), via: 'rtr' };
    } else if (frame.type === 'done' || frame.type === 'response') yield Object.assign(frame, { via: 'rtr' as const });
    else yield frame;
  }
}
