/**
 * The client side of "one request per connection": connect, write one frame,
 * read frames until a terminal one, close.
 *
 * Closing the connection is how cancellation travels between services: aborting
 * the signal, or breaking out of {@link stream}'s iterator, destroys the socket,
 * and the server on the other end sees its caller go away.
 */
import net from 'node:net';
import type { DuplexOptions } from 'node:stream';
import { RemoteError, ZinoError, abortError } from '../errors.js';
import { DEFAULT_MAX_FRAME_BYTES, type Frame } from '../frame/codec.js';
import { clearDeadline, startDeadline } from './deadlines.js';
import { readFrame, readFrames } from './frame-reader.js';
import { IdlePool, KEEP_ALIVE_END, KEEP_ALIVE_MEMBER } from './pool.js';
import { FrameWriter } from './writer.js';

/** Failures of a kept connection that show the service did not read the request (Exchange.notRead). */
const UNREAD_ERRNOS: ReadonlySet<string> = new Set(['EPIPE', 'ECONNRESET']);

/** Frame types that end a streamed exchange. */
export const TERMINAL_TYPES: ReadonlySet<string> = new Set(['done', 'result', 'response', 'error']);

/** Options of every client call. */
export interface ClientOptions {
  /** Aborting closes the connection (cancelling the request on the server). */
  signal?: AbortSignal | undefined;
  /** Bound on connecting, in milliseconds. @default 2000 */
  connectTimeoutMs?: number | undefined;
  /** Bound on the whole exchange, in milliseconds. @default none */
  timeoutMs?: number | undefined;
  /** Largest frame accepted or sent, in bytes. @default 16 MiB */
  maxFrameBytes?: number | undefined;
  /** Name used in error messages, e.g. "rtr". @default the socket path */
  name?: string | undefined;
  /**
   * Asks the service to keep the connection open for the next request, and keeps it
   * this long (milliseconds) when it agrees (pool.ts; `[limits] keep_alive_ms`).
   * @default 0 (one request per connection)
   */
  keepAliveMs?: number | undefined;
}

/** Options of {@link stream}. */
export interface StreamOptions extends ClientOptions {
  /** Decides which frame ends the exchange. @default type in {@link TERMINAL_TYPES} */
  isTerminal?: ((frame: Frame) => boolean) | undefined;
  /**
   * A connection opened earlier with {@link connect} (while the request was still being
   * prepared) to use instead of connecting now. The stream owns it from then on.
   */
  connection?: Promise<net.Socket> | undefined;
  /** Join `chunk` frames that are already waiting into one (see readFrames). @default false */
  mergeChunks?: boolean | undefined;
}

/**
 * The options of a connection to `path`: the path, and the four fields `net.Socket` sets on its
 * own copy of them (the values it would give them anyway). On Node 20, Socket copies its
 * options with a spread and then sets those four, and on that V8 an object made so gets a
 * hidden class of its own every time: every read of the copy in Node's stream set-up missed
 * its cache, about thirty per connection. With the four already there, the copy keeps one
 * hidden class (docs/benchmarks.md, round 11).
 */
export function socketOptions(path: string): net.IpcNetConnectOpts & Pick<DuplexOptions, 'emitClose' | 'autoDestroy' | 'decodeStrings'> {
  return { path, allowHalfOpen: false, emitClose: false, autoDestroy: true, decodeStrings: false };
}

/**
 * Connects to a Unix socket; rejects with UPSTREAM_UNAVAILABLE, TIMEOUT or CANCELLED.
 * With `keepAliveMs`, a kept connection to the same socket is taken when one waits.
 */
export function connect(socketPath: string, options: ClientOptions = {}): Promise<net.Socket> {
  const kept = options.keepAliveMs ? poolOf(options.keepAliveMs).take(socketPath) : undefined;
  return kept ? Promise.resolve(kept) : connectSocket(socketPath, options);
}

/** The pools of kept connections, by how long they keep one (one value per process in practice). */
const pools = new Map<number, IdlePool>();

function poolOf(idleMs: number): IdlePool {
  let pool = pools.get(idleMs);
  if (pool === undefined) {
    pool = new IdlePool(idleMs);
    pools.set(idleMs, pool);
  }
  return pool;
}

/** Kept connections waiting now, in every pool of this process (for tests and `status`). */
export function keptConnections(): number {
  let n = 0;
  for (const pool of pools.values()) n += pool.size;
  return n;
}

/** Closes every kept connection of this process. */
export function closeKeptConnections(): void {
  for (const pool of pools.values()) pool.clear();
}

/**
 * Lets an {@link Exchange} stop a connect in progress, from its timer or its caller's
 * signal, without composing signals: the connect then leaves the signal to it.
 */
interface Interrupt {
  stop?: (() => void) | undefined;
}

function connectSocket(socketPath: string, options: ClientOptions, interrupt?: Interrupt): Promise<net.Socket> {
  const { signal } = options;
  const label = options.name ?? socketPath;
  const timeoutMs = options.connectTimeoutMs ?? 2000;
  if (signal?.aborted) return Promise.reject(abortError(signal, `request to ${label}`));
  return new Promise((resolve, reject) => {
    const socket = net.createConnection(socketOptions(socketPath));
    const finish = (err?: Error): void => {
      clearDeadline(deadline);
      socket.off('connect', onConnect);
      socket.off('error', onError);
      if (interrupt) interrupt.stop = undefined;
      else signal?.removeEventListener('abort', onAbort);
      if (err) {
        socket.destroy();
        reject(err);
      } else {
        // Errors surface through the reader; this keeps one while the socket waits (for its request, or kept) from being unhandled.
        socket.on('error', noop);
        resolve(socket);
      }
    };
    const onConnect = (): void => finish();
    const onError = (err: NodeJS.ErrnoException): void => finish(unavailable(label, socketPath, err));
    const onAbort = (): void => finish(abortError(signal, `request to ${label}`));
    if (interrupt) interrupt.stop = onAbort;
    // One timer for every connect of this length in the process (deadlines.ts): this runs for every hop of every request.
    const deadline = startDeadline(timeoutMs, () =>
      finish(
        new ZinoError('TIMEOUT', `connecting to ${label} (${socketPath}) timed out after ${timeoutMs} ms`, { detail: { phase: 'connect', service: label } }),
      ),
    );
    socket.once('connect', onConnect);
    socket.once('error', onError);
    if (!interrupt) signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * One exchange with a service, as {@link stream} and {@link request} make it: the overall
 * timer and the caller's signal (either destroys the socket), connecting and sending the
 * request, the mapping of every failure to the error the caller gets, and the clean-up.
 * With `keepAliveMs` it asks for a kept connection, takes one that waits, sends again on a
 * new one when a kept one proves it did not read the request, and keeps its connection
 * when the service agreed (pool.ts).
 */
class Exchange {
  readonly label: string;
  readonly maxFrameBytes: number;
  private socket: net.Socket | undefined;
  private timedOut = false;
  private readonly timer: NodeJS.Timeout | undefined;
  /** Where the connection goes after the exchange when the service keeps it; undefined when the caller did not ask. */
  private readonly pool: IdlePool | undefined;
  /** The socket served a request before this one, and no reply frame has come on it yet. */
  private reusedUnanswered = false;
  /** A kept connection proved it did not read the request: the next send connects anew. */
  private fresh = false;
  /** The terminal frame said the service keeps the connection. */
  private keep = false;
  /**
   * How the timer and the caller's signal stop a connect in progress: one listener on the
   * signal for the whole exchange, no AbortController + AbortSignal.any (this runs for every
   * hop of every request).
   */
  private readonly interrupt: Interrupt = {};
  private readonly onAbort = (): void => {
    this.socket?.destroy(this.cancelled());
    this.interrupt.stop?.();
  };

  constructor(
    private readonly socketPath: string,
    private readonly options: StreamOptions,
  ) {
    this.label = options.name ?? socketPath;
    this.maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    this.pool = options.keepAliveMs ? poolOf(options.keepAliveMs) : undefined;
    // A plain timer rather than AbortSignal.timeout + AbortSignal.any: this runs for every hop of every request.
    this.timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            this.timedOut = true;
            this.socket?.destroy(this.cancelled());
            this.interrupt.stop?.();
          }, options.timeoutMs);
    options.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  /** Connects (or takes a kept connection, or the one opened earlier) and sends `request`; resolves with the socket to read from. */
  async send(request: Frame): Promise<net.Socket> {
    const { signal } = this.options;
    for (;;) {
      let socket: net.Socket;
      try {
        const early = this.fresh ? undefined : this.options.connection;
        const kept = early === undefined && !this.fresh ? this.pool?.take(this.socketPath) : undefined;
        socket = kept ?? (await (early ?? connectSocket(this.socketPath, this.options, this.interrupt)));
      } catch (err) {
        throw this.timedOut || signal?.aborted ? this.cancelled() : err;
      }
      this.socket = socket;
      this.reusedUnanswered = !this.fresh && this.pool !== undefined && this.pool.wasReused(socket);
      if (signal?.aborted) throw this.cancelled();
      try {
        await new FrameWriter(socket, this.maxFrameBytes).write(request, this.pool && KEEP_ALIVE_MEMBER);
      } catch (err) {
        // The service never took the request (it closed first): as good as unreachable, and safe to retry.
        if (err instanceof ZinoError && err.code === 'CONNECTION_CLOSED') {
          if (this.notRead(err, true)) continue;
          throw new ZinoError('UPSTREAM_UNAVAILABLE', `${this.label} closed the connection before taking the request`, {
            cause: err,
            detail: { phase: 'send', service: this.label },
          });
        }
        throw err;
      }
      return socket;
    }
  }

  /**
   * True when `what`, the first frame or the failure on a kept connection that served a
   * request before, shows that the service did not read this request: its `keep_alive_end`,
   * a write that failed (`written` false: it closed first; EPIPE), or a reset (it closed with
   * the request unread: Linux resets a Unix socket closed with bytes unread). The
   * socket is then closed and the next {@link send} connects anew; once per exchange.
   * Anything else (any other frame, a plain EOF: it may have read the request and died)
   * is the reply or the failure, as on a new connection.
   */
  notRead(what: Frame | Error, unwritten = false): boolean {
    if (!this.reusedUnanswered) return false;
    this.reusedUnanswered = false;
    if (this.timedOut || this.options.signal?.aborted) return false;
    const unread = what instanceof Error ? unwritten || UNREAD_ERRNOS.has((what as NodeJS.ErrnoException).code ?? '') : what.type === KEEP_ALIVE_END;
    if (!unread) return false;
    this.socket?.destroy();
    this.socket = undefined;
    this.fresh = true;
    return true;
  }

  /** Notes the terminal frame: when the service keeps the connection, its `keep_alive` is taken off and the connection kept at the end. */
  ended(frame: Frame): void {
    if (this.pool === undefined || frame.keep_alive !== true) return;
    // The last member (the service adds it last): deleting it keeps the object's shape fast.
    delete frame.keep_alive;
    this.keep = true;
  }

  /** The error the caller gets for `err`, thrown anywhere in the exchange. */
  failure(err: unknown): Error {
    if (this.timedOut || this.options.signal?.aborted) return this.cancelled();
    // Protocol errors, an oversize frame, an unreachable socket: as they are.
    if (err instanceof ZinoError && err.code !== 'CONNECTION_CLOSED') return err;
    return closedEarly(this.label, err);
  }

  /** Stops the timer, forgets the signal, keeps the connection (when the service agreed) or closes it. */
  end(): void {
    clearTimeout(this.timer);
    this.options.signal?.removeEventListener('abort', this.onAbort);
    const { socket } = this;
    if (socket === undefined) return;
    if (this.keep && this.pool && !this.timedOut && !this.options.signal?.aborted) this.pool.give(this.socketPath, socket);
    else socket.destroy();
  }

  private cancelled(): ZinoError {
    return this.timedOut
      ? new ZinoError('TIMEOUT', `${this.label} did not answer within ${this.options.timeoutMs} ms`, {
          detail: { phase: this.socket ? 'receive' : 'connect', service: this.label },
        })
      : abortError(this.options.signal, `request to ${this.label}`);
  }
}

/**
 * Sends `request` and yields every reply frame up to and including the terminal
 * one. Throws CONNECTION_CLOSED when the server closes before a terminal frame,
 * CANCELLED on abort, TIMEOUT when `timeoutMs` passes. Error frames are yielded,
 * not thrown: a stream consumer forwards or handles them itself.
 */
export function stream(socketPath: string, request: Frame, options: StreamOptions = {}): AsyncGenerator<Frame, void, undefined> {
  return streamEach(socketPath, request, options, same);
}

/**
 * {@link stream}, with each frame passed through `each` before it is yielded (a frame it
 * maps to `undefined` is skipped; the terminal frame is decided before). An {@link Endpoint}
 * reads its typed frames through it: one async iterator less per frame than wrapping
 * {@link stream} in another (the daemon and agr read every chunk of every reply this way).
 */
export async function* streamEach<T>(
  socketPath: string,
  request: Frame,
  options: StreamOptions,
  each: (frame: Frame) => T | undefined,
): AsyncGenerator<T, void, undefined> {
  const isTerminal = options.isTerminal ?? ((f: Frame) => typeof f.type === 'string' && TERMINAL_TYPES.has(f.type));
  const exchange = new Exchange(socketPath, options);
  try {
    // Once, or twice when a kept connection did not read the request (Exchange.notRead).
    for (;;) {
      const socket = await exchange.send(request);
      let replied = false;
      let again = false;
      try {
        for await (const frame of readFrames(socket, exchange.maxFrameBytes, options.mergeChunks ?? false)) {
          if (!replied && exchange.notRead(frame)) {
            again = true;
            break;
          }
          replied = true;
          const terminal = isTerminal(frame);
          if (terminal) exchange.ended(frame);
          const value = each(frame);
          if (value !== undefined) yield value;
          if (terminal) return;
        }
      } catch (err) {
        if (replied || !exchange.notRead(err as Error)) throw err;
        again = true;
      }
      if (!again) throw closedEarly(exchange.label);
    }
  } catch (err) {
    throw exchange.failure(err);
  } finally {
    exchange.end();
  }
}

function same(frame: Frame): Frame {
  return frame;
}

/**
 * Sends `request` and resolves with the single reply frame. An error frame
 * rejects with {@link RemoteError} (carrying the remote `code` and `message`).
 * Fails as {@link stream} does; it only reads one frame without an iterator.
 */
export async function request(socketPath: string, frame: Frame, options: Omit<StreamOptions, 'isTerminal' | 'mergeChunks'> = {}): Promise<Frame> {
  const exchange = new Exchange(socketPath, options);
  let reply: Frame;
  try {
    reply = await replyOf(exchange, frame);
  } catch (err) {
    throw exchange.failure(err);
  } finally {
    exchange.end();
  }
  if (reply.type === 'error') throw new RemoteError(reply);
  return reply;
}

/** The one reply to `frame` in `exchange`: sent again on a new connection when a kept one did not read it. */
async function replyOf(exchange: Exchange, frame: Frame): Promise<Frame> {
  for (;;) {
    const socket = await exchange.send(frame);
    let reply: Frame;
    try {
      reply = await readFrame(socket, exchange.maxFrameBytes, exchange.label);
    } catch (err) {
      if (exchange.notRead(err as Error)) continue;
      throw err;
    }
    if (exchange.notRead(reply)) continue;
    exchange.ended(reply);
    return reply;
  }
}

/** Pings a service; resolves with the round-trip time in ms, rejects when it does not answer pong. */
export async function ping(socketPath: string, options: ClientOptions = {}): Promise<number> {
  const started = performance.now();
  const reply = await request(socketPath, { type: 'ping' }, { timeoutMs: 2000, ...options });
  if (reply.type !== 'pong') throw new ZinoError('UPSTREAM_ERROR', `${options.name ?? socketPath} answered ping with ${String(reply.type)}`);
  return performance.now() - started;
}

function unavailable(label: string, socketPath: string, err: NodeJS.ErrnoException): ZinoError {
  const why: Record<string, string> = {
    ENOENT: 'no socket there; is the service running?',
    ECONNREFUSED: 'nothing is listening; is the service running?',
    EACCES: 'permission denied; is this user in the group that owns the socket?',
    EAGAIN: 'its accept queue is full; the service is overloaded',
  };
  const hint = why[err.code ?? ''] ?? err.message;
  return new ZinoError('UPSTREAM_UNAVAILABLE', `cannot connect to ${label} at ${socketPath}: ${err.code ?? 'error'} (${hint})`, {
    cause: err,
    detail: { phase: 'connect', errno: err.code, service: label },
  });
}

/** The error for a server that went away before its terminal frame; names the socket error when there was one. */
function closedEarly(label: string, cause?: unknown): ZinoError {
  const code = (cause as NodeJS.ErrnoException | undefined)?.code;
  const errno = typeof code === 'string' && /^E[A-Z]+$/.test(code) ? code : undefined;
  return new ZinoError('CONNECTION_CLOSED', `${label} closed the connection before sending a complete reply${errno ? ` (${errno})` : ''}`, {
    cause,
    detail: { phase: 'receive', errno, service: label },
  });
}

function noop(): void {}
