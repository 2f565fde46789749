/**
 * Incremental frame decoder. Bytes go in with `push()` in pieces of any size;
 * `read()` returns the next whole frame or `undefined` until one is there.
 *
 * The declared length is checked against the cap as soon as the 4 header bytes
 * are in, before any of the body is kept, so a peer cannot make us buffer more
 * than `maxFrameBytes` (+ one socket read) whatever it announces.
 */
import { ProtocolError } from '../errors.js';
import { DEFAULT_MAX_FRAME_BYTES, HEADER_BYTES, parseFrameBody, type Frame } from './codec.js';

/** Options of a {@link FrameDecoder}. */
export interface DecoderOptions {
  /** Largest body accepted, in bytes. @default 16 MiB */
  maxFrameBytes?: number;
}

/** Turns a byte stream into frames; throws {@link ProtocolError} and stays failed after a protocol error. */
export class FrameDecoder {
  private readonly maxFrameBytes: number;
  private chunks: Buffer[] = [];
  /** Offset of the first unread byte in `chunks[0]`. */
  private offset = 0;
  /** Unread bytes across all chunks. */
  private buffered = 0;
  /** Body length of the frame being read, or -1 while waiting for a header. */
  private bodyLength = -1;
  private failure: ProtocolError | undefined;

  constructor(options: DecoderOptions = {}) {
    this.maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
  }

  /** Bytes received but not yet returned as frames. */
  get pendingBytes(): number {
    return this.buffered;
  }

  /** Adds received bytes. Cheap: nothing is parsed until `read()`. */
  push(chunk: Uint8Array): void {
    if (this.failure) throw this.failure;
    if (chunk.length === 0) return;
    this.chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length));
    this.buffered += chunk.length;
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
      if (this.buffered < this.bodyLength) return undefined;
      const body = this.take(this.bodyLength);
      this.bodyLength = -1;
      return parseFrameBody(body);
    } catch (err) {
      this.fail(err as ProtocolError);
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
      const what = this.bodyLength >= 0 ? `${this.buffered} of ${this.bodyLength} body bytes` : `${this.buffered} of ${HEADER_BYTES} header bytes`;
      const err = new ProtocolError('INVALID_FRAME', `stream ended inside a frame (${what} received)`);
      this.fail(err);
      throw err;
    }
  }

  private fail(err: ProtocolError): void {
    this.failure = err;
    this.chunks = [];
    this.buffered = 0;
    this.offset = 0;
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
