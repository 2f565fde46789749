/**
 * "waiting for the model… 12 s": a line on stderr, on a terminal only, when an
 * answer has been silent for a moment (the model thinking, or a hung endpoint), so
 * that nobody stares at a blank screen for minutes. It sits after whatever was
 * printed (the cursor is saved and restored, so a half-written line stays as it
 * is), counts the seconds of silence, and disappears at the next output.
 */

/** Where the indicator writes: a stream that says whether it is a terminal. */
export interface IndicatorStream {
  readonly isTTY?: boolean;
  write(text: string): boolean;
}

/** What the answer is waiting for. */
export type WaitingFor = 'model' | 'tool';

/** Options of {@link WaitingIndicator}. */
export interface WaitingOptions {
  /** Off when false whatever the stream is (a collected answer shows nothing until it is whole). @default true */
  enabled?: boolean;
  /** Silence before the line appears, in milliseconds. @default 1500 */
  delayMs?: number;
  /** How often the seconds are updated, in milliseconds. @default 1000 */
  tickMs?: number;
  /** The clock (tests). @default performance.now */
  now?: () => number;
}

/** Save the cursor; restore it and erase to the end of the line (DEC and ANSI sequences every terminal emulator knows). */
const SAVE = '\x1b7';
const RESTORE_AND_ERASE = '\x1b8\x1b[K';

const TEXT: Readonly<Record<WaitingFor, string>> = {
  model: 'waiting for the model…',
  tool: 'waiting for the tool to finish…',
};

/** See the module comment. Does nothing at all unless `out.isTTY`. */
export class WaitingIndicator {
  private readonly enabled: boolean;
  private readonly delayMs: number;
  private readonly tickMs: number;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private shown = false;
  private since = 0;
  private waitingFor: WaitingFor = 'model';

  constructor(
    private readonly out: IndicatorStream,
    options: WaitingOptions = {},
  ) {
    this.enabled = options.enabled !== false && out.isTTY === true;
    this.delayMs = options.delayMs ?? 1500;
    this.tickMs = options.tickMs ?? 1000;
    this.now = options.now ?? (() => performance.now());
  }

  /** Starts watching for silence. */
  start(): void {
    this.activity('model');
  }

  /**
   * Output arrived: the line goes away (before the caller prints anything) and the
   * silence starts over; `next` says what the answer waits for from now on.
   */
  activity(next: WaitingFor = this.waitingFor): void {
    if (!this.enabled) return;
    this.clear();
    this.waitingFor = next;
    this.since = this.now();
    this.timer = setTimeout(() => this.show(), this.delayMs);
    this.timer.unref();
  }

  /** Removes the line and stops watching. Safe to call twice. */
  stop(): void {
    if (!this.enabled) return;
    this.clear();
  }

  private show(): void {
    const seconds = Math.floor((this.now() - this.since) / 1000);
    this.out.write(`${this.shown ? RESTORE_AND_ERASE : SAVE} ${TEXT[this.waitingFor]} ${seconds} s`);
    this.shown = true;
    this.timer = setTimeout(() => this.show(), this.tickMs);
    this.timer.unref();
  }

  private clear(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.shown) this.out.write(RESTORE_AND_ERASE);
    this.shown = false;
  }
}
