/**
 * Errors as data: one base class with a stable machine-readable `code`.
 * Callers branch on `code`, never on `message`. Every error that reaches the
 * wire becomes `{"type":"error","message":…,"code":…}`; stacks stay in the log.
 */

/** Stable error codes used on the wire (`code` field of an error frame) and in logs. */
export type ErrorCode =
  | 'FRAME_TOO_LARGE'
  | 'INVALID_FRAME'
  | 'INVALID_REQUEST'
  | 'UNKNOWN_TYPE'
  | 'UPSTREAM_UNAVAILABLE'
  | 'UPSTREAM_ERROR'
  | 'CONNECTION_CLOSED'
  | 'CANCELLED'
  | 'TIMEOUT'
  | 'NOT_CONFIGURED'
  | 'ADDRESS_IN_USE'
  | 'CONFIG'
  | 'SHUTTING_DOWN'
  | 'OVERLOADED'
  | 'INTERNAL';

/** Base class of every error ZINO raises on purpose. */
export class ZinoError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ZinoError';
    this.code = code;
  }
}

/** A peer broke the framing rules: oversize length, bad UTF-8, bad JSON, not an object. */
export class ProtocolError extends ZinoError {
  constructor(code: 'FRAME_TOO_LARGE' | 'INVALID_FRAME', message: string) {
    super(code, message);
    this.name = 'ProtocolError';
  }
}

/** A well-framed request whose fields are missing or of the wrong type. */
export class InvalidRequestError extends ZinoError {
  constructor(message: string) {
    super('INVALID_REQUEST', message);
    this.name = 'InvalidRequestError';
  }
}

/** A remote service answered with an error frame; `code` is the remote's code when it sent one. */
export class RemoteError extends ZinoError {
  readonly frame: Readonly<Record<string, unknown>>;
  constructor(frame: Record<string, unknown>) {
    const message = typeof frame.message === 'string' ? frame.message : 'remote error';
    super(isErrorCode(frame.code) ? frame.code : 'UPSTREAM_ERROR', message);
    this.name = 'RemoteError';
    this.frame = frame;
  }
}

const CODES: ReadonlySet<string> = new Set<ErrorCode>([
  'FRAME_TOO_LARGE', 'INVALID_FRAME', 'INVALID_REQUEST', 'UNKNOWN_TYPE', 'UPSTREAM_UNAVAILABLE',
  'UPSTREAM_ERROR', 'CONNECTION_CLOSED', 'CANCELLED', 'TIMEOUT', 'NOT_CONFIGURED', 'ADDRESS_IN_USE',
  'CONFIG', 'SHUTTING_DOWN', 'OVERLOADED', 'INTERNAL',
]);

/** True when `value` is one of the stable error codes. */
export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && CODES.has(value);
}

/** Normalises anything thrown into an `Error` (a thrown string or object becomes one). */
export function castToError(err: unknown): Error {
  if (err instanceof Error) return err;
  try {
    return new Error(typeof err === 'string' ? err : JSON.stringify(err));
  } catch {
    return new Error(String(err));
  }
}

/** True when `err` comes from an aborted operation (our own CANCELLED, DOM AbortError, or Node's ABORT_ERR). */
export function isAbortError(err: unknown): boolean {
  if (err instanceof ZinoError) return err.code === 'CANCELLED';
  if (!(err instanceof Error)) return false;
  return err.name === 'AbortError' || (err as { code?: unknown }).code === 'ABORT_ERR';
}

/** The error an aborted operation rejects with, carrying the signal's reason as `cause`. */
export function abortError(signal: AbortSignal | undefined, what = 'operation'): ZinoError {
  const reason: unknown = signal?.reason;
  if (reason instanceof ZinoError) return reason;
  return new ZinoError('CANCELLED', `${what} cancelled`, { cause: reason });
}

/** The wire form of an error: `{"type":"error","message","code"}`. Unknown errors become a generic INTERNAL frame. */
export function errorFrame(err: unknown): { type: 'error'; message: string; code: ErrorCode } {
  if (err instanceof ZinoError) return { type: 'error', message: err.message, code: err.code };
  return { type: 'error', message: 'internal error (see the service log)', code: 'INTERNAL' };
}
