/**
 * When and how long to wait before retrying an LLM call: connection errors, 429
 * and 5xx are retried with exponential backoff and jitter, honouring the server's
 * `retry-after`; other errors fail at once.
 */
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';

/** Longest `retry-after` we are willing to wait, in milliseconds. */
export const MAX_RETRY_AFTER_MS = 60_000;
/** First backoff step, in milliseconds; doubles per attempt. */
export const BASE_BACKOFF_MS = 500;
/** Largest backoff step, in milliseconds. */
export const MAX_BACKOFF_MS = 8_000;

/** Whether an error may be retried, and after how long the server asked us to wait. */
export interface RetryDecision {
  retryable: boolean;
  /** From `retry-after-ms` / `retry-after`, when the server sent one. */
  retryAfterMs?: number | undefined;
}

/** Classifies an error from the openai SDK. */
export function classify(err: unknown): RetryDecision {
  if (err instanceof APIUserAbortError) return { retryable: false };
  if (err instanceof APIConnectionTimeoutError || err instanceof APIConnectionError) return { retryable: true };
  if (err instanceof APIError && typeof err.status === 'number') {
    const retryAfterMs = parseRetryAfter(err.headers as Headers | undefined);
    if (retryAfterMs !== undefined && retryAfterMs > MAX_RETRY_AFTER_MS) return { retryable: false, retryAfterMs };
    return { retryable: err.status === 429 || err.status >= 500, retryAfterMs };
  }
  return { retryable: false };
}

/** Reads `retry-after-ms` or `retry-after` (seconds or an HTTP date) in milliseconds. */
export function parseRetryAfter(headers: Headers | undefined, now = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '' && Number.isFinite(Number(ms))) return Math.max(0, Number(ms));
  const value = headers.get('retry-after');
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Delay before retry number `attempt` (0-based): the server's wish, else backoff with jitter. */
export function retryDelayMs(attempt: number, decision: RetryDecision, random: () => number = Math.random): number {
  if (decision.retryAfterMs !== undefined) return decision.retryAfterMs;
  const step = Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** attempt);
  // "Equal jitter": at least half the step, so retries never stampede at once.
  return step / 2 + random() * (step / 2);
}
