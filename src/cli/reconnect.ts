/**
 * Riding out a daemon restart in `zino chat`: `zino up` (or systemd) brings a
 * crashed daemon back within a second or so, so a session should wait for it,
 * saying so, rather than die on the first refused connection.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ZinoClient } from '../client/index.js';

/** How long `zino chat` waits for the daemon by default, in seconds. */
export const DEFAULT_RECONNECT_S = 30;
/** Between two pings while waiting, in milliseconds. */
const PING_EVERY_MS = 250;

/** Options of {@link waitForDaemon}. */
export interface WaitOptions {
  /** How long to wait, in milliseconds. */
  maxMs: number;
  /** Stops the wait (Ctrl-C). */
  signal?: AbortSignal;
  /** Where to say what is happening. */
  say: (line: string) => void;
  /** Why the daemon was not reached (ECONNREFUSED, …), for the first line. */
  reason: string;
}

/** How the wait ended. */
export type WaitOutcome = 'back' | 'gave-up' | 'stopped';

/** Pings the daemon until it answers, the time is up, or `signal` stops the wait. */
export async function waitForDaemon(client: ZinoClient, options: WaitOptions): Promise<WaitOutcome> {
  const socket = client.socket('daemon');
  const seconds = Math.round(options.maxMs / 100) / 10;
  options.say(`zino: the daemon at ${socket} is not answering (${options.reason}); waiting up to ${seconds} s for it to come back (Ctrl-C to stop waiting)…`);
  const deadline = performance.now() + options.maxMs;
  for (;;) {
    if (options.signal?.aborted) return 'stopped';
    try {
      await client.ping('daemon', { timeoutMs: 1000, signal: options.signal });
      return 'back';
    } catch {
      if (options.signal?.aborted) return 'stopped';
    }
    const left = deadline - performance.now();
    if (left <= 0) return 'gave-up';
    try {
      await sleep(Math.min(PING_EVERY_MS, left), undefined, options.signal ? { signal: options.signal } : {});
    } catch {
      return 'stopped';
    }
  }
}
