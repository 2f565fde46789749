/**
 * The ZINO frame: a 4-byte big-endian unsigned length, then that many bytes of
 * UTF-8 JSON whose value is an object.
 */
import { isUtf8 } from 'node:buffer';
import { ProtocolError } from '../errors.js';

/** A decoded frame: always a JSON object. `type` routes requests and names replies. */
export type Frame = { [key: string]: unknown; type?: unknown };

/**
 * What may be written as a frame: any object whose `type` is a string. Every typed
 * request, reply and event of `src/protocol` is one, without a cast.
 */
export interface OutgoingFrame {
  readonly type: string;
}

/** Size of the length prefix in bytes. */
export const HEADER_BYTES = 4;

/** Default cap on a frame body (`[limits] max_frame_bytes`): 16 MiB. */
export const DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024;

/** Largest length the 4-byte header can express. */
const MAX_UINT32 = 0xffff_ffff;

/** Encodings of frozen frames, by frame (see {@link encodeFrame}). */
const ENCODED = new WeakMap<object, Buffer>();

/**
 * Encodes `value` as one frame (header + UTF-8 JSON body) in a single allocation.
 * Throws FRAME_TOO_LARGE when the body would exceed `maxFrameBytes`, so we never
 * send what a peer must reject.
 *
 * A frozen frame (`Object.freeze`, whose fields are primitives or frozen too) is
 * encoded once and its bytes reused while it lives: sys answers every request with
 * the same system prompt of several KB, which need not be serialised every time.
 */
export function encodeFrame(value: object, maxFrameBytes: number = DEFAULT_MAX_FRAME_BYTES): Buffer {
  const frozen = Object.isFrozen(value);
  if (frozen) {
    const encoded = ENCODED.get(value);
    if (encoded !== undefined) {
      checkLength(encoded.length - HEADER_BYTES, maxFrameBytes);
      return encoded;
    }
  }
  const json = JSON.stringify(value);
  const length = Buffer.byteLength(json, 'utf8');
  checkLength(length, maxFrameBytes);
  const out = Buffer.allocUnsafe(HEADER_BYTES + length);
  out.writeUInt32BE(length, 0);
  out.write(json, HEADER_BYTES, 'utf8');
  if (frozen) ENCODED.set(value, out);
  return out;
}

/**
 * `encoded` (a frame from {@link encodeFrame}) with `member` (`"name":value`, ASCII) added as
 * its object's last member, without parsing or serialising it again: how a kept connection's
 * `"keep_alive":true` is added to a request or a terminal frame (pool.ts) without changing the
 * caller's object. Last, so that the reader can delete it cheaply. A body that is not a JSON
 * object's text is returned as it is.
 */
export function withMember(encoded: Buffer, member: string, maxFrameBytes: number = DEFAULT_MAX_FRAME_BYTES): Buffer {
  const body = encoded.length - HEADER_BYTES;
  if (body < 2 || encoded[HEADER_BYTES] !== 0x7b || encoded[encoded.length - 1] !== 0x7d) return encoded;
  const comma = body > 2 ? 1 : 0;
  const length = body + comma + member.length;
  checkLength(length, maxFrameBytes);
  const out = Buffer.allocUnsafe(HEADER_BYTES + length);
  out.writeUInt32BE(length, 0);
  encoded.copy(out, HEADER_BYTES, HEADER_BYTES, encoded.length - 1);
  let at = encoded.length - 1;
  if (comma) out[at++] = 0x2c;
  at += out.write(member, at, 'latin1');
  out[at] = 0x7d;
  return out;
}

function checkLength(length: number, maxFrameBytes: number): void {
  if (length > Math.min(maxFrameBytes, MAX_UINT32)) {
    throw new ProtocolError('FRAME_TOO_LARGE', `frame of ${length} bytes exceeds the limit of ${maxFrameBytes} bytes`);
  }
}

/**
 * Parses one whole frame body. UTF-8 is validated on the whole body only, so a
 * multi-byte character split across network chunks is never corrupted.
 */
export function parseFrameBody(body: Buffer): Frame {
  if (body.length === 0) throw new ProtocolError('INVALID_FRAME', 'empty frame (length 0): a frame must hold a JSON object');
  if (!isUtf8(body)) throw new ProtocolError('INVALID_FRAME', 'frame is not valid UTF-8');
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw new ProtocolError('INVALID_FRAME', `frame is not valid JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    const kind = value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
    throw new ProtocolError('INVALID_FRAME', `frame is not a JSON object (got ${kind})`);
  }
  return value as Frame;
}
