/**
 * Incremental frame decoder. Bytes go in with `push()` in pieces of any size;
 * `read()` returns the next whole frame or `undefined` until one is there.
 *
 * The declared length is checked against the cap as soon as the 4 header bytes
 * are in, before any of the body is kept, so a peer cannot make us buffer more
 * than `maxFrameBytes` (+ one socket read) whatever it announces.
 *
 * A large body (over {@link LARGE_BODY_BYTES}) is copied, as it arrives, into one
 * buffer of its declared size, allocated once its first {@link LARGE_BODY_BYTES} are
 * in; the socket's pieces (64 KiB each) are let go at once. Kept as a list, a stalled
 * 16 MiB body held 256 small allocations until the next garbage collection, and the
 * C heap they came from was never given back to the system: RSS stayed at its peak
 * after the connections had closed (issue 13, point 4; bench/stall.ts). One large
 * allocation is mapped on its own and unmapped when freed.
 */
import { ProtocolError, ZinoError } from '../errors.js';
import { DEFAULT_MAX_FRAME_BYTES, HEADER_BYTES, parseFrameBody, type Frame } from './codec.js';

/** Options of a {@link FrameDecoder}. */
export interface DecoderOptions {
  /** Largest body accepted, in bytes. @default 16 MiB */
  maxFrameBytes?: number;
}

/** Bodies larger than this are gathered in one buffer of their declared size (see the module comment). */
export const LARGE_BODY_BYTES = 64 * 1024;

/** Turns a byte stream into frames; throws {@link ProtocolError} (or OVERLOADED when a large body cannot be allocated) and stays failed after it. */
export class FrameDecoder {
  private readonly maxFrameBytes: number;
  private chunks: Buffer[] = [];
  /** Offset of the first unread byte in `chunks[0]`. */
  private offset = 0;
  /** Unread bytes across all chunks. */
  private buffered = 0;
  /** Body length of the frame being read, or -1 while waiting for a header. */
  private bodyLength = -1;
  /** The large body being gathered, and how much of it is in. */
  private body: Buffer | undefined;
  private bodyFilled = 0;
  private failure: ZinoError | undefined;

  constructor(options: DecoderOptions = {}) {
    this.maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
  }

  /** Bytes received but not yet returned as frames. */
  get pendingBytes(): number {
    return this.buffered + this.bodyFilled;
  }

  /** Adds received bytes. Cheap: nothing is parsed until `read()`. */
  push(chunk: Uint8Array): void {
    if (this.failure) throw this.failure;
    if (chunk.length === 0) return;
    let bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
    if (this.body) {
      const n = Math.min(bytes.length, this.body.length - this.bodyFilled);
      bytes.copy(this.body, this.bodyFilled, 0, n);
      this.bodyFilled += n;
      if (n === bytes.length) return;
      bytes = bytes.subarray(n);
    }
    this.chunks.push(bytes);
    this.buffered += bytes.length;
  }

  /** The next whole frame, or `undefined` when more bytes are needed. */
  read(): Frame | undefined {
    if (this.failure) throw this.failure;
    try {
      if (this.bodyLength < 0) {
        if (this.buffered < HEADER_BYTES) return undefined;
        const length = this.take(HEADER_BYTES).readUInt32BE(0);
        if (length > this.maxFrameBytes) {
          throw new ProtocolError('FRAME_TOO_LARGE', `frame of ${length} bytes exceeds the limit of ${this.maxFrameBytes} bytes`);
        }
        this.bodyLength = length;
      }
      if (this.body) {
        if (this.bodyFilled < this.body.length) return undefined;
        return this.complete(this.body);
      }
      if (this.buffered < this.bodyLength) {
        if (this.bodyLength > LARGE_BODY_BYTES && this.buffered >= LARGE_BODY_BYTES) {
          // Not yet whole and large: gather it in one buffer from here on.
          try {
            this.body = Buffer.allocUnsafeSlow(this.bodyLength);
          } catch {
            throw new ZinoError('OVERLOADED', `no memory for a frame of ${this.bodyLength} bytes now; try again shortly`);
          }
          this.bodyFilled = this.buffered;
          this.take(this.buffered).copy(this.body);
        }
        return undefined;
      }
      return this.complete(this.take(this.bodyLength));
    } catch (err) {
      this.fail(err as ZinoError);
      throw err;
    }
  }

  /** Pushes `chunk` and returns every whole frame now available. */
  pushAndReadAll(chunk: Uint8Array): Frame[] {
    this.push(chunk);
    const frames: Frame[] = [];
    for (let frame = this.read(); frame !== undefined; frame = this.read()) frames.push(frame);
    return frames;
  }

  /** Call at end of stream: throws when a partial frame was left behind (truncated frame). */
  end(): void {
    if (this.failure) throw this.failure;
    if (this.buffered > 0 || this.bodyLength >= 0) {
      const what = this.bodyLength >= 0 ? `${this.pendingBytes} of ${this.bodyLength} body bytes` : `${this.buffered} of ${HEADER_BYTES} header bytes`;
      const err = new ProtocolError('INVALID_FRAME', `stream ended inside a frame (${what} received)`);
      this.fail(err);
      throw err;
    }
  }

  private fail(err: ZinoError): void {
    this.failure = err;
    this.chunks = [];
    this.buffered = 0;
    this.offset = 0;
    this.body = undefined;
    this.bodyFilled = 0;
  }

  private complete(body: Buffer): Frame {
    this.body = undefined;
    this.bodyFilled = 0;
    this.bodyLength = -1;
    return parseFrameBody(body);
  }

  /** Removes and returns exactly `n` buffered bytes (a view when they sit in one chunk). */
  private take(n: number): Buffer {
    this.buffered -= n;
    const first = this.chunks[0];
    if (first !== undefined && first.length - this.offset >= n) {
      const out = first.subarray(this.offset, this.offset + n);
      this.offset += n;
      if (this.offset === first.length) {
        this.chunks.shift();
        this.offset = 0;
      }
      return out;
    }
    const out = Buffer.allocUnsafe(n);
    let written = 0;
    while (written < n) {
      const chunk = this.chunks[0] as Buffer;
      const count = Math.min(n - written, chunk.length - this.offset);
      chunk.copy(out, written, this.offset, this.offset + count);
      written += count;
      this.offset += count;
      if (this.offset === chunk.length) {
        this.chunks.shift();
        this.offset = 0;
      }
    }
    return out;
  }
}
