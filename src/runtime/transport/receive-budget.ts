/**
 * The bytes a service holds in requests it is still receiving, bounded across all
 * its connections. Without it, `max_connections` clients stalling in the middle of
 * `max_frame_bytes` frames could make one service hold both multiplied (16 GiB by
 * default). Each connection's first {@link FREE_BYTES_PER_CONNECTION} bytes are not
 * counted, so ordinary requests (a ping, a question) never wait on the budget;
 * only large frames share it. When the count falls back to zero after a large peak,
 * the memory is reclaimed (reclaim.ts).
 */
import { RECLAIM_AFTER_BYTES, Reclaimer } from './reclaim.js';

/** Bytes of every connection's request that the budget does not count. */
export const FREE_BYTES_PER_CONNECTION = 64 * 1024;

/** The shared budget of one server. */
export class ReceiveBudget {
  private held = 0;
  /** The bound in effect: `limit`, raised to `maxFrameBytes` when smaller, so one largest frame always fits. */
  readonly limitBytes: number;

  private readonly reclaimer: Reclaimer;

  constructor(limit: number, maxFrameBytes: number, onReclaim?: (heldPeakBytes: number) => void) {
    this.limitBytes = Math.max(limit, maxFrameBytes);
    this.reclaimer = new Reclaimer(Math.min(RECLAIM_AFTER_BYTES, this.limitBytes / 2), onReclaim);
  }

  /** Bytes counted now. */
  get heldBytes(): number {
    return this.held;
  }

  /**
   * Counts a connection's request growing from `before` to `after` received bytes;
   * false (counting nothing) when that would go over the limit.
   */
  grow(before: number, after: number): boolean {
    const add = counted(after) - counted(before);
    if (add === 0) return true;
    if (this.held + add > this.limitBytes) return false;
    this.held += add;
    this.reclaimer.update(this.held);
    return true;
  }

  /** Gives back what a connection with `received` bytes was counted for. */
  release(received: number): void {
    this.held -= counted(received);
    this.reclaimer.update(this.held);
  }

  /** Cancels a pending reclaim (the server is closing). */
  stop(): void {
    this.reclaimer.stop();
  }
}

function counted(received: number): number {
  return Math.max(0, received - FREE_BYTES_PER_CONNECTION);
}
