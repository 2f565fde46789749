/**
 * Typed calls to one service: `endpoint.request('get_history', { channel_id })` sends
 * `{"type":"get_history",…}` and resolves with a `HistoryReply`; `endpoint.stream(…)`
 * yields the message's progress frames, then its reply (or an error frame).
 *
 * {@link clientOptions} builds the options of every call from the config, once, so
 * the frame limit and the connect bound reach every hop.
 */
import type { ResolvedConfig, ServiceName } from '../config/schema.js';
import { RemoteError, ZinoError, errorFrame, type ErrorFrame } from '../errors.js';
import type { Frame } from '../frame/codec.js';
import { isTerminalOf, type AnyMessage, type BodyOf, type ProgressOf, type Protocol, type ReplyOf } from '../typed.js';
import { request, streamEach, type ClientOptions, type StreamOptions } from './client.js';

/** Per-call options of an {@link Endpoint}: those of {@link stream} except what the message decides. */
export type EndpointCallOptions = Omit<StreamOptions, 'isTerminal'>;

/**
 * The options every call to `service` starts from: its name for messages, the
 * configured connect bound, frame limit and kept connections. Callers add their signal and timeout.
 */
export function clientOptions(config: Readonly<ResolvedConfig>, service: ServiceName, extra: ClientOptions = {}): ClientOptions {
  return {
    name: service,
    connectTimeoutMs: config.limits.connect_timeout_ms,
    maxFrameBytes: config.limits.max_frame_bytes,
    keepAliveMs: config.limits.keep_alive_ms,
    ...extra,
  };
}

/** A service reached at one socket, spoken to through its protocol `P`. */
export class Endpoint<P extends Protocol> {
  constructor(
    readonly protocol: P,
    readonly socket: string,
    /** Options of every call; a call's own options override them. */
    readonly defaults: ClientOptions = {},
  ) {}

  /**
   * Sends message `name` and yields every frame up to and including the terminal
   * one: progress frames, then the reply or an error frame (yielded, not thrown; a
   * malformed one is made well-formed, see {@link normalisedError}). A non-terminal
   * frame without a `type` means nothing to anyone and is skipped.
   */
  stream<K extends keyof P & string>(
    name: K,
    body: BodyOf<P[K]>,
    options: EndpointCallOptions = {},
  ): AsyncGenerator<ProgressOf<P[K]> | ReplyOf<P[K]> | ErrorFrame, void, undefined> {
    const msg = this.protocol[name];
    // As from a generator: an unknown message fails at the first next(), not at the call.
    if (!msg) return failing(this.unknown(name));
    const isTerminal = (f: Frame): boolean => isTerminalOf(msg, f) || (msg.untypedReply && f.type === undefined);
    // The frames are read through streamEach itself, not a generator around stream(): one async iterator less per frame.
    const callOptions: StreamOptions = this.callOptions(options);
    callOptions.isTerminal = isTerminal;
    return streamEach(this.socket, this.frameOf(name, body), callOptions, (frame) => {
      if (frame.type === 'error') return normalisedError(frame);
      if (isTerminal(frame)) return this.reply(name, frame);
      return typeof frame.type === 'string' ? (frame as ProgressOf<P[K]>) : undefined;
    });
  }

  /**
   * Sends message `name` and resolves with its reply: the first frame that comes
   * back. An error frame rejects with {@link RemoteError}; a frame of a type the
   * message does not declare as its reply rejects with UPSTREAM_ERROR. Use it for
   * messages that answer with one frame (a streamed message asked not to stream).
   */
  async request<K extends keyof P & string>(name: K, body: BodyOf<P[K]>, options: EndpointCallOptions = {}): Promise<ReplyOf<P[K]>> {
    const msg = this.message(name);
    // One frame, read without stream()'s iterators (three hops of every message take this path); request() has no use for mergeChunks.
    const frame = await request(this.socket, this.frameOf(name, body), this.callOptions(options));
    if (isTerminalOf(msg, frame) || (msg.untypedReply && frame.type === undefined)) return this.reply(name, frame);
    throw new ZinoError('UPSTREAM_ERROR', `${this.label} answered ${name} with a frame of type ${JSON.stringify(frame.type)}`, {
      detail: { phase: 'receive', service: this.label },
    });
  }

  /** A terminal reply as its declared type; one that came without `type` (allowed by the message) gets it. */
  private reply<K extends keyof P & string>(name: K, frame: Frame): ReplyOf<P[K]> {
    const msg = this.message(name);
    // The frame is this call's own (parsed from the reply): it takes its type in place.
    if (frame.type === undefined) frame.type = msg.replies[0];
    return frame as ReplyOf<P[K]>;
  }

  private get label(): string {
    return this.defaults.name ?? this.socket;
  }

  private message(name: string): AnyMessage {
    const msg = this.protocol[name];
    if (!msg) throw this.unknown(name);
    return msg;
  }

  private unknown(name: string): ZinoError {
    return new ZinoError('INTERNAL', `${this.label} has no message "${name}"`);
  }

  /** The defaults with a call's own options over them (see {@link frameOf} for why not `{ ...a, ...b }`). */
  private callOptions(options: EndpointCallOptions): EndpointCallOptions {
    return Object.assign({}, this.defaults, options);
  }

  /**
   * The request frame: `body` with the message's `type`. Copied by destructuring and then set, not
   * `{ ...body, type }`: on Node 20's V8 an object literal that starts with a spread and goes on
   * gets a hidden class of its own every time it runs, so each request's frame and options had a
   * new one, and every read of them anywhere was a cache miss (docs/benchmarks.md, round 11).
   * Destructuring defines the fields as a spread does (`Object.assign` would call the `__proto__`
   * setter for a body parsed from JSON with such a key).
   */
  private frameOf(name: string, body: object): Frame {
    const { type } = this.message(name);
    const { ...frame } = body as Frame;
    if (type !== null) frame.type = type;
    return frame;
  }
}

/**
 * An error frame as it arrived, made well-formed: a string `message`, a known `code`
 * (UPSTREAM_ERROR otherwise) and only well-typed `detail`, whatever the peer sent.
 */
export function normalisedError(frame: Frame): ErrorFrame {
  return errorFrame(new RemoteError(frame));
}

/** A generator that fails with `err` when first read. */
// eslint-disable-next-line require-yield
async function* failing(err: Error): AsyncGenerator<never, void, undefined> {
  throw err;
}
