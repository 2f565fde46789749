/**
 * Requests on the same channel run one at a time, in arrival order, so a channel's
 * history stays coherent; different channels run in parallel. Waiting can be
 * abandoned (the client left): the request then gives up its turn without
 * breaking the order of those behind it.
 */
import { abortError } from '../../runtime/index.js';

/** A FIFO lock per key. */
export class ChannelLock {
  private readonly tails = new Map<string, Promise<void>>();

  /** Number of channels with a request running or waiting. */
  get size(): number {
    return this.tails.size;
  }

  /** Waits for the channel's turn; the returned function ends it. */
  async acquire(channel: string, signal: AbortSignal): Promise<() => void> {
    const previous = this.tails.get(channel) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => mine);
    this.tails.set(channel, tail);
    // Turns are promises that only ever resolve, so these chains cannot reject.
    void tail.then(() => {
      if (this.tails.get(channel) === tail) this.tails.delete(channel);
    });
    try {
      await waitOrAbort(previous, signal);
    } catch (err) {
      // Give up our turn as soon as it comes, so whoever queued behind us still runs in order.
      void previous.then(release);
      throw err;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      release();
    };
  }
}

function waitOrAbort(promise: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(abortError(signal, 'request'));
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(abortError(signal, 'request'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
    );
  });
}
