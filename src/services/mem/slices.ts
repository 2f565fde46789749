/**
 * Long work on mem's only thread, cut into slices: the worker checks {@link Slicer.due}
 * between small steps and, when its slice has used its time, awaits
 * {@link Slicer.pause}, which lets the event loop accept connections and answer
 * requests before the work goes on. So no request waits behind the work for longer
 * than one slice (plus the one step that was running).
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { ZinoError } from '../../runtime/index.js';

/** Time one slice may take before the worker yields, in milliseconds. */
export const SLICE_MS = 10;

/** Thrown by {@link Slicer.pause} once the work was asked to stop. */
export class WorkStopped extends ZinoError {
  constructor() {
    super('SHUTTING_DOWN', 'mem is shutting down');
  }
}

/** See the module comment. */
export class Slicer {
  private started = performance.now();
  /** Times the worker has yielded. */
  pauses = 0;

  constructor(
    private readonly sliceMs = SLICE_MS,
    private readonly stopped: () => boolean = () => false,
  ) {}

  /** True when the current slice has used its time. */
  get due(): boolean {
    return performance.now() - this.started >= this.sliceMs;
  }

  /** Yields to the event loop (after the I/O callbacks that are waiting); throws {@link WorkStopped} when asked to stop. */
  async pause(): Promise<void> {
    await nextTurn();
    this.pauses++;
    this.started = performance.now();
    if (this.stopped()) throw new WorkStopped();
  }
}
