/**
 * Bounds of one length on many short-lived things (a request's read timeout on every
 * connection, a connect timeout on every hop), without a timer for each.
 *
 * A `setTimeout` that is cleared before it fires is cheap only while other timers of
 * the same length are pending. When it was the only one, Node drops that length's
 * list, and the next `setTimeout` builds it again, inserts it into the timer queue
 * and re-arms libuv's timer: about 2.5 % of a relay hop's CPU in a profile (issue 18,
 * round 10), since the suite's hops come one after another. Here one timer per
 * length serves every pending bound: entries of one length fall due in the order
 * they were added, so the oldest is the next due, and the timer is re-armed for it
 * only when it fires.
 *
 * The timer is unref'd: a pending bound never keeps a process alive by itself (what
 * it bounds, a socket, does while it is open).
 */

/** A pending bound; pass it to {@link clearDeadline} once what it bounds is done. */
export interface Deadline {
  readonly at: number;
  readonly expire: () => void;
  readonly owner: Deadlines;
}

/** Bounds of `ms` milliseconds each. */
export class Deadlines {
  /** Pending, in the order added: the order they fall due. */
  private readonly pending = new Set<Deadline>();
  private timer: NodeJS.Timeout | undefined;

  constructor(readonly ms: number) {}

  /** Calls `expire` once `ms` have passed, unless {@link clear} comes first. */
  add(expire: () => void): Deadline {
    const deadline: Deadline = { at: performance.now() + this.ms, expire, owner: this };
    this.pending.add(deadline);
    if (this.timer === undefined) this.arm(this.ms);
    return deadline;
  }

  /** Forgets `deadline` (a no-op when it has fired or was cleared). The timer stays armed until it next fires. */
  clear(deadline: Deadline | undefined): void {
    if (deadline) this.pending.delete(deadline);
  }

  /** Bounds not yet due nor cleared. */
  get size(): number {
    return this.pending.size;
  }

  private arm(ms: number): void {
    // An expire that adds a bound of this length during a sweep has armed the timer already.
    clearTimeout(this.timer);
    this.timer = setTimeout(this.sweep, ms);
    this.timer.unref();
  }

  private readonly sweep = (): void => {
    this.timer = undefined;
    const now = performance.now();
    for (const deadline of this.pending) {
      if (deadline.at > now) {
        this.arm(Math.max(1, Math.ceil(deadline.at - now)));
        return;
      }
      this.pending.delete(deadline);
      try {
        deadline.expire();
      } catch (err) {
        // One bound's failure must not stop the others; surface it as an uncaught error would have from its own timer.
        queueMicrotask(() => {
          throw err;
        });
      }
    }
  };
}

/**
 * Lengths given a shared {@link Deadlines}: the first this many the process uses (in practice
 * the configured ones, used from the first request on). Past them a length, such as one
 * computed per call from what is left of a request's time, gets a timer of its own.
 */
const SHARED_LENGTHS = 8;
const byLength = new Map<number, Deadlines>();

/**
 * Calls `expire` after `ms` milliseconds unless {@link clearDeadline} comes first: through
 * the process's shared {@link Deadlines} of that length (one timer for all of them), or,
 * past {@link SHARED_LENGTHS} lengths, one of its own (a length computed per call, such
 * as what is left of a request's time, would otherwise grow the map without bound).
 */
export function startDeadline(ms: number, expire: () => void): Deadline {
  let deadlines = byLength.get(ms);
  if (deadlines === undefined) {
    deadlines = new Deadlines(ms);
    if (byLength.size < SHARED_LENGTHS) byLength.set(ms, deadlines);
  }
  return deadlines.add(expire);
}

/** Cancels `deadline` (a no-op when it has fired, was cleared, or is undefined). */
export function clearDeadline(deadline: Deadline | undefined): void {
  deadline?.owner.clear(deadline);
}
