/** Raw socket clients for tests that must send bytes our own client never would, and read the frames that come back. */
import net from 'node:net';
import { FrameDecoder, encodeFrame, ping, type Frame } from '../../src/runtime/index.js';

/** Collects every frame `socket` receives until the server closes it (or `timeoutMs` passes: rejects). */
export function readRawFrames(
  socket: net.Socket,
  options: { timeoutMs?: number | undefined; maxFrameBytes?: number | undefined } = {},
): Promise<{ frames: Frame[]; closedByServer: boolean }> {
  const decoder = new FrameDecoder(options.maxFrameBytes === undefined ? {} : { maxFrameBytes: options.maxFrameBytes });
  const frames: Frame[] = [];
  const timeoutMs = options.timeoutMs ?? 30_000;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close from the server within ${timeoutMs} ms; got ${JSON.stringify(frames)}`));
    }, timeoutMs);
    socket.on('data', (chunk: Buffer) => frames.push(...decoder.pushAndReadAll(chunk)));
    socket.on('error', () => undefined);
    socket.on('end', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ frames, closedByServer: true });
    });
  });
}

/** Connects, writes `bytes`, optionally half-closes, and collects every frame until the server closes. */
export async function rawExchange(
  socketPath: string,
  bytes: Buffer | Frame,
  options: { halfClose?: boolean; timeoutMs?: number } = {},
): Promise<{ frames: Frame[]; closedByServer: boolean }> {
  const payload = Buffer.isBuffer(bytes) ? bytes : encodeFrame(bytes);
  const socket = await rawConnect(socketPath);
  const frames = readRawFrames(socket, { timeoutMs: options.timeoutMs });
  socket.write(payload);
  if (options.halfClose) socket.end();
  return frames;
}

/** Connects and resolves with the open socket. */
export function rawConnect(socketPath: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.createConnection({ path: socketPath, allowHalfOpen: true });
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

/**
 * Writes `frame` on `socket` and half-closes it; resolves once a server running in
 * this process has read the half-close: the FIN is in the kernel when 'finish' fires,
 * and a ping round trip to the same server on a new connection takes more turns of
 * the event loop than reading an end that was already waiting.
 */
export async function halfCloseSeen(socket: net.Socket, socketPath: string, frame: Frame): Promise<void> {
  await new Promise<void>((resolve) => socket.end(encodeFrame(frame), () => resolve()));
  await ping(socketPath);
}
