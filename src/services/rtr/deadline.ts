/**
 * The one bound on a whole LLM request, `[rtr] timeout`: model detection, every
 * attempt, and the waits between retries all count against it. The caller's signal
 * combined with a plain timer (cleared by `clear()`) rather than AbortSignal.timeout
 * inside AbortSignal.any, which Node 20 may collect before it fires.
 */
import { ZinoError } from '../../runtime/index.js';

/** A caller's signal bounded by a deadline. */
export interface Deadline {
  /** Aborted when the caller goes away (its reason) or the time is up (a TIMEOUT ZinoError). */
  readonly signal: AbortSignal;
  /** True once the time ran out before the caller went away. */
  expired(): boolean;
  /** Milliseconds left (0 when expired). */
  remainingMs(): number;
  /** Stops the timer and detaches from the caller's signal. */
  clear(): void;
}

/** Bounds `caller` by `timeoutMs` from now; `timeoutError` is the abort reason when the time runs out. */
export function deadline(caller: AbortSignal, timeoutMs: number, timeoutError: () => ZinoError): Deadline {
  const controller = new AbortController();
  const ends = performance.now() + timeoutMs;
  let expired = false;
  const onAbort = (): void => controller.abort(caller.reason);
  caller.addEventListener('abort', onAbort, { once: true });
  if (caller.aborted) onAbort();
  const timer = setTimeout(() => {
    expired = true;
    controller.abort(timeoutError());
  }, timeoutMs);
  return {
    signal: controller.signal,
    expired: () => expired && !caller.aborted,
    remainingMs: () => Math.max(0, ends - performance.now()),
    clear: () => {
      clearTimeout(timer);
      caller.removeEventListener('abort', onAbort);
    },
  };
}

/** Waits for `promise`, but no longer than `signal` allows (rejecting with its reason). */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
