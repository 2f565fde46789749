/** Turns an openai SDK error into a ZINO error whose message tells the operator what happened. */
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { ZinoError } from '../../runtime/index.js';

/** What an error message names: the endpoint, and where the key came from. */
export interface ErrorHints {
  baseUrl: string;
  /** Where rtr's key came from, in words ("LLM_API_KEY in rtr's environment", "no key", …). */
  keySource: string;
}

/** Hints for statuses whose cause is usually the configuration. */
function hint(status: number, hints: ErrorHints): string {
  switch (status) {
    case 401:
      return (
        ` (rtr sent ${hints.keySource === 'no key' ? 'no key' : `the key from ${hints.keySource}`}. rtr reads the key itself: set [api] key_file,` +
        ' or LLM_API_KEY in the environment of `npm start` / `zino up` / the zino-rtr unit (not of `zino ask`), then restart)'
      );
    case 403:
      return ' (check that the API key may use this model)';
    case 404:
      return ' (check [api] base_url and [service] model)';
    default:
      return '';
  }
}

/** Maps `err` (from one attempt) to a ZinoError; `attempts` is how many were made. */
export function toZinoError(err: unknown, hints: ErrorHints, attempts: number): ZinoError {
  if (err instanceof ZinoError) return err;
  const baseUrl = hints.baseUrl;
  const after = attempts > 1 ? ` (after ${attempts} attempts)` : '';
  if (err instanceof APIUserAbortError) return new ZinoError('CANCELLED', 'the LLM request was cancelled');
  if (err instanceof APIConnectionTimeoutError) return new ZinoError('TIMEOUT', `the LLM API at ${baseUrl} did not answer in time${after}`, { cause: err });
  if (err instanceof APIConnectionError) {
    return new ZinoError('UPSTREAM_UNAVAILABLE', `cannot reach the LLM API at ${baseUrl}: ${rootCause(err)}${after}`, { cause: err });
  }
  if (err instanceof APIError && typeof err.status === 'number') {
    const body = err.error as { message?: unknown } | undefined;
    const apiMessage = typeof body?.message === 'string' && body.message !== '' ? body.message : err.message;
    return new ZinoError('UPSTREAM_ERROR', `the LLM API answered ${err.status}: ${apiMessage}${hint(err.status, hints)}${after}`, { cause: err });
  }
  return new ZinoError('UPSTREAM_ERROR', `the LLM call failed: ${rootCause(err)}${after}`, { cause: err });
}

/** The innermost cause of a fetch failure: an errno code (ECONNREFUSED) or its message. */
function rootCause(err: unknown): string {
  let current: unknown = err;
  let text = err instanceof Error ? err.message : String(err);
  for (let depth = 0; current instanceof Error && depth < 5; depth++) {
    const code = (current as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return code;
    if (current.message) text = current.message;
    current = current.cause;
  }
  return text;
}
