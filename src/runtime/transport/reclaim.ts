/**
 * Giving the memory of large requests back once they are gone. A received body is
 * an ArrayBuffer outside V8's heap, freed only when a garbage collection finds it
 * dead; and V8 collects when JavaScript allocates, which an idle service does not.
 * After the stalled-frame attack of issue 13 (point 4) a service sat at its peak RSS
 * for as long as nobody called it. So when the bytes of partly received requests
 * fall back to zero after a large peak, one full collection is run a second later.
 *
 * `gc()` is made available the way Jest's `--logHeapUsage` does it: the
 * `--expose-gc` flag set at run time, the function taken from a fresh context.
 * Where that fails, nothing is collected early (V8 collects at the next allocation).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** A peak of at least this many counted bytes since the last collection earns one (or half the budget, when smaller). */
export const RECLAIM_AFTER_BYTES = 8 * 1024 * 1024;
/** Delay between the fall to zero and the collection, in milliseconds. */
const RECLAIM_DELAY_MS = 1000;

let gcFunction: (() => void) | null | undefined;

function collector(): (() => void) | null {
  if (gcFunction === undefined) {
    try {
      setFlagsFromString('--expose-gc');
      const fn: unknown = runInNewContext('gc');
      gcFunction = typeof fn === 'function' ? () => void Reflect.apply(fn, undefined, []) : null;
    } catch {
      gcFunction = null;
    }
  }
  return gcFunction;
}

/** Schedules one collection after large requests are gone (see the module comment). */
export class Reclaimer {
  private peak = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Collections run so far. */
  collections = 0;

  constructor(
    /** Peak that earns a collection. */
    private readonly afterBytes: number,
    private readonly onCollect?: (heldPeakBytes: number) => void,
  ) {}

  /** Reports the bytes held now; a fall to zero after a peak of `afterBytes` schedules a collection. */
  update(heldBytes: number): void {
    this.peak = Math.max(this.peak, heldBytes);
    if (heldBytes > 0 || this.peak < this.afterBytes || this.timer) return;
    this.timer = setTimeout(() => this.collect(), RECLAIM_DELAY_MS);
    this.timer.unref();
  }

  /** Cancels a pending collection. */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private collect(): void {
    this.timer = undefined;
    const peak = this.peak;
    this.peak = 0;
    const gc = collector();
    if (!gc) return;
    gc();
    this.collections++;
    this.onCollect?.(peak);
  }
}
