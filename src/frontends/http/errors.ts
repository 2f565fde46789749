/**
 * Errors in OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`, with
 * the HTTP status an OpenAI client acts on: 400 bad body, 401 no or wrong token, 404
 * unknown model or path, 413 too large, 429 over `[http] max_concurrent`, 503 ZINO
 * not reachable. ZINO's own error codes (from the daemon or rtr) map onto them in
 * {@link fromZinoError}; a bug is a 500 with no detail (the detail is in the log).
 */
import type http from 'node:http';
import { ZinoError, type ErrorCode } from '../../runtime/index.js';

/** OpenAI's error `type`s that ZINO uses. */
export type OpenAiErrorType = 'invalid_request_error' | 'authentication_error' | 'not_found_error' | 'rate_limit_error' | 'server_error';

/** An error that becomes one HTTP response. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: OpenAiErrorType,
    /** OpenAI's machine-readable `code` (`invalid_api_key`, `model_not_found`, …), or null. */
    readonly code: string | null,
    /** The request field at fault, when there is one. */
    readonly param: string | null = null,
    /** Extra response headers (`Retry-After`, `Allow`, `WWW-Authenticate`). */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }

  /** The JSON body. */
  body(): { error: { message: string; type: OpenAiErrorType; param: string | null; code: string | null } } {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/** 400: the request body or a field is wrong. */
export function badRequest(message: string, param: string | null = null, code: string | null = null): HttpError {
  return new HttpError(400, message, 'invalid_request_error', code, param);
}

/** The HTTP status and OpenAI type each ZINO error code becomes. */
const BY_CODE: Readonly<Record<ErrorCode, [number, OpenAiErrorType, string]>> = {
  INVALID_REQUEST: [400, 'invalid_request_error', 'invalid_request'],
  FRAME_TOO_LARGE: [413, 'invalid_request_error', 'request_too_large'],
  UPSTREAM_UNAVAILABLE: [503, 'server_error', 'service_unavailable'],
  CONNECTION_CLOSED: [503, 'server_error', 'service_unavailable'],
  SHUTTING_DOWN: [503, 'server_error', 'service_unavailable'],
  CANCELLED: [503, 'server_error', 'service_unavailable'],
  OVERLOADED: [503, 'server_error', 'overloaded'],
  NOT_CONFIGURED: [503, 'server_error', 'not_configured'],
  UPSTREAM_ERROR: [502, 'server_error', 'upstream_error'],
  TIMEOUT: [504, 'server_error', 'timeout'],
  INVALID_FRAME: [500, 'server_error', 'internal_error'],
  UNKNOWN_TYPE: [500, 'server_error', 'internal_error'],
  ADDRESS_IN_USE: [500, 'server_error', 'internal_error'],
  CONFIG: [500, 'server_error', 'internal_error'],
  // exc's audit log cannot be written: host runs are refused until it can.
  AUDIT_UNAVAILABLE: [503, 'server_error', 'service_unavailable'],
  RUN_NOT_RECORDED: [500, 'server_error', 'internal_error'],
  // Answers to `approve`, and a denial agr turns into text the model reads: never an answer to a chat completion.
  APPROVAL_DENIED: [500, 'server_error', 'internal_error'],
  APPROVAL_UNKNOWN: [500, 'server_error', 'internal_error'],
  APPROVAL_EXPIRED: [500, 'server_error', 'internal_error'],
  APPROVAL_SETTLED: [500, 'server_error', 'internal_error'],
  INTERNAL: [500, 'server_error', 'internal_error'],
};

/**
 * The response for an error from ZINO's side: a `ZinoError` keeps its message (the
 * client is authenticated, and the message says what to do) except when ZINO cannot
 * be reached at all, where the socket paths stay in the log; anything else is a bug.
 */
export function fromZinoError(err: unknown, service: 'daemon' | 'rtr'): HttpError {
  if (err instanceof HttpError) return err;
  if (!(err instanceof ZinoError)) return new HttpError(500, 'internal error (see the zino-http log)', 'server_error', 'internal_error');
  const [status, type, code] = BY_CODE[err.code];
  if (status === 500) return new HttpError(500, 'internal error (see the ZINO logs)', type, code);
  if (err.code === 'UPSTREAM_UNAVAILABLE' && err.detail.service === service) {
    return new HttpError(503, `ZINO is not available: its ${service} cannot be reached (is the suite running?)`, type, code, null, { 'retry-after': '1' });
  }
  return new HttpError(status, err.message, type, code);
}

/** Writes `err` as a complete JSON response (the caller checked that no header was sent). */
export function sendError(res: http.ServerResponse, err: HttpError): void {
  const text = JSON.stringify(err.body());
  res.writeHead(err.status, Object.assign({}, err.headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }));
  res.end(text);
}

/**
 * The raw bytes of an error response, for a connection Node's HTTP parser gave up
 * on (`clientError`: a malformed request, headers too large, too slow): there is no
 * response object, and the connection is closed after it.
 */
export function rawErrorResponse(err: HttpError): string {
  const text = JSON.stringify(err.body());
  const reason = REASONS[err.status] ?? 'Error';
  return `HTTP/1.1 ${err.status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`;
}

const REASONS: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  413: 'Payload Too Large',
  431: 'Request Header Fields Too Large',
};
