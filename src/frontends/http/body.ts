/**
 * Reading a JSON request body within `[http] max_body_bytes`: a declared
 * `Content-Length` over the bound is refused before a byte is read, a chunked body
 * as soon as it passes it. The bytes must be UTF-8 and the JSON an object. How long
 * the body may take is Node's `requestTimeout` (set from
 * `[limits] request_read_timeout_ms` in server.ts).
 */
import type http from 'node:http';
import { HttpError, badRequest } from './errors.js';

/** The client went away while sending its body: nobody to answer. */
export class ClientGone extends Error {
  constructor() {
    super('the client closed the connection before its request was complete');
    this.name = 'ClientGone';
  }
}

function tooLarge(maxBytes: number): HttpError {
  return new HttpError(413, `the request body is larger than ${maxBytes} bytes ([http] max_body_bytes)`, 'invalid_request_error', 'request_too_large', null, {
    connection: 'close',
  });
}

/**
 * What is read and dropped of a body past `max_body_bytes` before the 413 goes out: a
 * client still sending when the connection closes gets a reset, which can take the 413
 * with it before it is read. A client that sends more than this gets the 413 at once.
 */
const DRAIN_BYTES = 1024 * 1024;

/** The raw body, at most `maxBytes`. Rejects with a 413 {@link HttpError} or {@link ClientGone}. */
export function readBody(req: http.IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > maxBytes) return Promise.reject(tooLarge(maxBytes));
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    const done = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      req.off('error', onClose);
    };
    const onData = (piece: Buffer): void => {
      size += piece.length;
      if (size <= maxBytes) {
        parts.push(piece);
        return;
      }
      parts.length = 0;
      // Past the bound: dropped until the body ends (the 413 then closes cleanly), or until DRAIN_BYTES more.
      if (size > maxBytes + DRAIN_BYTES) {
        done();
        req.pause();
        reject(tooLarge(maxBytes));
      }
    };
    const onEnd = (): void => {
      done();
      if (size > maxBytes) reject(tooLarge(maxBytes));
      else resolve(Buffer.concat(parts, size));
    };
    const onClose = (): void => {
      done();
      reject(new ClientGone());
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('close', onClose);
    req.on('error', onClose);
  });
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The body as a JSON object; a 400 {@link HttpError} when it is not UTF-8, not JSON, or not an object. */
export function parseJsonObject(body: Buffer): Record<string, unknown> {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw badRequest('the request body is not valid UTF-8', null, 'invalid_body');
  }
  if (text.trim() === '') throw badRequest('the request body is empty: send a JSON object', null, 'invalid_body');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw badRequest(`the request body is not valid JSON: ${(err as Error).message}`, null, 'invalid_json');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw badRequest('the request body must be a JSON object', null, 'invalid_body');
  return value as Record<string, unknown>;
}
