/**
 * Giving memory back to the system when a service stops being busy.
 *
 * - **Large requests** ({@link Reclaimer}). A received body is an ArrayBuffer outside V8's
 *   heap, freed only when a garbage collection finds it dead; and V8 collects when JavaScript
 *   allocates, which an idle service does not. After the stalled-frame attack of issue 13
 *   (point 4) a service sat at its peak RSS for as long as nobody called it. So when the bytes
 *   of partly received requests fall back to zero after a large peak, one full collection is
 *   run a second later.
 * - **A burst of requests** ({@link IdleCompactor}). The objects of many concurrent requests
 *   are promoted to V8's old generation, spread over many pages, and die there. A full
 *   collection frees them but keeps every page that still holds one live object, and V8's own
 *   memory reducer, which compacts, runs only some seconds later if at all (issue 18: after the
 *   benchmark's 200 concurrent streams the seven services held 200 MB for a minute in one run of
 *   two). So a service whose old generation has grown since it last compacted, and that has
 *   had no open connection for five seconds, runs one compacting collection: the live objects
 *   are moved together and the emptied pages go back to the system. Not sooner: the next
 *   few hundred requests after a compaction cost more CPU (V8 collects a heap that small more
 *   often until it has grown again), so a workload with shorter lulls between its bursts is
 *   left to V8's own pace.
 *
 * `gc()` is made available the way Jest's `--logHeapUsage` does it: the
 * `--expose-gc` flag set at run time, the function taken from a fresh context.
 * Where that fails, nothing is collected early (V8 collects at the next allocation).
 */
import { createRequire } from 'node:module';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import type { Logger } from '../log.js';

/** Loads `node:vm` when `gc()` is first wanted, not at start: seven services start at once (docs/benchmarks.md, round 13). */
const requireBuiltin = createRequire(import.meta.url);

/** A peak of at least this many counted bytes since the last collection earns one (or half the budget, when smaller). */
export const RECLAIM_AFTER_BYTES = 8 * 1024 * 1024;
/** Delay between the fall to zero and the collection, in milliseconds. */
const RECLAIM_DELAY_MS = 1000;
/**
 * Growth of V8's committed old generation since the last compaction that earns one: 4 MiB,
 * or a quarter of what it was then when that is more. A compaction copies every live object,
 * so a service with a large live heap (mem with many memories) compacts less often.
 */
const COMPACT_AFTER_GROWTH_BYTES = 4 * 1024 * 1024;
const COMPACT_AFTER_GROWTH_RATIO = 0.25;
/** Time without an open connection before the compaction, in milliseconds. */
const COMPACT_AFTER_IDLE_MS = 5000;

let gcFunction: (() => void) | null | undefined;

function collector(): (() => void) | null {
  if (gcFunction === undefined) {
    try {
      setFlagsFromString('--expose-gc');
      const { runInNewContext } = requireBuiltin('node:vm') as typeof import('node:vm');
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

/**
 * Whether the `node` command line set `--compact-on-every-full-gc` (either way): then it is
 * left as given. (`NODE_OPTIONS` cannot carry it: Node refuses the flag there.)
 */
const compactFlagGiven = process.execArgv.some((arg) => /^--(no-)?compact[-_]on[-_]every[-_]full[-_]gc/.test(arg));

/**
 * Runs one full collection that also compacts V8's old generation (every page with free
 * space is evacuated, not only the fragmented ones V8's heuristics pick). False when `gc()`
 * is not available. V8 picks the pages to evacuate when marking starts: if its incremental
 * marking had already started, this collection finishes that cycle with the pages picked
 * then and may give back less (the debug line's sizes show it; the next one catches up).
 */
export function compactHeap(): boolean {
  const gc = collector();
  if (!gc) return false;
  if (compactFlagGiven) {
    gc();
    return true;
  }
  setFlagsFromString('--compact-on-every-full-gc');
  try {
    gc();
  } finally {
    setFlagsFromString('--no-compact-on-every-full-gc');
  }
  return true;
}

/**
 * Bytes V8 has committed to its old generation: every space but the young generation, whose
 * size V8 may grow or shrink at any collection (a compaction can leave it larger than before).
 */
export function committedOldBytes(): number {
  let bytes = 0;
  for (const space of getHeapSpaceStatistics()) if (!space.space_name.startsWith('new_')) bytes += space.space_size;
  return bytes;
}

/** Options of {@link IdleCompactor}. */
export interface IdleCompactorOptions {
  /** Open connections now. */
  openConnections: () => number;
  /** Growth of the committed old generation since the last compaction that earns one, at least. @default 4 MiB */
  afterGrowthBytes?: number;
  /** The same as a share of the old generation after the last compaction, when that is more. @default 0.25 */
  afterGrowthRatio?: number;
  /** Time without an open connection before compacting, in milliseconds. @default 5000 */
  afterIdleMs?: number;
  /** The old generation's committed bytes now. @default committedOldBytes */
  measure?: () => number;
  /** Called after each compaction with the old generation's committed bytes before and after, and the time it took. */
  onCompact?: (compaction: { beforeBytes: number; afterBytes: number; ms: number }) => void;
}

/**
 * Compacts the heap once a server has been without connections for a while, when its old
 * generation has grown since it last did (see the module comment). One timer at most, armed
 * when the last connection closes; a connection opened meanwhile postpones it to the next
 * idle moment.
 */
export class IdleCompactor {
  private timer: NodeJS.Timeout | undefined;
  private idleSince = 0;
  private baseline: number;
  private readonly afterGrowthBytes: number;
  private readonly afterGrowthRatio: number;
  private readonly afterIdleMs: number;
  private readonly measure: () => number;
  /** Compactions run so far. */
  compactions = 0;

  constructor(private readonly options: IdleCompactorOptions) {
    this.afterGrowthBytes = options.afterGrowthBytes ?? COMPACT_AFTER_GROWTH_BYTES;
    this.afterGrowthRatio = options.afterGrowthRatio ?? COMPACT_AFTER_GROWTH_RATIO;
    this.afterIdleMs = options.afterIdleMs ?? COMPACT_AFTER_IDLE_MS;
    this.measure = options.measure ?? committedOldBytes;
    this.baseline = this.measure();
  }

  /** The server's last open connection has closed. */
  idle(): void {
    this.idleSince = performance.now();
    if (!this.timer) this.arm(this.afterIdleMs);
  }

  /** Cancels a pending compaction (the server is closing). */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(delayMs: number): void {
    this.timer = setTimeout(() => this.check(), delayMs);
    this.timer.unref();
  }

  private check(): void {
    this.timer = undefined;
    // Busy again: the next close of its last connection arms the timer anew.
    if (this.options.openConnections() > 0) return;
    const idleMs = performance.now() - this.idleSince;
    if (idleMs < this.afterIdleMs) {
      this.arm(this.afterIdleMs - idleMs);
      return;
    }
    const before = this.measure();
    if (before - this.baseline < Math.max(this.afterGrowthBytes, this.baseline * this.afterGrowthRatio)) return;
    const started = performance.now();
    if (!compactHeap()) return;
    const ms = performance.now() - started;
    this.baseline = this.measure();
    this.compactions++;
    this.options.onCompact?.({ beforeBytes: before, afterBytes: this.baseline, ms });
  }
}

/** The `onCompact` of a server's compactor: one debug line with the sizes before and after, and the time it took. */
export function logCompaction(log: Logger): NonNullable<IdleCompactorOptions['onCompact']> {
  return ({ beforeBytes, afterBytes, ms }) =>
    log.debug({ oldGenBytesBefore: beforeBytes, oldGenBytesAfter: afterBytes, ms: Math.round(ms * 10) / 10 }, 'heap compacted after a busy spell');
}
