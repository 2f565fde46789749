/**
 * Writes frames to one socket, one at a time, respecting backpressure: when
 * `socket.write()` returns false the next write waits for `drain`. A slow reader
 * therefore stalls the producer instead of growing our memory.
 */
import type { Socket } from 'node:net';
import { ZinoError } from '../errors.js';
import { encodeFrame, withMember } from '../frame/codec.js';

/** What a write resolves with when the socket took its frame at once. */
const SENT: Promise<void> = Promise.resolve();

/** Serialised, backpressure-aware frame writer for one socket. */
export class FrameWriter {
  /** Settles when the previous write has been accepted by the socket. */
  private tail: Promise<void> = SENT;
  /** Writes not yet accepted by the socket (waiting for `drain` or for an earlier write). */
  private waiting = 0;
  private readonly accepted = (): void => {
    this.waiting--;
  };

  constructor(
    private readonly socket: Socket,
    private readonly maxFrameBytes: number,
  ) {}

  /**
   * Queues `frame` and resolves once the socket has accepted it without exceeding
   * its high-water mark (or after `drain`). Rejects with CONNECTION_CLOSED when the
   * socket closes first, and with FRAME_TOO_LARGE for an oversize frame. `member`
   * (`"name":value`) is added to the frame's text as its last member (see withMember).
   */
  write(frame: object, member?: string): Promise<void> {
    let bytes: Buffer;
    try {
      bytes = encodeFrame(frame, this.maxFrameBytes);
      if (member !== undefined) bytes = withMember(bytes, member, this.maxFrameBytes);
    } catch (err) {
      return Promise.reject(err);
    }
    // Nothing ahead of it: written now, not a microtask later (most frames, most of the time).
    const next = this.waiting === 0 ? this.writeBytes(bytes) : this.tail.then(() => this.writeBytes(bytes));
    if (next === SENT) return next;
    this.waiting++;
    this.tail = next.then(this.accepted, this.accepted);
    return next;
  }

  private writeBytes(bytes: Buffer): Promise<void> {
    const socket = this.socket;
    if (socket.destroyed || !socket.writable) return Promise.reject(closedError());
    // Frames written in the same tick (a burst of chunks) leave in one writev: one system
    // call and one wake-up of the reader instead of one per frame.
    if (socket.writableCorked === 0) {
      socket.cork();
      process.nextTick(uncork, socket);
    }
    if (socket.write(bytes)) return SENT;
    return new Promise<void>((resolve, reject) => {
      const onDrain = (): void => {
        cleanup();
        resolve();
      };
      const onClose = (): void => {
        cleanup();
        reject(closedError());
      };
      const cleanup = (): void => {
        socket.off('drain', onDrain);
        socket.off('close', onClose);
      };
      socket.on('drain', onDrain);
      socket.on('close', onClose);
    });
  }
}

function uncork(socket: Socket): void {
  socket.uncork();
}

function closedError(): ZinoError {
  return new ZinoError('CONNECTION_CLOSED', 'the connection closed before the frame was written');
}
