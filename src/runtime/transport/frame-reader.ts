/**
 * Reading frames from a client socket as an async iterator, driven by socket
 * events rather than the stream's own async iterator (which costs an AbortError
 * with a stack trace per connection). Backpressure is kept: the socket is paused
 * while decoded frames wait for the consumer.
 */
import type { Socket } from 'node:net';
import { ZinoError } from '../errors.js';
import type { Frame } from '../frame/codec.js';
import { FrameDecoder } from '../frame/decoder.js';

/** Frames waiting for the consumer before the socket is paused. */
const HIGH_WATER_FRAMES = 64;

/**
 * Yields frames from `socket` until it ends; throws the socket's error or a protocol
 * error. With `mergeChunks`, `chunk` frames already waiting behind one another leave
 * as one (their deltas joined): a consumer that falls behind then handles fewer, larger
 * frames, and one that keeps up sees every frame as it came.
 */
export async function* readFrames(socket: Socket, maxFrameBytes: number, mergeChunks = false): AsyncGenerator<Frame, 'ended', undefined> {
  const decoder = new FrameDecoder({ maxFrameBytes });
  const queue: Frame[] = [];
  let failure: Error | undefined;
  let ended = false;
  let wake: (() => void) | undefined;
  const notify = (): void => {
    const resume = wake;
    wake = undefined;
    resume?.();
  };
  const onData = (chunk: Buffer): void => {
    try {
      decoder.push(chunk);
      for (let frame = decoder.read(); frame !== undefined; frame = decoder.read()) queue.push(frame);
    } catch (err) {
      failure = err as Error;
      socket.destroy();
    }
    if (queue.length >= HIGH_WATER_FRAMES) socket.pause();
    notify();
  };
  const onEnd = (): void => {
    ended = true;
    notify();
  };
  const onError = (err: Error): void => {
    failure ??= err;
    notify();
  };
  const onClose = (): void => {
    if (!ended) failure ??= new ZinoError('CONNECTION_CLOSED', 'the connection closed');
    ended = true;
    notify();
  };
  socket.on('data', onData);
  socket.on('end', onEnd);
  socket.on('error', onError);
  socket.on('close', onClose);
  // A kept connection comes paused (pool.ts): a listener alone does not resume it.
  if (socket.isPaused()) socket.resume();
  try {
    for (;;) {
      if (queue.length > 0) {
        let frame = queue.shift() as Frame;
        if (mergeChunks && isChunk(frame) && queue.length > 0 && isChunk(queue[0] as Frame)) {
          let delta = frame.delta as string;
          while (queue.length > 0 && isChunk(queue[0] as Frame)) delta += (queue.shift() as Frame).delta as string;
          frame = { type: 'chunk', delta };
        }
        if (queue.length < HIGH_WATER_FRAMES / 2 && socket.isPaused()) socket.resume();
        yield frame;
        continue;
      }
      if (failure) throw failure;
      if (ended) return 'ended';
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    socket.off('data', onData);
    socket.off('end', onEnd);
    socket.off('error', onError);
    socket.off('close', onClose);
  }
}

function isChunk(frame: Frame): boolean {
  return frame.type === 'chunk' && typeof frame.delta === 'string';
}

/**
 * The first frame `socket` delivers, for a caller that wants one reply (`request()`): what
 * {@link readFrames} would yield first, without an iterator. Rejects with the socket's error,
 * a protocol error, or CONNECTION_CLOSED when the socket ends or closes before a whole frame.
 */
export function readFrame(socket: Socket, maxFrameBytes: number, label: string): Promise<Frame> {
  return new Promise<Frame>((resolve, reject) => {
    const decoder = new FrameDecoder({ maxFrameBytes });
    const settle = (frame: Frame | undefined, err?: Error): void => {
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.off('error', onError);
      socket.off('close', onEnd);
      if (frame) resolve(frame);
      else reject(err ?? new ZinoError('CONNECTION_CLOSED', `${label} closed the connection before sending a complete reply`));
    };
    const onData = (chunk: Buffer): void => {
      let frame: Frame | undefined;
      try {
        decoder.push(chunk);
        frame = decoder.read();
      } catch (err) {
        socket.destroy();
        settle(undefined, err as Error);
        return;
      }
      if (frame !== undefined) settle(frame);
    };
    const onEnd = (): void => settle(undefined);
    const onError = (err: Error): void => settle(undefined, err);
    socket.on('data', onData);
    socket.on('end', onEnd);
    socket.on('error', onError);
    socket.on('close', onEnd);
    if (socket.isPaused()) socket.resume();
  });
}
