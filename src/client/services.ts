/**
 * One small class per service, one method per message. Each method builds the
 * request from plain arguments, sends it through the service's typed endpoint and
 * returns the typed reply; streaming methods are async iterators of typed frames.
 * An error frame becomes a thrown {@link RemoteError} (a `ZinoError` with the
 * remote `code`), in streams as in one-shot calls.
 */
import { RemoteError, type ChatMessage, type Endpoint, type ErrorFrame } from '../runtime/index.js';
import type { AGR, AgrEvent, ApprovalRequired, RunDone, RunResult } from '../protocol/agr.js';
import type { CTX, ContextReply } from '../protocol/ctx.js';
import type { ApprovalsReply, CallToolResult, EXC, ExcCapabilities, ExecuteResult, ToolsReply, ValidationReply } from '../protocol/exc.js';
import type { HardIndexStatus, HardMemoryResult, HardPart, HistoryPart, MEM } from '../protocol/mem.js';
import type { ChunkFrame, DoneFrame, RTR, ResponseFrame, RtrCapabilities, Usage } from '../protocol/rtr.js';
import type { SYS } from '../protocol/sys.js';

/** Options of every call. */
export interface CallOptions {
  /** Aborting closes the connection, which cancels the request all the way down. */
  signal?: AbortSignal | undefined;
  /** Bound on the whole call, in milliseconds; overrides the client's default. */
  timeoutMs?: number | undefined;
  /** Passed on to every service the request reaches, for log correlation (`[\w.:@/-]{1,128}`). */
  requestId?: string | undefined;
}

/** Sampling parameters of an inference or a run. */
export interface SamplingOptions {
  /** 0–2; the service's `[agent] temperature` when absent. */
  temperature?: number | undefined;
  /** 0–1; the service's `[agent] top_p` when absent. */
  topP?: number | undefined;
}

/** Turns the error frame of a stream into a thrown error, passing every other frame on. */
export async function* throwingErrors<F extends { type: string }>(
  frames: AsyncIterable<F | ErrorFrame>,
): AsyncGenerator<Exclude<F, ErrorFrame>, void, undefined> {
  for await (const frame of frames) {
    if (isError(frame)) throw new RemoteError(frame);
    yield frame as Exclude<F, ErrorFrame>;
  }
}

function isError(frame: { type: string }): frame is ErrorFrame {
  return frame.type === 'error';
}

/** The request fields every message shares, from the call options. */
function common(options: CallOptions): { request_id?: string } {
  return options.requestId === undefined ? {} : { request_id: options.requestId };
}

/** The per-call options an endpoint takes. */
function call(options: CallOptions): { signal?: AbortSignal; timeoutMs?: number } {
  return Object.assign({}, options.signal ? { signal: options.signal } : {}, options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs });
}

/** zino-mem: channel histories, hard memories, the soft memory. */
export class MemClient {
  constructor(private readonly endpoint: Endpoint<typeof MEM>) {}

  /** The channel's last `limit` messages, oldest first (all of them when `limit` is 0 or absent). */
  async getHistory(channelId: string, options: CallOptions & { limit?: number } = {}): Promise<ChatMessage[]> {
    return (await this.getHistoryPage(channelId, options)).messages;
  }

  /**
   * Like {@link getHistory}, and says how many of the messages asked for were left
   * out (`omitted`, 0 when none): mem answers with the most recent messages that fit
   * in one frame.
   */
  async getHistoryPage(channelId: string, options: CallOptions & { limit?: number } = {}): Promise<{ messages: ChatMessage[]; omitted: number }> {
    const reply = await this.endpoint.request('get_history', { channel_id: channelId, limit: options.limit ?? 0, ...common(options) }, call(options));
    const omitted = typeof reply.omitted === 'number' && reply.omitted > 0 ? reply.omitted : 0;
    return { messages: reply.messages, omitted };
  }

  /** Appends `messages` to the channel's history, all or none. */
  async appendHistory(channelId: string, messages: ChatMessage[], options: CallOptions = {}): Promise<void> {
    await this.endpoint.request('append_history', { channel_id: channelId, messages, ...common(options) }, call(options));
  }

  /** Deletes the channel's whole history. */
  async clearHistory(channelId: string, options: CallOptions = {}): Promise<void> {
    await this.endpoint.request('clear_history', { channel_id: channelId, ...common(options) }, call(options));
  }

  /** The hard memories most similar to `query`, best first (`topK` defaults to 3). */
  async searchHard(query: string, options: CallOptions & { topK?: number } = {}): Promise<HardMemoryResult[]> {
    const body = { query, ...(options.topK === undefined ? {} : { top_k: options.topK }), ...common(options) };
    return (await this.endpoint.request('search_hard', body, call(options))).results;
  }

  /** Stores a hard memory; resolves with its id (stable across restarts). */
  async storeHard(messages: ChatMessage[], options: CallOptions & { tag?: string } = {}): Promise<number> {
    const body = { messages, ...(options.tag === undefined ? {} : { tag: options.tag }), ...common(options) };
    return (await this.endpoint.request('store_hard', body, call(options))).id;
  }

  /** Deletes the hard memory `id` (from the index and from the disk); rejects with INVALID_REQUEST when there is none. */
  async forgetHard(id: number, options: CallOptions = {}): Promise<void> {
    await this.endpoint.request('forget_hard', { id, ...common(options) }, call(options));
  }

  /** The soft memory string. */
  async getSoft(options: CallOptions = {}): Promise<string> {
    return (await this.endpoint.request('get_soft', common(options), call(options))).content;
  }

  /** Replaces the soft memory string (durably; sys's prompt is updated with `sys.setSoftMemory`). */
  async setSoft(content: string, options: CallOptions = {}): Promise<void> {
    await this.endpoint.request('set_soft', { content, ...common(options) }, call(options));
  }

  /**
   * ZINO extra (a mem written from the contract alone refuses it with UNKNOWN_TYPE):
   * `searchHard(query, { topK })` and `getHistoryPage(channelId, { limit })` in one
   * exchange. Each part is there when it was asked for (`query` given and `topK` not 0;
   * `channelId` given) and is the other message's reply without its `type`; a part
   * that failed carries its error frame (`{ error }`) instead of being thrown, and the
   * search is `{ pending: true }` while the index is being built (ask `searchHard`,
   * which waits for it).
   */
  async getContext(
    options: CallOptions & { query?: string; topK?: number; channelId?: string; limit?: number } = {},
  ): Promise<{ hard?: HardPart; history?: HistoryPart }> {
    // A field left undefined is not sent (JSON has no undefined).
    const body = { query: options.query, top_k: options.topK, channel_id: options.channelId, limit: options.limit, ...common(options) };
    const { hard, history } = await this.endpoint.request('get_context', body, call(options));
    return Object.assign({}, hard === undefined ? {} : { hard }, history === undefined ? {} : { history });
  }

  /** How far the hard memory index is (`building` after a start, then `ready`); searches wait for it. */
  async status(options: CallOptions = {}): Promise<HardIndexStatus> {
    return (await this.endpoint.request('status', common(options), call(options))).hard_index;
  }
}

/** zino-sys: the rendered system prompt. */
export class SysClient {
  constructor(private readonly endpoint: Endpoint<typeof SYS>) {}

  /** The current system prompt. */
  async get(options: CallOptions = {}): Promise<string> {
    return (await this.endpoint.request('get', common(options), call(options))).content;
  }

  /** Re-reads the template, tools and skills; resolves with the new prompt. */
  async reload(options: CallOptions = {}): Promise<string> {
    return (await this.endpoint.request('reload', common(options), call(options))).content;
  }

  /** Sets the soft memory shown in the prompt; resolves with the new prompt. */
  async setSoftMemory(content: string, options: CallOptions = {}): Promise<string> {
    return (await this.endpoint.request('set_soft_memory', { content, ...common(options) }, call(options))).content;
  }

  /**
   * The prompt now and after each change (ZINO's `watch`), until sys stops (the
   * iteration ends) or the caller breaks out or aborts `signal`. An error frame throws.
   */
  async *watch(options: CallOptions = {}): AsyncGenerator<string, void, undefined> {
    for await (const frame of throwingErrors(this.endpoint.stream('watch', common(options), call(options)))) {
      if (frame.type === 'system_prompt') yield frame.content;
    }
  }
}

/** zino-ctx: the context messages for a prompt. */
export class CtxClient {
  constructor(private readonly endpoint: Endpoint<typeof CTX>) {}

  /** Skill examples, hard memories for `userMessage`, then the channel's history (or `history` instead of it). */
  async build(userMessage: string, options: CallOptions & { channelId?: string; history?: ChatMessage[] } = {}): Promise<ContextReply['messages']> {
    const body = {
      user_message: userMessage,
      ...(options.channelId === undefined ? {} : { channel_id: options.channelId }),
      ...(options.history === undefined ? {} : { history: options.history }),
      ...common(options),
    };
    return (await this.endpoint.request('build', body, call(options))).messages;
  }
}

/** zino-exc: running code. */
export class ExcClient {
  constructor(private readonly endpoint: Endpoint<typeof EXC>) {}

  /**
   * Runs `code` with `executor` (`bash`, `python3`, …). A failing program is a
   * result, not an error. With `host`, outside the sandbox under `[approval]`:
   * nobody can be asked on this call, so `unattended` applies (a denial rejects
   * with APPROVAL_DENIED).
   */
  execute(executor: string, code: string, options: CallOptions & { host?: boolean; reason?: string } = {}): Promise<ExecuteResult> {
    const host = options.host ? { host: true, ...(options.reason === undefined ? {} : { reason: options.reason }) } : {};
    return this.endpoint.request('execute', { executor, code, ...host, ...common(options) }, call(options));
  }

  /** Static analysis only. */
  validate(executor: string, code: string, options: CallOptions = {}): Promise<ValidationReply> {
    return this.endpoint.request('validate', { executor, code, ...common(options) }, call(options));
  }

  /** The executors, the timeout and the sandbox in use. */
  capabilities(options: CallOptions = {}): Promise<ExcCapabilities> {
    return this.endpoint.request('capabilities', common(options), call(options));
  }

  /** The tools of the MCP servers that are up, and every configured server's state. */
  listTools(options: CallOptions = {}): Promise<ToolsReply> {
    return this.endpoint.request('list_tools', common(options), call(options));
  }

  /**
   * Calls MCP tool `tool` of `server` (checked against its schema, then its approval
   * decided; see docs/mcp.md). A tool that may change the host, on a server that is not
   * trusted, goes through `[approval]`: nobody can be asked on this call, so
   * `unattended` applies. A tool's own failure, or a refusal, is a result with
   * `is_error`, not a thrown error.
   */
  callTool(server: string, tool: string, args: Record<string, unknown> = {}, options: CallOptions = {}): Promise<CallToolResult> {
    return this.endpoint.request('call_tool', { server, tool, arguments: args, ...common(options) }, call(options));
  }

  /**
   * Answers exc's pending approval `id` directly (the daemon's `approve` forwards here):
   * `allow` runs the program, `deny` tells the model, with `note` when given. Rejects
   * with APPROVAL_UNKNOWN, _EXPIRED or _SETTLED.
   */
  async approve(id: string, decision: 'allow' | 'deny', options: CallOptions & { note?: string | undefined } = {}): Promise<void> {
    const note = options.note === undefined ? {} : { note: options.note };
    await this.endpoint.request('approve', { id, decision, ...note, ...common(options) }, call(options));
  }

  /** exc's pending approvals, oldest first; with `id`, that one with its whole program. */
  approvals(options: CallOptions & { id?: string | undefined } = {}): Promise<ApprovalsReply> {
    return this.endpoint.request('approvals', Object.assign({}, options.id === undefined ? {} : { id: options.id }, common(options)), call(options));
  }
}

/** Options of an inference. */
export interface InferOptions extends CallOptions, SamplingOptions {
  /** Cap on generated tokens. */
  maxTokens?: number | undefined;
}

/** The sampling values sent when a call gives none (the contract requires both): the config's `[agent]` values. */
export interface SamplingDefaults {
  temperature: number;
  top_p: number;
}

/** zino-rtr: the LLM, without tools or memory. */
export class RtrClient {
  constructor(
    private readonly endpoint: Endpoint<typeof RTR>,
    private readonly defaults: SamplingDefaults,
  ) {}

  /**
   * Whether rtr streams, the model, and whether it is configured; with `probe`, rtr
   * also checks the endpoint now (reachable? which models?) and reports it under `llm`.
   */
  capabilities(options: CallOptions & { probe?: boolean } = {}): Promise<RtrCapabilities> {
    return this.endpoint.request('capabilities', Object.assign(common(options), options.probe ? { probe: true } : {}), call(options));
  }

  /** One collected completion. */
  async infer(messages: ChatMessage[], options: InferOptions = {}): Promise<{ content: string; usage?: Usage }> {
    const reply = await this.endpoint.request('infer', this.body(messages, false, options), call(options));
    const usage = reply.usage ? { usage: reply.usage } : {};
    return reply.type === 'response' ? { content: reply.content, ...usage } : { content: reply.full_text, ...usage };
  }

  /** A streamed completion: `chunk` frames, then `done` (or one `response` when rtr cannot stream). */
  inferStream(messages: ChatMessage[], options: InferOptions = {}): AsyncGenerator<ChunkFrame | DoneFrame | ResponseFrame, void, undefined> {
    return throwingErrors(this.endpoint.stream('infer', this.body(messages, true, options), call(options)));
  }

  private body(messages: ChatMessage[], stream: boolean, options: InferOptions) {
    return {
      messages,
      stream,
      ...sampling(options, this.defaults),
      ...(options.maxTokens === undefined ? {} : { max_tokens: options.maxTokens }),
      ...common(options),
    };
  }
}

/** Options of an agentic run. */
export interface RunOptions extends CallOptions, SamplingOptions {
  /** Overrides `[agr] max_iterations` (1–100). */
  maxIterations?: number | undefined;
  /** Also yield `iteration`, `tool_call`, `tool_result` and `usage` events (streams only). */
  events?: boolean | undefined;
  /** Yield exc's `approval_required` frames (streams only; answer them with `ZinoClient.approve`). */
  approvals?: boolean | undefined;
}

/** zino-agr: the agentic loop over an assembled prompt. */
export class AgrClient {
  constructor(
    private readonly endpoint: Endpoint<typeof AGR>,
    private readonly defaults: SamplingDefaults,
  ) {}

  /** Runs the loop; resolves with the collected answer (events are for {@link runStream}). */
  run(messages: ChatMessage[], options: Omit<RunOptions, 'events'> = {}): Promise<RunResult | RunDone> {
    return this.endpoint.request('run', this.body(messages, false, Object.assign({}, options, { events: false, approvals: false })), call(options));
  }

  /** Runs the loop, streaming: `chunk` frames (and events when asked), then `done`. */
  runStream(
    messages: ChatMessage[],
    options: RunOptions = {},
  ): AsyncGenerator<ChunkFrame | AgrEvent | ApprovalRequired | RunResult | RunDone, void, undefined> {
    return throwingErrors(this.endpoint.stream('run', this.body(messages, true, options), call(options)));
  }

  private body(messages: ChatMessage[], stream: boolean, options: RunOptions) {
    return {
      messages,
      stream,
      ...sampling(options, this.defaults),
      ...(options.maxIterations === undefined ? {} : { max_iterations: options.maxIterations }),
      ...(options.events ? { events: true } : {}),
      ...(options.approvals ? { approvals: true } : {}),
      ...common(options),
    };
  }
}

/** temperature and top_p: the call's, else the defaults (the contract requires both on `infer` and `run`). */
function sampling(options: SamplingOptions, defaults: SamplingDefaults): SamplingDefaults {
  return { temperature: options.temperature ?? defaults.temperature, top_p: options.topP ?? defaults.top_p };
}
