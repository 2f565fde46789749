/**
 * Running the prompt: through agr (the agentic loop), or, only when agr cannot be
 * reached, straight through rtr (streaming only when rtr's capabilities allow).
 * Frames come out in the shape the client asked for: `chunk`… `done`, or one
 * `response`, or one `error`.
 */
import type net from 'node:net';
import { ZinoError, request, stream, textOf, type ChatMessage, type Frame, type HandlerContext, type ResolvedConfig } from '../../runtime/index.js';

/** What to run. */
export interface Dispatch {
  messages: ChatMessage[];
  stream: boolean;
  events: boolean;
}

/**
 * Frames for the client; the last one is terminal. `via` says who answered.
 * `agrConnection` is a connection to agr opened while the prompt was assembled.
 */
export async function* dispatch(config: Readonly<ResolvedConfig>, job: Dispatch, ctx: HandlerContext, agrConnection?: Promise<net.Socket>): AsyncGenerator<Frame & { via?: 'agr' | 'rtr' }> {
  const sampling = { temperature: config.agent.temperature, top_p: config.agent.top_p };
  const base = { signal: ctx.signal, connectTimeoutMs: config.limits.connect_timeout_ms, maxFrameBytes: config.limits.max_frame_bytes };
  const frames = stream(
    config.agr.socket,
    { type: 'run', messages: job.messages, ...sampling, max_iterations: config.agr.max_iterations, stream: job.stream, request_id: ctx.requestId, ...(job.events ? { events: true } : {}) },
    { ...base, name: 'agr', connection: agrConnection, mergeChunks: true },
  );
  try {
    for await (const frame of frames) {
      if (frame.type === 'result') yield { ...frame, type: 'response', content: frame.content, via: 'agr' };
      else if (frame.type === 'done') yield { ...frame, via: 'agr' };
      else yield frame;
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

/** True when the connection to agr could not even be made. */
function unreachable(err: ZinoError): boolean {
  return err.code === 'UPSTREAM_UNAVAILABLE' || (err.code === 'TIMEOUT' && err.message.startsWith('connecting to'));
}

async function* throughRtr(config: Readonly<ResolvedConfig>, job: Dispatch, ctx: HandlerContext): AsyncGenerator<Frame & { via?: 'agr' | 'rtr' }> {
  const base = { signal: ctx.signal, connectTimeoutMs: config.limits.connect_timeout_ms, name: 'rtr', maxFrameBytes: config.limits.max_frame_bytes, mergeChunks: true };
  let streaming = false;
  if (job.stream) {
    const caps = await request(config.rtr.socket, { type: 'capabilities', request_id: ctx.requestId }, { ...base, timeoutMs: config.daemon.dependency_timeout_ms });
    streaming = caps.streaming === true;
  }
  const frames = stream(
    config.rtr.socket,
    { type: 'infer', messages: job.messages, temperature: config.agent.temperature, top_p: config.agent.top_p, stream: streaming, request_id: ctx.requestId },
    base,
  );
  for await (const frame of frames) {
    if (frame.type === 'response' && job.stream) {
      // rtr could not stream: keep the client's streaming contract with one chunk.
      const content = textOf(frame.content ?? '');
      if (content !== '') yield { type: 'chunk', delta: content };
      yield { type: 'done', full_text: content, ...(frame.usage ? { usage: frame.usage } : {}), via: 'rtr' };
    } else if (frame.type === 'done' || frame.type === 'response') yield { ...frame, via: 'rtr' };
    else yield frame;
  }
}
