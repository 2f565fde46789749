/**
 * Errors as data: one base class with a stable machine-readable `code`.
 * Callers branch on `code`, never on `message`. Every error that reaches the
 * wire becomes `{"type":"error","message":…,"code":…}`; stacks stay in the log.
 */

/**
 * The stable error codes used on the wire (`code` field of an error frame) and in
 * logs: the one list {@link ErrorCode} and {@link isErrorCode} are derived from.
 */
export const ERROR_CODES = [
  'FRAME_TOO_LARGE',
  'INVALID_FRAME',
  'INVALID_REQUEST',
  'UNKNOWN_TYPE',
  'UPSTREAM_UNAVAILABLE',
  'UPSTREAM_ERROR',
  'CONNECTION_CLOSED',
  'CANCELLED',
  'TIMEOUT',
  'NOT_CONFIGURED',
  'ADDRESS_IN_USE',
  'CONFIG',
  'SHUTTING_DOWN',
  'OVERLOADED',
  'APPROVAL_DENIED',
  'APPROVAL_UNKNOWN',
  'APPROVAL_EXPIRED',
  'APPROVAL_SETTLED',
  'AUDIT_UNAVAILABLE',
  'RUN_NOT_RECORDED',
  'INTERNAL',
] as const;

/** A stable error code. */
export type ErrorCode = (typeof ERROR_CODES)[number];

/** Where in a call an error happened: what a caller branches on instead of message text. */
export type ErrorPhase = 'connect' | 'send' | 'receive';

/**
 * Structured detail of an error, for callers to branch on (never on `message`).
 * It travels on the wire as the error frame's `detail` (a ZINO extra).
 */
export interface ErrorDetail {
  /** The call's phase when it failed: connecting, sending the request, or reading the reply. */
  phase?: ErrorPhase | undefined;
  /** The system error code behind it (`ENOENT`, `ECONNREFUSED`, `EACCES`, …). */
  errno?: string | undefined;
  /** The service the call went to (`mem`, `the daemon`, …). */
  service?: string | undefined;
}

/** Base class of every error ZINO raises on purpose. */
export class ZinoError extends Error {
  readonly code: ErrorCode;
  /** What a caller may branch on besides `code`; empty when there is nothing to say. */
  readonly detail: Readonly<ErrorDetail>;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown; detail?: ErrorDetail | undefined }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ZinoError';
    this.code = code;
    this.detail = options?.detail ?? {};
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
  /** The error frame as it arrived. */
  readonly frame: Readonly<{ type?: unknown; message?: unknown; code?: unknown; detail?: unknown }>;
  constructor(frame: { readonly type?: unknown; readonly message?: unknown; readonly code?: unknown; readonly detail?: unknown }) {
    const message = typeof frame.message === 'string' ? frame.message : 'remote error';
    super(isErrorCode(frame.code) ? frame.code : 'UPSTREAM_ERROR', message, { detail: detailOf(frame.detail) });
    this.name = 'RemoteError';
    this.frame = frame;
  }
}

const CODES: ReadonlySet<string> = new Set<string>(ERROR_CODES);

/** The detail fields of a remote error frame that have the right types; anything else is dropped. */
function detailOf(value: unknown): ErrorDetail {
  if (value === null || typeof value !== 'object') return {};
  const { phase, errno, service } = value as Record<string, unknown>;
  const detail: ErrorDetail = {};
  if (phase === 'connect' || phase === 'send' || phase === 'receive') detail.phase = phase;
  if (typeof errno === 'string') detail.errno = errno;
  if (typeof service === 'string') detail.service = service;
  return detail;
}

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

/** The wire form of an error: the contract's `type` and `message`, plus ZINO's `code` and (when there is any) `detail`. */
export interface ErrorFrame {
  type: 'error';
  message: string;
  code: ErrorCode;
  detail?: ErrorDetail;
}

/** The wire form of `err`. Unknown errors become a generic INTERNAL frame (the stack stays in the log). */
export function errorFrame(err: unknown): ErrorFrame {
  if (!(err instanceof ZinoError)) return { type: 'error', message: 'internal error (see the service log)', code: 'INTERNAL' };
  const frame: ErrorFrame = { type: 'error', message: err.message, code: err.code };
  if (Object.keys(err.detail).length > 0) frame.detail = { ...err.detail };
  return frame;
}
