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
  ZinoError,
  clientOptions,
  connect,
  optionalBoolean,
  optionalString,
  requireString,
  textOf,
  type ErrorFrame,
  type HandlerContext,
  type ResolvedConfig,
  type Unvalidated,
} from '../../runtime/index.js';
import type { AgrEvent, AskRequest, ChunkFrame, DoneFrame, ResponseFrame } from '../../protocol/daemon.js';
import { MEM, checkChannelId } from '../../protocol/mem.js';
import type { ChannelLock } from './channel-lock.js';
import { dispatch } from './dispatch.js';
import { assemblePrompt } from './prompt.js';

/** Answers one ask request. */
export async function ask(
  config: Readonly<ResolvedConfig>,
  lock: ChannelLock,
  req: Unvalidated<AskRequest>,
  ctx: HandlerContext<ChunkFrame | AgrEvent>,
): Promise<DoneFrame | ResponseFrame | ErrorFrame> {
  const message = requireString(req, 'message', { allowEmpty: false });
  const given = optionalString(req, 'channel_id');
  const channelId = given === '' ? undefined : given;
  if (channelId !== undefined) checkChannelId(channelId);
  const streamed = optionalBoolean(req, 'stream') ?? false;
  const events = optionalBoolean(req, 'events') ?? false;

  const started = performance.now();
  const release = channelId === undefined ? undefined : await lock.acquire(channelId, ctx.signal);
  // Connect to agr while the prompt is being assembled: one round trip less before the first token.
  const agrConnection = connect(config.agr.socket, clientOptions(config, 'agr', { signal: ctx.signal })).then((socket) => {
    // Idle until the prompt is ready: an error meanwhile must not go unhandled (stream() reports it).
    socket.on('error', () => undefined);
    return socket;
  });
  // Marks a failure as handled until dispatch awaits it (then it picks the rtr fallback).
  agrConnection.catch(() => undefined);
  let handedOver = false;
  try {
    const prompt = await assemblePrompt(config, message, channelId, ctx);
    let text = '';
    let firstChunkMs: number | undefined;
    let terminal: DoneFrame | ResponseFrame | ErrorFrame | undefined;
    handedOver = true;
    for await (const frame of dispatch(config, { messages: prompt.messages, stream: streamed, events }, ctx, agrConnection)) {
      if (frame.type === 'chunk') {
        firstChunkMs ??= performance.now() - started;
        // Checked: agr's frames are another process's data.
        const delta = typeof frame.delta === 'string' ? frame.delta : '';
        text += delta;
        await ctx.send({ type: 'chunk', delta });
      } else if (frame.type === 'done' || frame.type === 'response' || frame.type === 'error') {
        terminal = frame;
        break;
      } else if (events) {
        await ctx.send(frame);
      }
    }
    if (!terminal) throw new ZinoError('CONNECTION_CLOSED', 'no answer came back');
    if (terminal.type === 'error') return terminal;
    const answer = terminal.type === 'done' ? textOf(terminal.full_text ?? text) : textOf(terminal.content ?? '');
    if (channelId !== undefined) await store(config, channelId, message, answer, ctx);
    ctx.log.info(
      {
        channel: channelId,
        via: terminal.via,
        iterations: terminal.iterations,
        chars: answer.length,
        ttftMs: round(firstChunkMs),
        durationMs: round(performance.now() - started),
        degraded: prompt.missing,
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

/** Waits before retry n of a store while mem is unreachable: 100, 200, 400, 800 ms (1.5 s in all). */
const STORE_RETRY_MS = [100, 200, 400, 800];

/**
 * Appends the exchange to the channel's history. While mem cannot be reached (it
 * is restarting) the store is retried for about 1.5 s; after that, or on any other
 * failure, it is logged, not raised: the answer still goes out.
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
  const mem = new Endpoint(MEM, config.mem.socket, clientOptions(config, 'mem', { signal: ctx.signal, timeoutMs: config.daemon.dependency_timeout_ms }));
  for (let attempt = 0; ; attempt++) {
    ctx.signal.throwIfAborted();
    try {
      await mem.request('append_history', body);
      return;
    } catch (err) {
      ctx.signal.throwIfAborted();
      const wait = STORE_RETRY_MS[attempt];
      if (wait !== undefined && err instanceof ZinoError && err.code === 'UPSTREAM_UNAVAILABLE') {
        await sleep(wait, undefined, { signal: ctx.signal });
        continue;
      }
      ctx.log.warn({ channel: channelId, reason: (err as Error).message, attempts: attempt + 1 }, 'exchange not stored: mem failed');
      return;
    }
  }
}

function round(ms: number | undefined): number | undefined {
  return ms === undefined ? undefined : Math.round(ms * 10) / 10;
}
