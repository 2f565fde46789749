/**
 * The system prompt, kept by the daemon through sys's `watch` stream instead of
 * asked for on every request (one connection and one 5 KB frame fewer per request;
 * docs/benchmarks.md, issue 18).
 *
 * The kept prompt is used only while the stream is open: sys sends the prompt at
 * once and again on every change, and answers a change (`set_soft_memory`, `reload`)
 * only once the new prompt is with the kernel on this stream. A client that saw that
 * answer and then asks the daemon connects after the frame reached the daemon's socket:
 * the daemon reads the frame no later than the loop iteration that accepts the new
 * connection, and the request on it in a later one, so the request gets the new prompt
 * (test/services/prompt-watch.test.ts asks 30 times in a row). When the stream ends (sys stopped, restarted, crashed) the kept prompt
 * is dropped at once and every request asks sys again (`get`), as before, until a new
 * stream is open; the daemon tries again after {@link FIRST_RETRY_MS}, doubling the wait up
 * to {@link RETRY_MS} while sys is away, or at once when a request
 * finds no stream (so a daemon that started before sys, as under `zino up`, has the stream
 * from its second request on, not a second later). A sys that does not know `watch`
 * (UNKNOWN_TYPE, or an error frame without a code: one written from the contract alone)
 * is asked per request, and `watch` is tried again only after {@link UNSUPPORTED_RETRY_MS}.
 */
import { clientOptions, stream, type Logger, type ResolvedConfig } from '../../runtime/index.js';

/** Wait before opening the stream again after it ended or could not be opened, in ms: at most this, ... */
export const RETRY_MS = 1000;
/** ... starting from this and doubling with each try that finds no sys, so that a daemon started beside sys has the stream soon after sys is up. */
export const FIRST_RETRY_MS = 25;
/** Wait before trying `watch` again on a sys that answered UNKNOWN_TYPE, in ms. */
export const UNSUPPORTED_RETRY_MS = 60_000;

/** The prompt sys last sent on the open `watch` stream, if one is open. */
export class PromptWatch {
  private kept: string | undefined;
  private readonly controller = new AbortController();
  /** Ends the wait before the next try: set while waiting after a stream failed or ended, not after a sys without `watch`. */
  private wake: (() => void) | undefined;

  constructor(
    private readonly config: Readonly<ResolvedConfig>,
    private readonly log: Logger,
    /** How long to wait before trying again: first and at most after a stream ended or failed, after a sys that does not know `watch`. */
    private readonly waits: { firstRetryMs: number; retryMs: number; unsupportedRetryMs: number } = {
      firstRetryMs: FIRST_RETRY_MS,
      retryMs: RETRY_MS,
      unsupportedRetryMs: UNSUPPORTED_RETRY_MS,
    },
  ) {
    void this.run();
  }

  /**
   * The current prompt while the stream is open; `undefined`: ask sys. Asked while there is no
   * stream, it has the stream tried again now rather than when the wait is over: a request that
   * finds none costs sys a `get` and a 5 KB prompt, and until the stream opens so does every
   * request after it. At most one try runs at a time, so a sys that stays away costs one failed
   * connect per request (which asks it anyway).
   */
  get current(): string | undefined {
    if (this.kept === undefined) this.wake?.();
    return this.kept;
  }

  /** Closes the stream and stops trying. */
  close(): void {
    this.controller.abort();
    this.kept = undefined;
  }

  private async run(): Promise<void> {
    const { signal } = this.controller;
    const options = clientOptions(this.config, 'sys', { signal });
    /** Tries in a row that got no prompt. */
    let misses = 0;
    while (!signal.aborted) {
      let unsupported = false;
      try {
        // The raw frames (not an Endpoint's): whether a refusal carries a code at all tells a contract-only sys apart.
        for await (const frame of stream(this.config.sys.socket, { type: 'watch' }, options)) {
          if (frame.type === 'system_prompt' && typeof frame.content === 'string') {
            if (this.kept === undefined) this.log.debug('system prompt kept from sys (watch)');
            this.kept = frame.content;
            misses = 0;
          } else if (frame.type === 'error') {
            unsupported = frame.code === undefined || frame.code === 'UNKNOWN_TYPE';
            this.log.debug({ code: frame.code, reason: frame.message, unsupported }, 'sys refused watch; asking it per request');
          }
        }
      } catch (err) {
        this.log.debug({ reason: (err as Error).message }, 'no watch on sys; asking it per request');
      }
      // The stream is over: nothing kept is trusted any more.
      this.kept = undefined;
      const wait = unsupported ? this.waits.unsupportedRetryMs : Math.min(this.waits.retryMs, this.waits.firstRetryMs * 2 ** Math.min(misses++, 16));
      await this.pause(wait, signal, !unsupported);
    }
  }

  /** Waits `ms`, or until closed, or (when `wakeable`) until a request finds no stream ({@link current}). */
  private pause(ms: number, signal: AbortSignal, wakeable: boolean): Promise<void> {
    // Closed while a stream was open: the stream ended for that, and there is nothing to wait for.
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      if (wakeable) this.wake = done;
    });
  }
}
