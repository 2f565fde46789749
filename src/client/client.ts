/**
 * `ZinoClient`: the public client library. One object reaches every service of a
 * running suite by its sockets, found from the configuration (`--config` /
 * `$ZINO_CONFIG` / `./ZINO.toml`) or a socket directory (`zino up --dir DIR`).
 *
 * ```ts
 * import { ZinoClient } from 'zino';
 * const zino = new ZinoClient({ dir: '.zino' });
 * const answer = await zino.ask('how much disk space is free?');
 * ```
 */
import {
  Endpoint,
  SERVICE_NAMES,
  ZinoError,
  clientOptions,
  loadConfig,
  ping,
  type ChatMessage,
  type ClientOptions,
  type Protocol,
  type ResolvedConfig,
  type ServiceName,
} from '../runtime/index.js';
import { AGR } from '../protocol/agr.js';
import { CTX } from '../protocol/ctx.js';
import { DAEMON, type AgrEvent, type ApprovalRequired, type ChunkFrame, type DoneFrame, type ResponseFrame, type StatusReply } from '../protocol/daemon.js';
import type { ApprovalsReply } from '../protocol/exc.js';
import { answerOne, answering, isApproval, type ApprovalAnswer, type ApprovalOptions } from './approvals.js';
import { EXC } from '../protocol/exc.js';
import { MEM } from '../protocol/mem.js';
import { RTR } from '../protocol/rtr.js';
import { SYS } from '../protocol/sys.js';
import { AgrClient, CtxClient, ExcClient, MemClient, RtrClient, SysClient, throwingErrors, type CallOptions, type SamplingOptions } from './services.js';

/** Default bound on one-shot calls, in ms. */
const DEFAULT_TIMEOUT_MS = 30_000;

/** Where the suite is. With none of these, the configuration is found as the `zino` command finds it. */
export interface ZinoClientOptions {
  /** A configuration already loaded (`loadConfig().config`). */
  config?: Readonly<ResolvedConfig> | undefined;
  /** A ZINO.toml to read (else `$ZINO_CONFIG`, else `./ZINO.toml`, else the defaults). */
  configFile?: string | undefined;
  /** The directory of a suite run with `zino up --dir DIR` (its sockets are `DIR/run/<service>.sock`); else `$ZINO_DIR`. */
  dir?: string | undefined;
  /** Default bound on every one-shot call (not on `ask`, whose length is the model's), in ms. @default 30000 */
  timeoutMs?: number | undefined;
}

/** Options of {@link ZinoClient.ask} and {@link ZinoClient.askStream}. */
export interface AskOptions extends CallOptions, SamplingOptions, ApprovalOptions {
  /** The channel whose history is used and to which the exchange is stored. */
  channelId?: string | undefined;
  /**
   * The conversation before the message, oldest first: used as the history instead of
   * the channel's stored one (with `channelId`, the exchange is still stored there).
   */
  history?: ChatMessage[] | undefined;
}

/** Options of {@link ZinoClient.askStream}. */
export interface AskStreamOptions extends AskOptions {
  /** Also yield agr's `iteration`, `tool_call`, `tool_result` and `usage` events. */
  events?: boolean | undefined;
  /**
   * Yield `approval_required` frames (answer them with {@link ZinoClient.approve} or
   * {@link ZinoClient.deny}); implied by `onApproval`, which answers them itself.
   */
  approvals?: boolean | undefined;
}

/** A client of one ZINO suite. Stateless: every call is one connection; use it from anywhere, concurrently. */
export class ZinoClient {
  /** The configuration the sockets come from. */
  readonly config: Readonly<ResolvedConfig>;
  readonly mem: MemClient;
  readonly sys: SysClient;
  readonly ctx: CtxClient;
  readonly exc: ExcClient;
  readonly rtr: RtrClient;
  readonly agr: AgrClient;
  private readonly daemon: Endpoint<typeof DAEMON>;
  private readonly timeoutMs: number;

  /** Throws a `ZinoError` with code CONFIG when the configuration cannot be read. */
  constructor(options: ZinoClientOptions = {}) {
    this.config = options.config ?? loadConfig({ path: options.configFile, dir: options.dir }).config;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const sampling = { temperature: this.config.agent.temperature, top_p: this.config.agent.top_p };
    // No default bound on the daemon: an answer takes as long as the model and its tools do.
    this.daemon = this.endpoint('daemon', DAEMON, { timeoutMs: undefined });
    this.mem = new MemClient(this.endpoint('mem', MEM));
    this.sys = new SysClient(this.endpoint('sys', SYS));
    this.ctx = new CtxClient(this.endpoint('ctx', CTX));
    this.exc = new ExcClient(this.endpoint('exc', EXC, { timeoutMs: undefined }));
    this.rtr = new RtrClient(this.endpoint('rtr', RTR, { timeoutMs: undefined }), sampling);
    this.agr = new AgrClient(this.endpoint('agr', AGR, { timeoutMs: undefined }), sampling);
  }

  /** The socket of `service`. */
  socket(service: ServiceName): string {
    return this.config[service].socket;
  }

  /**
   * Asks the daemon and resolves with the collected answer (`content`, and ZINO's
   * `iterations`, `via` and `usage`). With `onEvent`, agr's events (`tool_call`,
   * `tool_result`, …) are passed to it as they happen; with `onApproval`, host-run
   * approvals are asked of it and answered. Rejects with a `ZinoError`:
   * UPSTREAM_UNAVAILABLE when the daemon cannot be reached, the daemon's code
   * (a `RemoteError`) when it answered an error.
   */
  async ask(message: string, options: AskOptions & { onEvent?: ((event: AgrEvent) => void) | undefined } = {}): Promise<ResponseFrame> {
    const body = Object.assign(askBody(message, false, options), options.onEvent ? { events: true } : {});
    for await (const frame of throwingErrors(this.daemon.stream('ask', body, { signal: options.signal, timeoutMs: options.timeoutMs }))) {
      if (frame.type === 'response') return frame;
      // A daemon that streams anyway (it must not): its text is in `done`.
      if (frame.type === 'done') return { type: 'response', content: frame.full_text, ...(frame.usage ? { usage: frame.usage } : {}) };
      if (isApproval(frame)) await answerOne(frame, options, this.sendAnswer);
      else if (frame.type !== 'chunk') options.onEvent?.(frame);
    }
    throw new ZinoError('CONNECTION_CLOSED', 'the daemon sent no answer');
  }

  /**
   * Asks the daemon, streaming: yields `chunk` frames (and events when asked), then
   * the `done` frame. An error frame is thrown as a `RemoteError`. Breaking out of
   * the loop, or aborting the signal, cancels the request all the way down.
   */
  askStream(
    message: string,
    options: AskStreamOptions = {},
  ): AsyncGenerator<ChunkFrame | AgrEvent | ApprovalRequired | DoneFrame | ResponseFrame, void, undefined> {
    const body = Object.assign(askBody(message, true, options), options.events ? { events: true } : {}, options.approvals ? { approvals: true } : {});
    return answering(throwingErrors(this.daemon.stream('ask', body, { signal: options.signal, timeoutMs: options.timeoutMs })), options, this.sendAnswer);
  }

  /** Allows the pending approval `id` (from an `approval_required` frame or {@link approvals}). Rejects with APPROVAL_UNKNOWN, _EXPIRED or _SETTLED. */
  async approve(id: string, options: CallOptions & { note?: string | undefined } = {}): Promise<void> {
    await this.answerApproval(id, { decision: 'allow', note: options.note }, options);
  }

  /** Denies the pending approval `id`; the model is told, with `note` when given. */
  async deny(id: string, options: CallOptions & { note?: string | undefined } = {}): Promise<void> {
    await this.answerApproval(id, { decision: 'deny', note: options.note }, options);
  }

  /** The pending approvals, oldest first (programs cut at 4096 characters); with `id`, that one whole. */
  approvals(options: CallOptions & { id?: string | undefined } = {}): Promise<ApprovalsReply> {
    const body = Object.assign(
      {},
      options.id === undefined ? {} : { id: options.id },
      options.requestId === undefined ? {} : { request_id: options.requestId },
    );
    return this.daemon.request('approvals', body, { signal: options.signal, timeoutMs: options.timeoutMs ?? this.timeoutMs });
  }

  private readonly sendAnswer = (id: string, answer: ApprovalAnswer): Promise<void> => this.answerApproval(id, answer, {});

  private async answerApproval(id: string, answer: ApprovalAnswer, options: CallOptions): Promise<void> {
    const body = {
      id,
      decision: answer.decision,
      ...(answer.note === undefined ? {} : { note: answer.note }),
      ...(options.requestId === undefined ? {} : { request_id: options.requestId }),
    };
    await this.daemon.request('approve', body, { signal: options.signal, timeoutMs: options.timeoutMs ?? this.timeoutMs });
  }

  /** Every service's reachability and latency, rtr's model, the version (the daemon's `status`). */
  status(options: CallOptions = {}): Promise<StatusReply> {
    const body = options.requestId === undefined ? {} : { request_id: options.requestId };
    return this.daemon.request('status', body, { signal: options.signal, timeoutMs: options.timeoutMs ?? this.timeoutMs });
  }

  /** Pings `service`; resolves with the round trip in ms, rejects with a `ZinoError` when it does not answer. */
  ping(service: ServiceName, options: CallOptions = {}): Promise<number> {
    return ping(this.socket(service), clientOptions(this.config, service, { signal: options.signal, timeoutMs: options.timeoutMs ?? this.timeoutMs }));
  }

  /** Pings every service at once; resolves with each one's round trip, or the error that stopped it. */
  async pingAll(options: CallOptions = {}): Promise<Record<ServiceName, { ok: true; ms: number } | { ok: false; error: ZinoError }>> {
    const entries = await Promise.all(
      SERVICE_NAMES.map(async (name) => {
        try {
          return [name, { ok: true as const, ms: await this.ping(name, options) }] as const;
        } catch (err) {
          const error = err instanceof ZinoError ? err : new ZinoError('INTERNAL', String(err));
          return [name, { ok: false as const, error }] as const;
        }
      }),
    );
    return Object.fromEntries(entries) as Record<ServiceName, { ok: true; ms: number } | { ok: false; error: ZinoError }>;
  }

  /** A typed endpoint of `service` for messages the per-service clients do not wrap. */
  endpoint<P extends Protocol>(service: ServiceName, protocol: P, extra: ClientOptions = {}): Endpoint<P> {
    return new Endpoint(protocol, this.socket(service), clientOptions(this.config, service, { timeoutMs: this.timeoutMs, ...extra }));
  }
}

function askBody(message: string, stream: boolean, options: AskOptions) {
  return {
    message,
    stream,
    ...(options.onApproval ? { approvals: true } : {}),
    ...(options.channelId === undefined ? {} : { channel_id: options.channelId }),
    ...(options.history === undefined ? {} : { history: options.history }),
    ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
    ...(options.topP === undefined ? {} : { top_p: options.topP }),
    ...(options.requestId === undefined ? {} : { request_id: options.requestId }),
  };
}
