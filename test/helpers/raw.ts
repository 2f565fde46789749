/** A raw socket client for tests that must send bytes our own client never would. */
import net from 'node:net';
import { FrameDecoder, encodeFrame, type Frame } from '../../src/runtime/index.js';

/** Connects, writes `bytes`, optionally half-closes, and collects every frame until the server closes. */
export function rawExchange(
  socketPath: string,
  bytes: Buffer | Frame,
  options: { halfClose?: boolean; timeoutMs?: number } = {},
): Promise<{ frames: Frame[]; closedByServer: boolean }> {
  const payload = Buffer.isBuffer(bytes) ? bytes : encodeFrame(bytes);
  return new Promise((resolve, reject) => {
    const socket = net.createConnection({ path: socketPath, allowHalfOpen: true });
    const decoder = new FrameDecoder();
    const frames: Frame[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close from the server within ${options.timeoutMs ?? 5000} ms; got ${JSON.stringify(frames)}`));
    }, options.timeoutMs ?? 5000);
    socket.on('connect', () => {
      socket.write(payload);
      if (options.halfClose) socket.end();
    });
    socket.on('data', (chunk: Buffer) => frames.push(...decoder.pushAndReadAll(chunk)));
    socket.on('error', () => undefined);
    socket.on('end', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ frames, closedByServer: true });
    });
  });
}

/** Connects and resolves with the open socket. */
export function rawConnect(socketPath: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.createConnection({ path: socketPath, allowHalfOpen: true });
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}
