/**
 * Where an answer comes from: the daemon (`zino`, `zino-verbose`), or rtr directly
 * (`zino-direct`). Both are asked to stream, whatever the HTTP client asked for: the
 * front end collects a non-streamed answer itself, so tool activity (verbose) and
 * text arrive in the order they happened either way. Breaking out of the iteration
 * or aborting `signal` closes the connection, which cancels the request downstream.
 */
import { Endpoint, RemoteError, clientOptions, type ErrorFrame, type ResolvedConfig } from '../../runtime/index.js';
import type { AgrEvent } from '../../protocol/agr.js';
import { DAEMON, type AskRequest } from '../../protocol/daemon.js';
import { RTR, type ChunkFrame, type DoneFrame, type ResponseFrame, type Usage } from '../../protocol/rtr.js';
import type { ChatJob } from './chat-request.js';

/** One step of an answer. */
export type AnswerStep = { kind: 'text'; delta: string } | { kind: 'event'; event: AgrEvent } | { kind: 'end'; usage?: Usage | undefined };

/** Identifies one request downstream. */
export interface SourceContext {
  signal: AbortSignal;
  requestId: string;
}

/** The steps of the answer to `job`; a ZINO error is thrown (a `RemoteError` when a service answered one). */
export function answerSteps(config: Readonly<ResolvedConfig>, job: ChatJob, ctx: SourceContext): AsyncGenerator<AnswerStep, void, undefined> {
  return job.model === 'zino-direct' ? fromRtr(config, job, ctx) : fromDaemon(config, job, ctx);
}

async function* fromDaemon(config: Readonly<ResolvedConfig>, job: ChatJob, ctx: SourceContext): AsyncGenerator<AnswerStep, void, undefined> {
  const daemon = new Endpoint(DAEMON, config.daemon.socket, clientOptions(config, 'daemon', { signal: ctx.signal }));
  const body: AskRequest = {
    message: job.prompt,
    stream: true,
    request_id: ctx.requestId,
    ...(job.verbose ? { events: true } : {}),
    ...(job.history !== undefined ? { history: job.history } : {}),
    ...(job.channelId !== undefined ? { channel_id: job.channelId } : {}),
    ...(job.temperature !== undefined ? { temperature: job.temperature } : {}),
    ...(job.topP !== undefined ? { top_p: job.topP } : {}),
  };
  for await (const frame of daemon.stream('ask', body, { mergeChunks: true })) {
    if (isReplyFrame(frame)) {
      // A `response`: a daemon that could not stream (it always can; a contract daemon might not).
      if (yield* replySteps(frame)) return;
      continue;
    }
    switch (frame.type) {
      case 'iteration':
      case 'tool_call':
      case 'tool_result':
      case 'usage':
        yield { kind: 'event', event: frame };
        break;
      case 'approval_required':
        // Never sent: this front end does not opt in to approvals, so a host run that needs a person gets `[approval] unattended`.
        break;
    }
  }
}

async function* fromRtr(config: Readonly<ResolvedConfig>, job: ChatJob, ctx: SourceContext): AsyncGenerator<AnswerStep, void, undefined> {
  const rtr = new Endpoint(RTR, config.rtr.socket, clientOptions(config, 'rtr', { signal: ctx.signal }));
  const body = {
    messages: job.messages,
    temperature: job.temperature ?? config.agent.temperature,
    top_p: job.topP ?? config.agent.top_p,
    stream: true,
    request_id: ctx.requestId,
    ...(job.maxTokens !== undefined ? { max_tokens: job.maxTokens } : {}),
  };
  // A `response` when `[rtr] streaming = false`: the whole reply at once.
  for await (const frame of rtr.stream('infer', body, { mergeChunks: true })) if (yield* replySteps(frame)) return;
}

/** The frames both sources answer with: text, the end, or an error. */
type ReplyFrame = ChunkFrame | DoneFrame | ResponseFrame | ErrorFrame;

function isReplyFrame<F extends { type: string }>(frame: F | ReplyFrame): frame is ReplyFrame {
  return frame.type === 'chunk' || frame.type === 'done' || frame.type === 'response' || frame.type === 'error';
}

/** Yields the steps of one reply frame (an error frame is thrown); returns true once the answer has ended. */
function* replySteps(frame: ReplyFrame): Generator<AnswerStep, boolean, undefined> {
  switch (frame.type) {
    case 'chunk':
      yield { kind: 'text', delta: typeof frame.delta === 'string' ? frame.delta : '' };
      return false;
    case 'done':
      yield { kind: 'end', usage: usageOf(frame.usage) };
      return true;
    case 'response':
      yield { kind: 'text', delta: typeof frame.content === 'string' ? frame.content : '' };
      yield { kind: 'end', usage: usageOf(frame.usage) };
      return true;
    case 'error':
      throw new RemoteError(frame);
  }
}

/** Usage as another process sent it: used only when both counts are numbers. */
function usageOf(value: unknown): Usage | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const { prompt_tokens: prompt, completion_tokens: completion } = value as Record<string, unknown>;
  return typeof prompt === 'number' && typeof completion === 'number' ? { prompt_tokens: prompt, completion_tokens: completion } : undefined;
}
