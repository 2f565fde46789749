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
 * to {@link RETRY_MS} with each try that gets no lasting stream. While nothing listens on
 * sys's socket, a request that finds no stream has it tried at once rather than when the
 * wait is over (so a daemon that started before sys, as under `zino up`, has the stream
 * soon after sys listens, not a second later: requests already under way by then still
 * ask sys). A sys that is there but refuses (OVERLOADED, SHUTTING_DOWN) or ends the
 * stream soon after it opened is left alone for the whole wait. A sys that does not know
 * `watch` (UNKNOWN_TYPE, or an error frame without a code: one written from the contract
 * alone) is asked per request, and `watch` is tried again only after
 * {@link UNSUPPORTED_RETRY_MS}.
 */
import { clientOptions, stream, ZinoError, type Logger, type ResolvedConfig } from '../../runtime/index.js';

/** The daemon's {@link WatchWaits}: at most a second between tries while sys is away ... */
export const RETRY_MS = 1000;
/** ... the first after 25 ms, so that a daemon started beside sys has the stream soon after sys is up ... */
export const FIRST_RETRY_MS = 25;
/** ... and a minute after a sys that does not know `watch`. */
export const UNSUPPORTED_RETRY_MS = 60_000;

/** The prompt sys last sent on the open `watch` stream, if one is open. */
export class PromptWatch {
  private kept: string | undefined;
  private readonly controller = new AbortController();
  /** Ends the wait before the next try: set only while waiting after a try found nothing listening on sys's socket. */
  private wake: (() => void) | undefined;

  constructor(
    private readonly config: Readonly<ResolvedConfig>,
    private readonly log: Logger,
    private readonly waits: WatchWaits = {
      firstRetryMs: FIRST_RETRY_MS,
      retryMs: RETRY_MS,
      unsupportedRetryMs: UNSUPPORTED_RETRY_MS,
    },
  ) {
    void this.run();
  }

  /**
   * The current prompt while the stream is open; `undefined`: ask sys. Asked while there is no
   * stream and the last try found nothing listening on sys's socket, it has the stream tried
   * again now rather than when the wait is over: a request that finds none costs sys a `get`
   * and a 5 KB prompt, and until the stream opens so does every request after it. At most one
   * try runs at a time, so a sys that stays away costs one failed connect per request (whose
   * own `get` fails too).
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
    /** Tries in a row that got no lasting stream. */
    let misses = 0;
    while (!signal.aborted) {
      const outcome: TryOutcome = { absent: false, unsupported: false, lastedMs: undefined };
      /** When this try's stream brought its first prompt. */
      let since: number | undefined;
      try {
        // The raw frames (not an Endpoint's): whether a refusal carries a code at all tells a contract-only sys apart.
        for await (const frame of stream(this.config.sys.socket, { type: 'watch' }, options)) {
          if (frame.type === 'system_prompt' && typeof frame.content === 'string') {
            if (this.kept === undefined) this.log.debug('system prompt kept from sys (watch)');
            this.kept = frame.content;
            since ??= performance.now();
          } else if (frame.type === 'error') {
            outcome.unsupported = frame.code === undefined || frame.code === 'UNKNOWN_TYPE';
            this.log.debug({ code: frame.code, reason: frame.message, unsupported: outcome.unsupported }, 'sys refused watch; asking it per request');
          }
        }
      } catch (err) {
        if (signal.aborted) break;
        outcome.absent = isAbsent(err);
        this.log.debug({ reason: (err as Error).message }, 'no watch on sys; asking it per request');
      }
      // The stream is over: nothing kept is trusted any more.
      this.kept = undefined;
      if (since !== undefined) outcome.lastedMs = performance.now() - since;
      const next = nextTry(outcome, misses, this.waits);
      misses = next.misses;
      this.log.debug({ waitMs: next.waitMs, wakeable: next.wakeable }, 'watch on sys: next try after a wait');
      await this.pause(next.waitMs, signal, next.wakeable);
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

/** How a try at the stream went. */
export interface TryOutcome {
  /** Nothing listened on sys's socket (ENOENT, ECONNREFUSED). */
  absent: boolean;
  /** sys refused `watch` as one that does not know it (UNKNOWN_TYPE, or no code at all). */
  unsupported: boolean;
  /** How long the stream stayed open after its first prompt, in ms; undefined: no prompt came. */
  lastedMs: number | undefined;
}

/** The waits {@link PromptWatch} keeps between tries, in ms. */
export interface WatchWaits {
  /** The first wait after a try that got no lasting stream; it doubles with each such try in a row ... */
  firstRetryMs: number;
  /** ... up to this. A stream open this long after its first prompt counts as lasting. */
  retryMs: number;
  /** The wait after a sys that does not know `watch`. */
  unsupportedRetryMs: number;
}

/**
 * When to try again after a try at the stream, and whether a request may cut the wait
 * short: only when nothing listened (a sys that is there and refused, or closed a stream
 * soon after opening it, would only refuse or close again). `misses` counts the tries in a
 * row that got no lasting stream, this one included in the result.
 */
export function nextTry(outcome: TryOutcome, misses: number, waits: WatchWaits): { waitMs: number; wakeable: boolean; misses: number } {
  if (outcome.unsupported) return { waitMs: waits.unsupportedRetryMs, wakeable: false, misses: misses + 1 };
  const before = outcome.lastedMs !== undefined && outcome.lastedMs >= waits.retryMs ? 0 : misses;
  return {
    waitMs: Math.min(waits.retryMs, waits.firstRetryMs * 2 ** Math.min(before, 16)),
    wakeable: outcome.absent,
    misses: before + 1,
  };
}

/** Whether a try failed because nothing listens on sys's socket (not there yet, or gone), not because a sys that is there is busy. */
function isAbsent(err: unknown): boolean {
  if (!(err instanceof ZinoError) || err.code !== 'UPSTREAM_UNAVAILABLE' || err.detail.phase !== 'connect') return false;
  return err.detail.errno === 'ENOENT' || err.detail.errno === 'ECONNREFUSED';
}
