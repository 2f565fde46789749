/**
 * The daemon's main request (the contract's untyped `{"message", "channel_id"?,
 * "stream"?}`): assemble the prompt, run it, store the exchange, answer.
 *
 * - Requests on one channel run one at a time in arrival order.
 * - sys, ctx or mem failing degrades the answer (logged), never fails it.
 * - A client that disconnects cancels everything downstream; nothing is stored for it.
 * - The exchange is stored before the terminal frame is sent, so a client that has
 *   seen `done` can rely on the next request seeing it in the history.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  Endpoint,
  InvalidRequestError,
  ZinoError,
  clientOptions,
  connect,
  optionalBoolean,
  optionalNumber,
  optionalString,
  parseMessages,
  requireString,
  textOf,
  type ErrorFrame,
  type HandlerContext,
  type ResolvedConfig,
  type Unvalidated,
} from '../../runtime/index.js';
import {
  maxMessageBytes,
  messageTooLarge,
  type AgrEvent,
  type ApprovalRequired,
  type AskRequest,
  type ChunkFrame,
  type Degradation,
  type DoneFrame,
  type ResponseFrame,
} from '../../protocol/daemon.js';
import { MEM, checkChannelId } from '../../protocol/mem.js';
import type { ChannelLock } from './channel-lock.js';
import { dispatch } from './dispatch.js';
import { assemblePrompt } from './prompt.js';
import type { PromptWatch } from './prompt-watch.js';

/** Answers one ask request. */
export async function ask(
  config: Readonly<ResolvedConfig>,
  lock: ChannelLock,
  req: Unvalidated<AskRequest>,
  ctx: HandlerContext<ChunkFrame | AgrEvent | ApprovalRequired>,
  watch?: PromptWatch,
): Promise<DoneFrame | ResponseFrame | ErrorFrame> {
  const message = requireString(req, 'message', { allowEmpty: false });
  checkMessageSize(config, message);
  const given = optionalString(req, 'channel_id');
  const channelId = given === '' ? undefined : given;
  if (channelId !== undefined) checkChannelId(channelId);
  const streamed = optionalBoolean(req, 'stream') ?? false;
  const events = optionalBoolean(req, 'events') ?? false;
  const approvals = optionalBoolean(req, 'approvals') ?? false;
  const history = req.history === undefined || req.history === null ? undefined : parseMessages(req.history, 'history');
  const sampling = {
    temperature: optionalNumber(req, 'temperature', { min: 0, max: 2 }) ?? config.agent.temperature,
    top_p: optionalNumber(req, 'top_p', { min: 0, max: 1 }) ?? config.agent.top_p,
  };

  const started = performance.now();
  const release = channelId === undefined ? undefined : await lock.acquire(channelId, ctx.signal);
  // Connect to agr while the prompt is being assembled: one round trip less before the first token.
  // Idle until the prompt is ready: connect() leaves a handler on it, so an error meanwhile is not unhandled (stream() reports it).
  // A kept connection to agr is taken when one waits (pool.ts).
  const agrConnection = connect(config.agr.socket, clientOptions(config, 'agr', { signal: ctx.signal }));
  // Marks a failure as handled until dispatch awaits it (then it picks the rtr fallback).
  agrConnection.catch(() => undefined);
  let handedOver = false;
  try {
    const prompt = await assemblePrompt(config, message, { channelId, history }, ctx, watch);
    let text = '';
    let firstChunkMs: number | undefined;
    let terminal: DoneFrame | ResponseFrame | ErrorFrame | undefined;
    handedOver = true;
    for await (const frame of dispatch(config, { messages: prompt.messages, stream: streamed, events, sampling, approvals, channelId }, ctx, agrConnection)) {
      if (frame.type === 'chunk') {
        firstChunkMs ??= performance.now() - started;
        // Checked: agr's frames are another process's data.
        const delta = typeof frame.delta === 'string' ? frame.delta : '';
        text += delta;
        await ctx.send({ type: 'chunk', delta });
      } else if (frame.type === 'done' || frame.type === 'response' || frame.type === 'error') {
        terminal = frame;
        break;
      } else if (frame.type === 'approval_required') {
        // Only a client that asked for approvals gets them (agr was told so too, and sends none otherwise).
        if (approvals) await ctx.send(frame);
      } else if (events) {
        await ctx.send(frame);
      }
    }
    if (!terminal) throw new ZinoError('CONNECTION_CLOSED', 'no answer came back');
    if (terminal.type === 'error') return terminal;
    const answer = terminal.type === 'done' ? textOf(terminal.full_text ?? text) : textOf(terminal.content ?? '');
    // What the answer lacks, said to the client (an extra field) as well as logged.
    const degraded: Degradation[] = [...(terminal.degraded ?? []), ...(terminal.via === 'rtr' ? ['tools' as const] : []), ...prompt.missing];
    // Set on the frame (dispatch's own object), not `{ ...terminal, degraded }`: see frameOf in endpoint.ts.
    if (degraded.length > 0) terminal.degraded = degraded;
    if (channelId !== undefined) await store(config, channelId, message, answer, ctx);
    ctx.log.info(
      {
        channel: channelId,
        via: terminal.via,
        iterations: terminal.iterations,
        chars: answer.length,
        ttftMs: round(firstChunkMs),
        durationMs: round(performance.now() - started),
        degraded,
      },
      'answered',
    );
    return terminal;
  } finally {
    // Both outcomes are handled; a failed connect has nothing to close.
    if (!handedOver)
      void agrConnection.then(
        (socket) => socket.destroy(),
        () => undefined,
      );
    release?.();
  }
}

/**
 * Refuses a message over {@link maxMessageBytes}: it would be sent whole to the LLM
 * and stored whole in the history, where it would crowd everything else out.
 */
function checkMessageSize(config: Readonly<ResolvedConfig>, message: string): void {
  const bound = maxMessageBytes(config);
  // A UTF-16 code unit is at most 3 UTF-8 bytes: short messages need no count.
  if (message.length * 3 <= bound) return;
  const bytes = Buffer.byteLength(message, 'utf8');
  if (bytes > bound) throw new InvalidRequestError(messageTooLarge(bytes, bound));
}

/** Waits between attempts to store while mem is unreachable: 100, 200, 400, then 800 ms each. */
const STORE_RETRY_MS = [100, 200, 400, 800];

/**
 * Appends the exchange to the channel's history, before the terminal frame. While
 * mem cannot be reached (it is restarting) the store is retried, but the whole
 * store, attempts and waits included, is bounded by `[daemon] dependency_timeout_ms`
 * (the bound on every mem call): past it, or on any other failure, the miss is
 * logged at warn (`exchange not stored: mem failed`) and the answer still goes out.
 */
async function store(config: Readonly<ResolvedConfig>, channelId: string, message: string, answer: string, ctx: HandlerContext): Promise<void> {
  const body = {
    channel_id: channelId,
    messages: [
      { role: 'user', content: message },
      { role: 'assistant', content: answer },
    ],
    request_id: ctx.requestId,
  };
  const mem = new Endpoint(MEM, config.mem.socket, clientOptions(config, 'mem', { signal: ctx.signal }));
  const deadline = performance.now() + config.daemon.dependency_timeout_ms;
  for (let attempt = 0; ; attempt++) {
    ctx.signal.throwIfAborted();
    const left = Math.max(1, Math.round(deadline - performance.now()));
    try {
      await mem.request('append_history', body, { connectTimeoutMs: Math.min(config.limits.connect_timeout_ms, left), timeoutMs: left });
      return;
    } catch (err) {
      ctx.signal.throwIfAborted();
      const wait = Math.min(STORE_RETRY_MS[Math.min(attempt, STORE_RETRY_MS.length - 1)] as number, deadline - performance.now());
      if (wait > 0 && err instanceof ZinoError && err.code === 'UPSTREAM_UNAVAILABLE') {
        await sleep(wait, undefined, { signal: ctx.signal });
        if (performance.now() < deadline) continue;
      }
      ctx.log.warn(
        { channel: channelId, reason: (err as Error).message, attempts: attempt + 1, boundMs: config.daemon.dependency_timeout_ms },
        'exchange not stored: mem failed',
      );
      return;
    }
  }
}

function round(ms: number | undefined): number | undefined {
  return ms === undefined ? undefined : Math.round(ms * 10) / 10;
}
