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
import { stream, type ClientOptions, type StreamOptions } from './client.js';

/** Per-call options of an {@link Endpoint}: those of {@link stream} except what the message decides. */
export type EndpointCallOptions = Omit<StreamOptions, 'isTerminal'>;

/**
 * The options every call to `service` starts from: its name for messages, the
 * configured connect bound and frame limit. Callers add their signal and timeout.
 */
export function clientOptions(config: Readonly<ResolvedConfig>, service: ServiceName, extra: ClientOptions = {}): ClientOptions {
  return {
    name: service,
    connectTimeoutMs: config.limits.connect_timeout_ms,
    maxFrameBytes: config.limits.max_frame_bytes,
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
  async *stream<K extends keyof P & string>(
    name: K,
    body: BodyOf<P[K]>,
    options: EndpointCallOptions = {},
  ): AsyncGenerator<ProgressOf<P[K]> | ReplyOf<P[K]> | ErrorFrame, void, undefined> {
    const msg = this.message(name);
    const isTerminal = (f: Frame): boolean => isTerminalOf(msg, f) || (msg.untypedReply && f.type === undefined);
    for await (const frame of stream(this.socket, this.frameOf(name, body), { ...this.defaults, ...options, isTerminal })) {
      if (frame.type === 'error') yield normalisedError(frame);
      else if (isTerminal(frame)) yield this.reply(name, frame);
      else if (typeof frame.type === 'string') yield frame as ProgressOf<P[K]>;
    }
  }

  /**
   * Sends message `name` and resolves with its reply: the first frame that comes
   * back. An error frame rejects with {@link RemoteError}; a frame of a type the
   * message does not declare as its reply rejects with UPSTREAM_ERROR. Use it for
   * messages that answer with one frame (a streamed message asked not to stream).
   */
  async request<K extends keyof P & string>(name: K, body: BodyOf<P[K]>, options: EndpointCallOptions = {}): Promise<ReplyOf<P[K]>> {
    const msg = this.message(name);
    for await (const frame of stream(this.socket, this.frameOf(name, body), { ...this.defaults, ...options, isTerminal: () => true })) {
      if (frame.type === 'error') throw new RemoteError(frame);
      if (isTerminalOf(msg, frame) || (msg.untypedReply && frame.type === undefined)) return this.reply(name, frame);
      throw new ZinoError('UPSTREAM_ERROR', `${this.label} answered ${name} with a frame of type ${JSON.stringify(frame.type)}`, {
        detail: { phase: 'receive', service: this.label },
      });
    }
    // stream() always ends with a terminal frame or throws.
    throw new ZinoError('CONNECTION_CLOSED', `${this.label} sent no reply to ${name}`);
  }

  /** A terminal reply as its declared type; one that came without `type` (allowed by the message) gets it. */
  private reply<K extends keyof P & string>(name: K, frame: Frame): ReplyOf<P[K]> {
    const msg = this.message(name);
    return (frame.type === undefined ? { ...frame, type: msg.replies[0] } : frame) as ReplyOf<P[K]>;
  }

  private get label(): string {
    return this.defaults.name ?? this.socket;
  }

  private message(name: string): AnyMessage {
    const msg = this.protocol[name];
    if (!msg) throw new ZinoError('INTERNAL', `${this.label} has no message "${name}"`);
    return msg;
  }

  private frameOf(name: string, body: object): Frame {
    const { type } = this.message(name);
    return type === null ? { ...body } : { ...body, type };
  }
}

/**
 * An error frame as it arrived, made well-formed: a string `message`, a known `code`
 * (UPSTREAM_ERROR otherwise) and only well-typed `detail`, whatever the peer sent.
 */
export function normalisedError(frame: Frame): ErrorFrame {
  return errorFrame(new RemoteError(frame));
}
