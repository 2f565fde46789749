/**
 * Connections that hold a service without finishing a request (issue 13, points 4
 * and 5), against a real `zino serve sys` with small limits:
 *
 * - tricklers (a byte of a frame now and then) and requests in flight filling
 *   `[limits] max_connections` of a real mem: ping still gets through, each time
 *   closing the oldest trickler with OVERLOADED, until none is left (before, only
 *   connections that had sent nothing made room, and a trickler held its slot until
 *   its read deadline); a service full of requests being answered refuses;
 * - a trickler is cut at `[limits] request_read_timeout_ms` although bytes keep coming
 *   (a deadline, not an idle timeout);
 * - connections stalling in the middle of large frames: once `[limits]
 *   max_receive_bytes` is held, a new large frame is refused OVERLOADED while ping
 *   answers; when they close, the memory is reclaimed (logged) and a large request
 *   is taken again.
 *
 * Events and order only; the RSS figures of the full-size attack are in
 * `npm run bench stall` and docs/reliability.md.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FrameDecoder, encodeFrame, ping, request, type Frame } from '../../src/runtime/index.js';
import { startService, writeTestConfig, type ConfigOverrides, type StartedService } from '../../src/testing/suite.js';
import { rawConnect } from '../helpers/raw.js';
import { tempDir, waitFor } from '../helpers/util.js';

const started: StartedService[] = [];
const cleanups: (() => void)[] = [];
const sockets: net.Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(started.splice(0).map((s) => s.stop('SIGKILL')));
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function startSys(limits: NonNullable<ConfigOverrides['limits']>): Promise<StartedService> {
  const { dir, cleanup } = tempDir('zpress');
  cleanups.push(cleanup);
  const { file } = writeTestConfig(dir, { limits });
  const sys = await startService('sys', file, { env: { ZINO_LOG_LEVEL: 'info' } });
  started.push(sys);
  return sys;
}

function header(length: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(length);
  return b;
}

/** A raw connection that records what the server sends and when it closes. */
interface Watched {
  socket: net.Socket;
  frames: Frame[];
  closed: boolean;
  /** Bytes this client had written when the server's close arrived. */
  sentAtClose: number;
  sent: number;
}

async function watched(socketPath: string): Promise<Watched> {
  const socket = await rawConnect(socketPath);
  sockets.push(socket);
  const decoder = new FrameDecoder();
  const w: Watched = { socket, frames: [], closed: false, sentAtClose: -1, sent: 0 };
  socket.on('data', (chunk: Buffer) => w.frames.push(...decoder.pushAndReadAll(chunk)));
  socket.on('error', () => undefined);
  const onClose = (): void => {
    if (w.closed) return;
    w.closed = true;
    w.sentAtClose = w.sent;
  };
  socket.on('end', onClose);
  socket.on('close', onClose);
  return w;
}

/**
 * A get_history of the 4 MB channel whose reply is not read: resolves once mem has
 * started answering (the first bytes came), so the request is in flight and stays so.
 */
async function inFlight(socketPath: string): Promise<net.Socket> {
  const socket = await rawConnect(socketPath);
  sockets.push(socket);
  socket.on('error', () => undefined);
  await new Promise<void>((resolve) => {
    socket.once('data', () => {
      socket.pause();
      resolve();
    });
    socket.write(encodeFrame({ type: 'get_history', channel_id: 'held' }));
  });
  return socket;
}

/** Starts trickling a frame of `announced` bytes: the first header byte now, then one byte every `everyMs`. */
function trickle(w: Watched, announced: number, everyMs: number): void {
  const bytes = Buffer.concat([header(announced), Buffer.alloc(announced, 0x20)]);
  const step = (): void => {
    if (w.closed || w.sent >= bytes.length) return;
    w.socket.write(bytes.subarray(w.sent, w.sent + 1));
    w.sent++;
  };
  step();
  const timer = setInterval(() => (w.closed ? clearInterval(timer) : step()), everyMs);
  w.socket.once('close', () => clearInterval(timer));
}

describe('connections that trickle a request', () => {
  it('cannot lock ping out of a full service: each new connection closes the oldest trickler with OVERLOADED', async () => {
    const LIMIT = 8;
    const { dir, cleanup } = tempDir('zpress');
    cleanups.push(cleanup);
    const { file, config } = writeTestConfig(dir, { limits: { max_connections: LIMIT } });
    // A history of 4 MB: a get_history whose reply is not read stays in flight (the service waits on the socket).
    const history = path.join(config.mem.data_dir, 'history');
    mkdirSync(history, { recursive: true });
    writeFileSync(path.join(history, 'held.jsonl'), `${JSON.stringify({ m: [{ role: 'user', content: 'h'.repeat(100_000) }] })}\n`.repeat(40));
    const mem = await startService('mem', file, { env: { ZINO_LOG_LEVEL: 'info' } });
    started.push(mem);

    const tricklers: Watched[] = [];
    for (let i = 0; i < LIMIT - 1; i++) {
      const w = await watched(mem.socket);
      trickle(w, 1_000_000, 100);
      tricklers.push(w);
    }
    // A ping in the last free slot: once it is answered, mem has read what every trickler sent before it.
    expect(await request(mem.socket, { type: 'ping' })).toEqual({ type: 'pong' });

    // Each round: a request that stays in flight takes the free slot (the service is full: tricklers and requests
    // being answered), then a ping must close the oldest trickler to get in. Before, it got OVERLOADED.
    const held: net.Socket[] = [];
    for (let round = 0; round < LIMIT - 1; round++) {
      held.push(await inFlight(mem.socket));
      expect(await request(mem.socket, { type: 'ping' })).toEqual({ type: 'pong' });
      await waitFor(() => tricklers[round]?.closed, `trickler ${round} to be closed`);
      expect(tricklers[round]?.frames).toEqual([
        { type: 'error', code: 'OVERLOADED', message: 'the service is full and this request had not arrived in full; closed to make room, try again' },
      ]);
      // Oldest first: the younger ones are still open.
      expect(tricklers.slice(round + 1).every((w) => !w.closed)).toBe(true);
    }
    expect(mem.logs.filter((l) => l.msg === 'connection limit reached: closed the oldest connection whose request had not arrived in full')).toHaveLength(
      LIMIT - 1,
    );
    // Full of requests being answered, and nothing to close: now a new connection is refused.
    held.push(await inFlight(mem.socket));
    await expect(request(mem.socket, { type: 'ping' })).rejects.toMatchObject({
      code: 'OVERLOADED',
      message: `too many connections (${LIMIT}); try again shortly`,
    });
    for (const socket of held) socket.destroy();
    await waitFor(
      () =>
        ping(mem.socket).then(
          () => true,
          () => false,
        ),
      'ping once the requests are gone',
    );
  });

  it('are cut at request_read_timeout_ms although their bytes keep coming', async () => {
    const sys = await startSys({ request_read_timeout_ms: 1000 });
    const w = await watched(sys.socket);
    // 1,000 bytes at one every 20 ms would take 20 s to arrive.
    trickle(w, 1000, 20);
    await waitFor(() => w.closed, 'the server to close the trickling connection');
    expect(w.frames).toEqual([{ type: 'error', code: 'TIMEOUT', message: 'no request received within 1000 ms' }]);
    // Still trickling when it was cut: more than the header had gone out, far less than the frame.
    expect(w.sentAtClose).toBeGreaterThan(4);
    expect(w.sentAtClose).toBeLessThan(1004);
  });
});

describe('connections stalling in the middle of large frames', () => {
  it('spend the receive budget: a new large frame is refused OVERLOADED, ping answers, and after they close the memory is reclaimed and large requests are taken', async () => {
    const MiB = 1024 * 1024;
    const sys = await startSys({ max_frame_bytes: MiB, max_receive_bytes: 2 * MiB });
    const stalled: Watched[] = [];
    // Three hold 600,000 bytes of a 1,000,000-byte frame each: 3 × (600,004 − 64 KiB free) of the 2 MiB.
    for (let i = 0; i < 3; i++) {
      const w = await watched(sys.socket);
      await new Promise<void>((resolve) => w.socket.write(Buffer.concat([header(1_000_000), Buffer.alloc(600_000, 0x20)]), () => resolve()));
      stalled.push(w);
      expect(await request(sys.socket, { type: 'ping' })).toEqual({ type: 'pong' });
    }
    const refused = await watched(sys.socket);
    refused.socket.write(Buffer.concat([header(1_000_000), Buffer.alloc(600_000, 0x20)]));
    await waitFor(() => refused.closed, 'the fourth large frame to be refused');
    expect(refused.frames).toEqual([
      { type: 'error', code: 'OVERLOADED', message: `the service is receiving too many large requests at once (${2 * MiB} bytes); try again shortly` },
    ]);
    expect(await request(sys.socket, { type: 'ping' })).toEqual({ type: 'pong' });
    expect(stalled.every((w) => !w.closed)).toBe(true);

    for (const w of stalled) w.socket.destroy();
    await waitFor(() => sys.logs.find((l) => l.msg === 'memory of large requests reclaimed'), 'the memory to be reclaimed');
    // Taken and parsed again: an unknown type of 900,000 bytes is answered UNKNOWN_TYPE, not OVERLOADED.
    const big = await watched(sys.socket);
    big.socket.write(encodeFrame({ type: 'bulk', blob: 'x'.repeat(900_000) }, MiB));
    await waitFor(() => big.closed, 'the large request to be answered');
    expect(big.frames.map((f) => f.code)).toEqual(['UNKNOWN_TYPE']);
  });
});
