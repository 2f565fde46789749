/**
 * One MCP server and exc's one session with it: start (spawn a stdio server or
 * reach an HTTP one), initialise, list its tools, follow its `tools/list_changed`
 * notifications, and when it exits or cannot be reached, mark it down and try again
 * with exponential backoff (1 s doubling to 60 s; back to 1 s once a session has
 * lasted a minute). A server that cannot start is only ever this server's problem.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { ZinoError, abortError, type Logger, type McpServerConfig } from '../../../runtime/index.js';
import type { McpServerStatus } from '../../../protocol/exc.js';
import { VERSION } from '../../../version.js';
import { ArgumentChecker } from './arguments.js';
import type { McpSdk } from './sdk.js';
import { StderrLog } from './stderr.js';

/** First retry delay, doubled per consecutive failure up to {@link MAX_BACKOFF_MS}. */
const BASE_BACKOFF_MS = 1000;
const MAX_BACKOFF_MS = 60_000;
/** A session that lasted this long resets the backoff. */
const STABLE_MS = 60_000;
/** Pages of `tools/list` read at most (a server that keeps sending cursors is cut off). */
const MAX_PAGES = 100;

/** What a session needs from exc. */
export interface SessionDeps {
  log: Logger;
  sdk: () => Promise<McpSdk>;
  /** Called when the session's state or tools changed. */
  onChange: () => void;
}

/** The result of a call as the SDK gives it. */
export type CallOutcome = Awaited<ReturnType<Client['callTool']>>;

type State = McpServerStatus['state'] | 'closed';

/** One configured server. */
export class McpSession {
  private state: State = 'connecting';
  private tools: Tool[] = [];
  private error: string | undefined;
  private connections = 0;
  private failures = 0;
  private upSince = 0;
  private retryAt = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private client: Client | undefined;
  private pid: number | undefined;
  private checker: ArgumentChecker | undefined;
  /** Bumped by every (re)connection and by close(): callbacks of an older client are ignored. */
  private generation = 0;
  private refreshing: Promise<void> | undefined;
  private refreshAgain = false;
  /** A list_changed that came while connecting: the list then read may predate it. */
  private changedWhileConnecting = false;
  private readonly stderr: StderrLog;

  constructor(
    readonly name: string,
    readonly config: Readonly<McpServerConfig>,
    private readonly deps: SessionDeps,
  ) {
    this.stderr = new StderrLog(name, deps.log);
  }

  /** Starts connecting in the background (or does nothing for `enabled = false`). */
  start(): void {
    if (!this.config.enabled) {
      this.state = 'disabled';
      return;
    }
    void this.connect();
  }

  get trusted(): boolean {
    return this.config.trusted;
  }

  get isUp(): boolean {
    return this.state === 'up';
  }

  /** The tools offered to the model (after the allow list); empty unless up. */
  get offered(): readonly Tool[] {
    return this.state === 'up' ? this.tools : [];
  }

  /** The argument checker of the current tool list. */
  get arguments(): ArgumentChecker | undefined {
    return this.checker;
  }

  status(): McpServerStatus {
    const state = this.state === 'closed' ? 'down' : this.state;
    return {
      name: this.name,
      transport: this.config.url === '' ? 'stdio' : 'http',
      state,
      ...(this.error === undefined ? {} : { error: this.error }),
      tools: this.offered.length,
      trusted: this.config.trusted,
      timeout_s: this.config.timeout_s,
      restarts: Math.max(0, this.connections - 1),
      ...(state === 'down' && this.retryTimer ? { retry_in_ms: Math.max(0, this.retryAt - Date.now()) } : {}),
      ...(state === 'up' && this.pid !== undefined ? { pid: this.pid } : {}),
    };
  }

  /** Why calls cannot be made now. */
  downMessage(): string {
    if (this.state === 'disabled') return `the MCP server "${this.name}" is disabled (enabled = false in [mcp.servers.${this.name}])`;
    if (this.state === 'connecting') return `the MCP server "${this.name}" is starting; try again in a moment`;
    const retry = this.retryTimer ? `; exc tries again in ${Math.ceil(Math.max(0, this.retryAt - Date.now()) / 1000)} s` : '';
    return `the MCP server "${this.name}" is down (${this.error ?? 'not connected'})${retry}`;
  }

  /**
   * Calls `tool`. Throws a ZinoError: UPSTREAM_UNAVAILABLE when the server is not up,
   * TIMEOUT past `timeout_s`, CANCELLED when `signal` fires (the SDK then sends the
   * server `notifications/cancelled`), UPSTREAM_ERROR for a protocol error.
   */
  async call(tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<CallOutcome> {
    const client = this.client;
    if (this.state !== 'up' || !client) throw new ZinoError('UPSTREAM_UNAVAILABLE', this.downMessage());
    const sdk = await this.deps.sdk();
    const generation = this.generation;
    try {
      return await client.callTool({ name: tool, arguments: args }, undefined, { signal, timeout: this.config.timeout_s * 1000 });
    } catch (err) {
      // The SDK reports an abort as a timeout: our signal says which it was.
      if (signal.aborted) throw abortError(signal, 'MCP tool call');
      if (err instanceof sdk.McpError) {
        if (err.code === Number(sdk.ErrorCode.RequestTimeout)) {
          throw new ZinoError(
            'TIMEOUT',
            `the MCP server "${this.name}" did not answer ${tool} within ${this.config.timeout_s} s ([mcp.servers.${this.name}] timeout_s)`,
          );
        }
        if (err.code === Number(sdk.ErrorCode.ConnectionClosed)) {
          throw new ZinoError('UPSTREAM_ERROR', `the MCP server "${this.name}" went away during the call to ${tool}; exc restarts it`);
        }
        throw new ZinoError('UPSTREAM_ERROR', `the MCP server "${this.name}" answered ${tool} with an error: ${err.message}`);
      }
      // Anything else is the transport failing (an HTTP server gone): the session is over.
      const reason = describe(err);
      if (generation === this.generation && this.state === 'up') this.fail(generation, `the connection failed: ${reason}`);
      throw new ZinoError('UPSTREAM_UNAVAILABLE', `the MCP server "${this.name}" could not be reached: ${reason}`);
    }
  }

  /** Re-lists the tools of an up server, and tries a down one again now (SIGHUP). */
  reload(): void {
    if (this.state === 'up') this.refresh(this.generation);
    else if (this.state === 'down') {
      clearTimeout(this.retryTimer);
      this.retryTimer = undefined;
      void this.connect();
    }
  }

  /** Ends the session and stops a stdio server (stdin closed, then SIGTERM, then SIGKILL, 2 s apart). Safe to call twice. */
  async close(): Promise<void> {
    this.state = 'closed';
    this.generation++;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    const client = this.client;
    this.client = undefined;
    await client?.close().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const generation = ++this.generation;
    this.state = 'connecting';
    this.changedWhileConnecting = false;
    let client: Client | undefined;
    try {
      const sdk = await this.deps.sdk();
      if (generation !== this.generation) return;
      const transport = this.transport(sdk);
      client = new sdk.Client({ name: 'zino', version: VERSION }, { capabilities: {} });
      const current = client;
      current.onclose = () => this.closed(generation);
      current.onerror = (err) => this.deps.log.debug({ server: this.name, reason: err.message }, 'mcp transport error');
      current.setNotificationHandler(sdk.ToolListChangedNotificationSchema, () => {
        this.deps.log.info({ server: this.name }, 'mcp server says its tools changed');
        this.refresh(generation);
      });
      this.client = current;
      await current.connect(transport, { timeout: this.config.timeout_s * 1000 });
      const tools = await this.listTools(current);
      if (generation !== this.generation) return;
      this.pid = 'pid' in transport && typeof transport.pid === 'number' ? transport.pid : undefined;
      this.setTools(tools, sdk);
      this.state = 'up';
      this.error = undefined;
      this.upSince = Date.now();
      this.connections++;
      const server = current.getServerVersion();
      this.deps.log.info(
        { server: this.name, tools: tools.map((t) => t.name), pid: this.pid, implementation: server ? `${server.name} ${server.version}` : undefined },
        this.connections > 1 ? 'mcp server reconnected' : 'mcp server connected',
      );
      this.deps.onChange();
      if (this.changedWhileConnecting) this.refresh(generation);
    } catch (err) {
      if (generation !== this.generation) return;
      this.fail(generation, describe(err));
    }
  }

  private transport(sdk: McpSdk) {
    const { config } = this;
    if (config.url !== '') return new sdk.StreamableHTTPClientTransport(new URL(config.url));
    const transport = new sdk.StdioClientTransport({
      command: config.command,
      args: [...config.args],
      env: { ...config.env },
      ...(config.cwd === '' ? {} : { cwd: config.cwd }),
      stderr: 'pipe',
    });
    this.stderr.follow(transport.stderr);
    return transport;
  }

  /** The server's tools, every page, filtered by the allow list. */
  private async listTools(client: Client): Promise<Tool[]> {
    const all: Tool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const result = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: this.config.timeout_s * 1000 });
      all.push(...result.tools);
      cursor = result.nextCursor;
      if (cursor === undefined) break;
    }
    const allow = this.config.tools;
    if (allow === null) return all;
    const missing = allow.filter((name) => !all.some((t) => t.name === name));
    if (missing.length > 0) this.deps.log.warn({ server: this.name, missing }, 'tools in the allow list that the mcp server does not have');
    return all.filter((t) => allow.includes(t.name));
  }

  private setTools(tools: Tool[], sdk: McpSdk): void {
    this.tools = tools;
    this.checker = new ArgumentChecker(sdk);
  }

  /** Re-lists the tools (list_changed, SIGHUP); a refresh asked for during one runs after it. */
  private refresh(generation: number): void {
    if (this.refreshing) {
      this.refreshAgain = true;
      return;
    }
    this.refreshing = (async () => {
      do {
        this.refreshAgain = false;
        const client = this.client;
        if (generation === this.generation && this.state === 'connecting') this.changedWhileConnecting = true;
        if (!client || generation !== this.generation || this.state !== 'up') return;
        try {
          const tools = await this.listTools(client);
          if (generation !== this.generation) return;
          this.setTools(tools, await this.deps.sdk());
          this.deps.log.info({ server: this.name, tools: tools.map((t) => t.name) }, 'mcp tools listed again');
          this.deps.onChange();
        } catch (err) {
          this.deps.log.warn({ server: this.name, reason: describe(err) }, 'mcp tools could not be listed again');
        }
      } while (this.refreshAgain);
    })().finally(() => (this.refreshing = undefined));
  }

  /** The transport closed: for an up session, the server went away. */
  private closed(generation: number): void {
    if (generation !== this.generation || this.state !== 'up') return;
    this.fail(generation, 'the server closed the connection');
  }

  private fail(generation: number, reason: string): void {
    if (generation !== this.generation) return;
    this.generation++;
    const tail = this.stderr.tail();
    this.error = tail === '' ? reason : `${reason}; its last stderr: ${tail}`;
    const wasUp = this.state === 'up';
    this.state = 'down';
    this.tools = [];
    this.pid = undefined;
    const client = this.client;
    this.client = undefined;
    void client?.close().catch(() => undefined);
    if (this.upSince > 0 && Date.now() - this.upSince >= STABLE_MS) this.failures = 0;
    this.upSince = 0;
    this.failures++;
    const delay = Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** Math.min(this.failures - 1, 16));
    this.retryAt = Date.now() + delay;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.connect();
    }, delay);
    this.retryTimer.unref();
    this.deps.log.warn(
      { server: this.name, reason: this.error, retryInMs: delay, failures: this.failures },
      wasUp ? 'mcp server went down' : 'mcp server could not start',
    );
    this.deps.onChange();
  }
}

/** A failure as one line: the system error code of a spawn, else the message. */
function describe(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  if (typeof e?.code === 'string' && typeof e.syscall === 'string' && e.syscall.startsWith('spawn')) {
    return `cannot start ${String(e.path ?? 'the command')}: ${e.code}${e.code === 'ENOENT' ? ' (is it installed, and in PATH?)' : ''}`;
  }
  return err instanceof Error ? err.message : String(err);
}
