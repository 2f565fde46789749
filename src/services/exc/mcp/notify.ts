/**
 * Telling sys that the MCP tools changed, so that the system prompt lists what
 * exc can call now: sys's `reload` (which asks exc for `list_tools`). Changes that
 * come together (servers connecting at start) make one reload; a sys that cannot be
 * reached is asked again every second, five times (it also asks exc itself when it
 * starts, so a sys that starts later misses nothing).
 */
import { Endpoint, clientOptions, type Logger, type ResolvedConfig } from '../../../runtime/index.js';
import { SYS } from '../../../protocol/sys.js';

const DEBOUNCE_MS = 100;
const RETRY_MS = 1000;
const TRIES = 5;
const TIMEOUT_MS = 5000;

/** Sends sys a `reload` after tool changes, one at a time. */
export class ToolsChangedNotifier {
  private readonly sys: Endpoint<typeof SYS>;
  private timer: NodeJS.Timeout | undefined;
  private sending = false;
  private pending = false;
  private closed = false;

  constructor(
    config: Readonly<ResolvedConfig>,
    private readonly log: Logger,
  ) {
    this.sys = new Endpoint(SYS, config.sys.socket, clientOptions(config, 'sys', { timeoutMs: TIMEOUT_MS }));
  }

  /** The tools changed: sys will be told (soon, once for a burst). */
  changed(): void {
    this.pending = true;
    this.schedule(DEBOUNCE_MS, 1);
  }

  /** Stops telling. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
  }

  private schedule(ms: number, attempt: number): void {
    if (this.closed || this.sending) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.send(attempt), ms);
    this.timer.unref();
  }

  private async send(attempt: number): Promise<void> {
    this.sending = true;
    this.pending = false;
    let ok = false;
    try {
      await this.sys.request('reload', {});
      ok = true;
      this.log.info({}, 'sys told that the mcp tools changed');
    } catch (err) {
      const last = attempt >= TRIES;
      this.log[last ? 'warn' : 'debug']({ reason: (err as Error).message, attempt }, 'sys could not be told that the mcp tools changed');
      if (!last) this.pending = true;
    } finally {
      this.sending = false;
    }
    // A change during the call, or a failed try: once more (a new change starts the tries over).
    if (this.pending) this.schedule(ok ? DEBOUNCE_MS : RETRY_MS, ok ? 1 : attempt + 1);
  }
}
