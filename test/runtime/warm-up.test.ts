/**
 * The transport's warm-up at start (src/runtime/transport/warm-up.ts): a few pings to the
 * service's own socket, on one kept connection when the suite keeps them, never an error.
 */
import { mkdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FrameDecoder, closeKeptConnections, encodeFrame, keptConnections, serve, type ZinoServer } from '../../src/runtime/index.js';
import { WARM_UP_PINGS, warmUpTransport } from '../../src/runtime/transport/warm-up.js';
import { startService, writeTestConfig } from '../../src/testing/suite.js';
import { captureLogger, tempDir, waitFor } from '../helpers/util.js';

let dir: string;
let cleanup: () => void;
const closers: (() => Promise<unknown>)[] = [];

beforeEach(() => {
  ({ dir, cleanup } = tempDir('zwarm'));
  mkdirSync(path.join(dir, 'run'));
});
afterEach(async () => {
  closeKeptConnections();
  await Promise.all(closers.splice(0).map((close) => close()));
  cleanup();
});

/**
 * A service written from the contract plus the kept-connection extension: answers every ping
 * with pong (agreeing to keep the connection when asked) and counts the connections it accepts.
 */
async function countingPingServer(socketPath: string): Promise<{ accepted: () => number; pings: () => number }> {
  let accepted = 0;
  let pings = 0;
  const server = net.createServer((socket) => {
    accepted++;
    const decoder = new FrameDecoder();
    socket.on('data', (bytes: Buffer) => {
      for (const frame of decoder.pushAndReadAll(bytes)) {
        pings++;
        socket.write(encodeFrame(frame.keep_alive === true ? { type: 'pong', keep_alive: true } : { type: 'pong' }));
      }
    });
    socket.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  closers.push(() => new Promise((resolve) => server.close(resolve)));
  return { accepted: () => accepted, pings: () => pings };
}

describe('warmUpTransport', () => {
  it('pings the socket on one kept connection when the suite keeps them, and leaves it kept', async () => {
    const socketPath = path.join(dir, 'run', 'counting.sock');
    const counting = await countingPingServer(socketPath);
    const { log, lines } = captureLogger();
    expect(await warmUpTransport(socketPath, { log, keepAliveMs: 60_000, stopping: () => false })).toBe(WARM_UP_PINGS);
    expect(counting.pings()).toBe(WARM_UP_PINGS);
    expect(counting.accepted()).toBe(1);
    expect(keptConnections()).toBe(1);
    expect(lines).toContainEqual(expect.objectContaining({ level: 'debug', msg: 'transport warmed up', pings: WARM_UP_PINGS }));
  });

  it('connects once a ping when kept connections are off (keep_alive_ms = 0)', async () => {
    const socketPath = path.join(dir, 'run', 'counting.sock');
    const counting = await countingPingServer(socketPath);
    const { log } = captureLogger();
    expect(await warmUpTransport(socketPath, { log, keepAliveMs: 0, stopping: () => false, pings: 4 })).toBe(4);
    expect(counting.accepted()).toBe(4);
    expect(keptConnections()).toBe(0);
  });

  it('sends nothing once the service is stopping, and stops when it is asked to midway', async () => {
    const socketPath = path.join(dir, 'run', 'counting.sock');
    const counting = await countingPingServer(socketPath);
    const { log } = captureLogger();
    expect(await warmUpTransport(socketPath, { log, keepAliveMs: 0, stopping: () => true })).toBe(0);
    expect(counting.accepted()).toBe(0);
    let asked = 0;
    expect(await warmUpTransport(socketPath, { log, keepAliveMs: 0, stopping: () => ++asked > 3 })).toBe(3);
    expect(counting.pings()).toBe(3);
  });

  it('resolves, logging at debug only, when nothing answers', async () => {
    const { log, lines } = captureLogger();
    expect(await warmUpTransport(path.join(dir, 'run', 'nobody.sock'), { log, keepAliveMs: 60_000, stopping: () => false })).toBe(0);
    expect(lines).toEqual([
      expect.objectContaining({ level: 'debug', msg: 'warm-up of the transport stopped (the first requests compile it instead)', pings: 0 }),
    ]);
  });

  it('is answered by our own server as any client is', async () => {
    const { log } = captureLogger();
    const socketPath = path.join(dir, 'run', 'own.sock');
    const server: ZinoServer = await serve(socketPath, { handlers: {}, log });
    closers.push(() => server.close());
    expect(await warmUpTransport(socketPath, { log, keepAliveMs: 60_000, stopping: () => false })).toBe(WARM_UP_PINGS);
    expect(server.connectionCount).toBe(1);
  });
});

describe('a service at start', () => {
  it('warms its transport up once it listens', async () => {
    const { file } = writeTestConfig(dir);
    const sys = await startService('sys', file);
    closers.push(() => sys.stop());
    const line = await waitFor(() => sys.logs.find((l) => l.msg === 'transport warmed up'), 'the warm-up line');
    expect(line).toMatchObject({ level: 'debug', service: 'sys', pings: WARM_UP_PINGS });
    const listening = sys.logs.findIndex((l) => l.msg === 'listening');
    expect(listening).toBeGreaterThanOrEqual(0);
    expect(sys.logs.indexOf(line)).toBeGreaterThan(listening);
  });
});
