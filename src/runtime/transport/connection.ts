/**
 * One server-side connection: read one request frame, route it by `type` to a
 * handler, write the handler's frames, close. A client that asks for a kept
 * connection (`"keep_alive": true`, pool.ts) gets the terminal frame with
 * `"keep_alive": true` instead of the close, and may send its next request.
 *
 * "The client went away" becomes the handler's `AbortSignal`. A client that only
 * half-closes its write side after the request (as `nc -N` does) must still get its
 * answer, so EOF alone is not a cancel: on EOF we write zero bytes, which Linux fails
 * with EPIPE only when the peer has closed entirely, and keep probing while the
 * handler runs (a half-closed client may vanish later).
 */
import type { Socket } from 'node:net';
import { ZinoError, abortError, errorFrame, castToError, type ErrorCode } from '../errors.js';
import type { Frame, OutgoingFrame } from '../frame/codec.js';
import { FrameDecoder } from '../frame/decoder.js';
import type { Logger } from '../log.js';
import { madeUpRequestId } from '../request-id.js';
import type { Deadline, Deadlines } from './deadlines.js';
import type { ReceiveBudget } from './receive-budget.js';
import { KEEP_ALIVE_END, KEEP_ALIVE_MEMBER } from './pool.js';
import { FrameWriter } from './writer.js';

/** How long a refused connection is read and dropped from before it is closed regardless (see linger). */
const LINGER_MS = 2000;

/** What a handler gets besides the request; `Progress` is what it may send before its reply. */
export interface HandlerContext<Progress extends OutgoingFrame = OutgoingFrame> {
  /** Fires when the client goes away or the server gives up on the request at shutdown. */
  readonly signal: AbortSignal;
  /** Child logger carrying `request_id` and `type`. */
  readonly log: Logger;
  /** The caller's `request_id` when it sent one, else a fresh one; pass it on to other services. */
  readonly requestId: string;
  /** Sends a non-terminal frame (a `chunk`, an event); waits while the client is not reading. */
  send<F extends Progress>(frame: F): Promise<void>;
}

/** Answers one request: returns the terminal frame; intermediate frames go through `ctx.send`. */
export type Handler = (request: Frame, ctx: HandlerContext) => Promise<OutgoingFrame> | OutgoingFrame;

/** Handlers by request `type`. */
export type Handlers = Readonly<Record<string, Handler>>;

/** How connections are served. */
export interface ConnectionOptions {
  handlers: Handlers;
  /** Handles a request that has no `type` (the daemon's inbound message). */
  untyped?: Handler | undefined;
  log: Logger;
  maxFrameBytes: number;
  /** Time a client has to send its request after connecting: one {@link Deadlines} for every connection of the server. */
  readDeadlines: Deadlines;
  /** Called once the socket has closed and the handler (if any) has returned. */
  onDone?: ((connection: Connection) => void) | undefined;
  /** Bytes of partly received requests, shared by every connection of the server. */
  receiveBudget?: ReceiveBudget | undefined;
  /** Interval of the liveness probe of a half-closed client, in milliseconds. @default 500 */
  peerProbeMs?: number | undefined;
  /** Agrees to keep a connection open for the next request when the client asks. @default false */
  keepAlive?: boolean | undefined;
  /** True once the server is closing: a request then ends its connection, kept or not. */
  closing?: (() => boolean) | undefined;
}

/** The keep-alive end frame, written as it is to every kept connection a service ends. */
const KEEP_ALIVE_END_FRAME = Object.freeze({ type: KEEP_ALIVE_END });

const EMPTY = Buffer.alloc(0);
const REQUEST_ID = /^[\w.:@/-]{1,128}$/;
/** Codes that mean "the caller asked for something wrong", logged below warn. */
const CALLER_ERRORS: ReadonlySet<ErrorCode> = new Set(['INVALID_REQUEST', 'UNKNOWN_TYPE', 'INVALID_FRAME', 'FRAME_TOO_LARGE']);

type State = 'reading' | 'handling' | 'finished';

/**
 * The {@link HandlerContext} of one request. A class rather than an object literal: V8 makes
 * a literal with getters a dictionary-mode object, and then every read a handler makes of it
 * (`ctx.signal`, `ctx.requestId`, `ctx.send`) is a slow lookup, in every service, for every
 * request (docs/benchmarks.md, round 11).
 */
class RequestContext implements HandlerContext {
  /** Made when first used: most hops of most requests log nothing (pino's child() serialises its bindings). */
  private child: Logger | undefined;

  constructor(
    private readonly controller: AbortController,
    private readonly root: Logger,
    readonly requestId: string,
    private readonly type: string | undefined,
    readonly send: HandlerContext['send'],
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Child logger carrying `request_id` and `type`. */
  get log(): Logger {
    return (this.child ??= this.root.child({ request_id: this.requestId, type: this.type }));
  }
}

/** Serves one accepted socket. */
export class Connection {
  private state: State = 'reading';
  /** Its signal is made when a handler first asks for it (Node makes it lazily): mem's and sys's handlers mostly do not. One per request. */
  private controller = new AbortController();
  private cancelled = false;
  private readonly decoder: FrameDecoder;
  private readonly writer: FrameWriter;
  private readDeadline: Deadline;
  /** The request being answered asked for the connection to be kept, and nothing has made that impossible since. */
  private keepAsked = false;
  /** Waiting for a request after the first on a kept connection: ended with keep_alive_end, not destroyed or refused. */
  private kept = false;
  private probeTimer: NodeJS.Timeout | undefined;
  private clientGone = false;
  /** Bytes received so far (while reading the request). */
  private received = 0;
  private budgetReleased = false;
  private socketClosed = false;
  private handlerRunning = false;
  private isDone = false;
  /** Resolvers of {@link done}, made only when someone waits (at shutdown). */
  private waiters: (() => void)[] | undefined;

  constructor(
    private readonly socket: Socket,
    private readonly options: ConnectionOptions,
  ) {
    this.decoder = new FrameDecoder({ maxFrameBytes: options.maxFrameBytes });
    this.writer = new FrameWriter(socket, options.maxFrameBytes);
    this.readDeadline = options.readDeadlines.add(this.readTimedOut);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('end', () => this.onEnd());
    socket.on('error', (err) => this.options.log.debug({ err }, 'client socket error'));
    socket.on('close', () => this.onClose());
  }

  private readonly readTimedOut = (): void => {
    if (this.kept && this.received === 0) this.endKept();
    else this.rejectRequest(new ZinoError('TIMEOUT', `no request received within ${this.options.readDeadlines.ms} ms`));
  };

  /** Settles when the socket has closed and the handler (if any) has returned. */
  get done(): Promise<void> {
    if (this.isDone) return Promise.resolve();
    return new Promise((resolve) => (this.waiters ??= []).push(resolve));
  }

  /** True while no request has arrived yet; such a connection can be dropped at shutdown. */
  get idle(): boolean {
    return this.state === 'reading';
  }

  /** True while the client has sent nothing at all: the first to go when the server is full. */
  get silent(): boolean {
    return this.state === 'reading' && this.received === 0;
  }

  /** Cancels the request in progress (shutdown past its grace); the handler's error is still sent. */
  abort(reason: ZinoError): void {
    this.cancelled = true;
    this.controller.abort(reason);
  }

  /** Closes the socket at once. */
  destroy(): void {
    this.socket.destroy();
  }

  /**
   * Closes a connection that has no request being answered (at shutdown): a kept one
   * with keep_alive_end (a request that crossed it is not read, and its client knows to
   * send it anew), a new one at once.
   */
  closeIdle(): void {
    if (this.kept) this.endKept();
    else this.destroy();
  }

  /**
   * Closes a connection whose request has not arrived, to make room for a new one:
   * at once when it sent nothing, else with an OVERLOADED error frame (its client
   * may be slow rather than hostile, and should know to try again).
   */
  evict(): void {
    if (this.kept && this.received === 0) {
      this.endKept();
      return;
    }
    if (this.silent) {
      this.destroy();
      return;
    }
    this.rejectRequest(new ZinoError('OVERLOADED', 'the service is full and this request had not arrived in full; closed to make room, try again'));
  }

  private onData(chunk: Buffer): void {
    // One request per connection: whatever follows the request frame is ignored, and the connection is not kept.
    if (this.state !== 'reading') {
      this.keepAsked = false;
      return;
    }
    const budget = this.options.receiveBudget;
    if (budget && !budget.grow(this.received, this.received + chunk.length)) {
      this.rejectRequest(
        new ZinoError('OVERLOADED', `the service is receiving too many large requests at once (${budget.limitBytes} bytes); try again shortly`),
      );
      return;
    }
    this.received += chunk.length;
    let request: Frame | undefined;
    try {
      this.decoder.push(chunk);
      request = this.decoder.read();
    } catch (err) {
      this.rejectRequest(err as ZinoError);
      return;
    }
    if (request === undefined) return;
    this.options.readDeadlines.clear(this.readDeadline);
    this.releaseBudget();
    if (request.keep_alive !== undefined) {
      // The client's ask, not the handler's business; after the request frame, nothing may follow it.
      this.keepAsked = request.keep_alive === true && this.options.keepAlive === true && this.decoder.pendingBytes === 0;
      delete request.keep_alive;
    }
    this.state = 'handling';
    this.handlerRunning = true;
    // handle() turns every failure into an error frame; it does not reject.
    void this.handle(request).finally(() => {
      this.handlerRunning = false;
      this.settle();
    });
  }

  /** Reports the connection done once its socket has closed and no handler runs. */
  private settle(): void {
    if (this.isDone || !this.socketClosed || this.handlerRunning) return;
    this.isDone = true;
    this.options.onDone?.(this);
    for (const resolve of this.waiters ?? []) resolve();
  }

  private onEnd(): void {
    if (this.state === 'reading') {
      this.options.readDeadlines.clear(this.readDeadline);
      try {
        this.decoder.end();
      } catch (err) {
        this.rejectRequest(err as ZinoError);
        return;
      }
      // Connected and left without a request (a liveness check): nothing to answer.
      this.finish();
    } else if (this.state === 'handling') {
      this.keepAsked = false;
      this.probePeer();
      this.probeTimer = setInterval(() => this.probePeer(), this.options.peerProbeMs ?? 500);
      this.probeTimer.unref();
    }
  }

  /** Gives back the receive budget this connection's request was counted for (once). */
  private releaseBudget(): void {
    if (this.budgetReleased) return;
    this.budgetReleased = true;
    this.options.receiveBudget?.release(this.received);
  }

  private onClose(): void {
    this.releaseBudget();
    this.options.readDeadlines.clear(this.readDeadline);
    clearInterval(this.probeTimer);
    // While reading (before a first request, or a kept connection between two) no handler runs: nothing to cancel.
    if (this.state === 'reading') this.state = 'finished';
    else if (this.state !== 'finished') this.markClientGone();
    this.socketClosed = true;
    this.settle();
  }

  private probePeer(): void {
    if (this.socket.destroyed) return;
    this.socket.write(EMPTY, (err) => {
      if (err) this.markClientGone();
    });
  }

  private markClientGone(): void {
    if (this.clientGone) return;
    this.clientGone = true;
    this.cancelled = true;
    this.controller.abort(new ZinoError('CANCELLED', 'the client disconnected'));
    this.socket.destroy();
  }

  /** A protocol error or timeout before a request: one error frame, then close. */
  private rejectRequest(err: ZinoError): void {
    if (this.state !== 'reading') return;
    this.releaseBudget();
    this.options.readDeadlines.clear(this.readDeadline);
    this.state = 'finished';
    this.options.log.info({ code: err.code, reason: err.message }, 'request rejected');
    this.writer
      .write(errorFrame(err))
      .catch(() => undefined)
      .finally(() => this.linger());
  }

  /**
   * Ends a refused connection without losing the error frame: the write side is closed,
   * and what the client still sends is read and dropped (onData ignores it) until it
   * closes too, for at most {@link LINGER_MS}. Closing at once with its bytes unread
   * would reset the connection, and a reset can discard the error frame before the
   * client reads it.
   */
  private linger(): void {
    if (this.socket.destroyed) return;
    const timer = setTimeout(() => this.socket.destroy(), LINGER_MS);
    timer.unref();
    this.socket.once('close', () => clearTimeout(timer));
    this.socket.resume();
    this.socket.end();
  }

  private async handle(request: Frame): Promise<void> {
    const started = performance.now();
    const type = request.type;
    const requestId = typeof request.request_id === 'string' && REQUEST_ID.test(request.request_id) ? request.request_id : madeUpRequestId();
    const { controller } = this;
    const ctx = new RequestContext(controller, this.options.log, requestId, typeof type === 'string' ? type : undefined, (frame) =>
      this.cancelled ? Promise.reject(abortError(controller.signal, 'request')) : this.writer.write(frame),
    );
    let reply: OutgoingFrame;
    try {
      reply = await this.route(request)(request, ctx);
      if (reply === null || typeof reply !== 'object') throw new Error(`handler for ${String(type)} returned no frame`);
    } catch (thrown) {
      reply = errorFrame(thrown);
      this.logFailure(ctx, thrown);
    }
    clearInterval(this.probeTimer);
    const durationMs = Math.round((performance.now() - started) * 10) / 10;
    if (this.clientGone) {
      ctx.log.info({ durationMs }, 'request cancelled: client disconnected');
      this.state = 'finished';
      return;
    }
    const keep = this.keepAsked && !this.options.closing?.();
    try {
      await this.writer.write(reply, keep ? KEEP_ALIVE_MEMBER : undefined);
    } catch (err) {
      if (err instanceof ZinoError && err.code === 'FRAME_TOO_LARGE') {
        ctx.log.error({ err }, 'reply exceeds the frame limit');
        await this.writer.write(errorFrame(new ZinoError('INTERNAL', `the reply exceeds the frame limit (${err.message})`))).catch(() => undefined);
      }
    }
    this.state = 'finished';
    // Debug: every hop of every request would log here; the services log their own outcome at info.
    if (this.options.log.isLevelEnabled('debug')) ctx.log.debug({ durationMs, outcome: reply.type }, 'request done');
    // Kept only when the reply went out with its keep_alive and nothing arrived or closed meanwhile.
    if (keep && this.keepAsked && !this.socket.destroyed && this.socket.writable) this.awaitNext();
    else this.finish();
  }

  /** Makes a kept connection ready for its next request: fresh per-request state, the read bound again. */
  private awaitNext(): void {
    this.keepAsked = false;
    this.kept = true;
    this.received = 0;
    this.budgetReleased = false;
    this.cancelled = false;
    this.controller = new AbortController();
    this.state = 'reading';
    this.readDeadline = this.options.readDeadlines.add(this.readTimedOut);
  }

  /**
   * Ends a kept connection that waits for a request (read bound, shutdown, eviction): the
   * keep_alive_end frame, then as a refused connection ends (linger). A request that crossed
   * it is read and dropped, never handled: its client takes keep_alive_end as its proof.
   */
  private endKept(): void {
    if (this.state !== 'reading') return;
    this.releaseBudget();
    this.options.readDeadlines.clear(this.readDeadline);
    this.state = 'finished';
    this.writer
      .write(KEEP_ALIVE_END_FRAME)
      .catch(() => undefined)
      .finally(() => this.linger());
  }

  private route(request: Frame): Handler {
    const { type } = request;
    const { handlers, untyped } = this.options;
    if (type === undefined) {
      if (untyped) return untyped;
      return () => {
        throw new ZinoError('INVALID_REQUEST', `request has no "type" field (this service handles: ${this.knownTypes()})`);
      };
    }
    if (typeof type !== 'string') {
      return () => {
        throw new ZinoError('INVALID_REQUEST', 'field "type" must be a string');
      };
    }
    const handler = Object.hasOwn(handlers, type) ? handlers[type] : type === 'ping' ? () => ({ type: 'pong' }) : undefined;
    if (handler) return handler;
    return () => {
      throw new ZinoError('UNKNOWN_TYPE', `unknown request type "${type.slice(0, 64)}" (this service handles: ${this.knownTypes()})`);
    };
  }

  private knownTypes(): string {
    return [...new Set(['ping', ...Object.keys(this.options.handlers)])].join(', ');
  }

  private logFailure(ctx: RequestContext, thrown: unknown): void {
    if (this.clientGone) return;
    const { log } = ctx;
    if (thrown instanceof ZinoError) {
      if (CALLER_ERRORS.has(thrown.code)) log.info({ code: thrown.code, reason: thrown.message }, 'request refused');
      else if (thrown.code === 'INTERNAL') log.error({ err: thrown }, 'request failed');
      else log.warn({ code: thrown.code, reason: thrown.message }, 'request failed');
    } else {
      log.error({ err: castToError(thrown) }, 'handler threw an unexpected error');
    }
  }

  /** Ends our side; the socket is destroyed once everything written has been flushed. */
  private finish(): void {
    if (this.socket.destroyed) return;
    this.socket.end(() => this.socket.destroy());
  }
}
