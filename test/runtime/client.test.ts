import net from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  FrameDecoder,
  FrameWriter,
  RemoteError,
  connect,
  encodeFrame,
  ping,
  request,
  serve,
  stream,
  type Frame,
  type ZinoServer,
} from '../../src/runtime/index.js';
import { collectFrames } from '../helpers/frames.js';
import { rng } from '../helpers/random.js';
import { captureLogger, tempDir, waitFor } from '../helpers/util.js';

let dir: string;
let cleanup: () => void;
const closers: (() => Promise<void> | void)[] = [];

beforeEach(() => {
  ({ dir, cleanup } = tempDir('zcli'));
});
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  cleanup();
});

/** A raw server that reads one request frame and then does whatever `onRequest` says. */
async function rawServer(onRequest: (socket: net.Socket, request: Frame) => unknown): Promise<string> {
  const socketPath = path.join(dir, `raw-${closers.length}.sock`);
  const server = net.createServer((socket) => {
    const decoder = new FrameDecoder();
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      const [frame] = decoder.pushAndReadAll(chunk);
      // A handler that fails drops the connection, so the client under test sees it.
      if (frame) Promise.resolve(onRequest(socket, frame)).catch(() => socket.destroy());
    });
  });
  await new Promise<void>((r) => server.listen(socketPath, r));
  closers.push(() => new Promise<void>((r) => server.close(() => r())));
  return socketPath;
}

async function zinoServer(handlers: Parameters<typeof serve>[1]['handlers']): Promise<ZinoServer> {
  const server = await serve(path.join(dir, 'z.sock'), { handlers, log: captureLogger().log });
  closers.push(() => server.close());
  return server;
}

describe('request()', () => {
  it('resolves with the single reply frame', async () => {
    const server = await zinoServer({ get: () => ({ type: 'system_prompt', content: 'hi' }) });
    expect(await request(server.socketPath, { type: 'get' })).toEqual({ type: 'system_prompt', content: 'hi' });
  });

  it('rejects an error frame as RemoteError carrying the remote code', async () => {
    const socketPath = await rawServer((s) => s.end(encodeFrame({ type: 'error', message: 'no such channel', code: 'INVALID_REQUEST' })));
    const err = await request(socketPath, { type: 'x' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RemoteError);
    expect(err).toMatchObject({ code: 'INVALID_REQUEST', message: 'no such channel' });
  });

  it('maps an error frame without a code (a contract-only service) to UPSTREAM_ERROR', async () => {
    const socketPath = await rawServer((s) => s.end(encodeFrame({ type: 'error', message: 'boom' })));
    await expect(request(socketPath, { type: 'x' })).rejects.toMatchObject({ code: 'UPSTREAM_ERROR', message: 'boom' });
  });

  it('reports a missing socket as UPSTREAM_UNAVAILABLE with a hint', async () => {
    await expect(request(path.join(dir, 'nobody.sock'), { type: 'ping' }, { name: 'rtr' })).rejects.toMatchObject({
      code: 'UPSTREAM_UNAVAILABLE',
      message: expect.stringMatching(/cannot connect to rtr at .*nobody\.sock: ENOENT \(no socket there; is the service running\?\)/),
    });
  });

  it('reports a server that closes before replying as CONNECTION_CLOSED, never a hang', async () => {
    const socketPath = await rawServer((s) => s.end());
    await expect(request(socketPath, { type: 'x' }, { name: 'mem' })).rejects.toMatchObject({
      code: 'CONNECTION_CLOSED',
      message: 'mem closed the connection before sending a complete reply',
    });
  });

  it('reports a server that dies in the middle of a frame as CONNECTION_CLOSED', async () => {
    const socketPath = await rawServer((s) => s.end(encodeFrame({ type: 'ok', pad: 'x'.repeat(100) }).subarray(0, 50)));
    await expect(request(socketPath, { type: 'x' })).rejects.toMatchObject({ code: 'CONNECTION_CLOSED' });
  });

  it('rejects with TIMEOUT when the whole exchange exceeds timeoutMs', async () => {
    const socketPath = await rawServer(() => undefined);
    await expect(request(socketPath, { type: 'x' }, { timeoutMs: 100, name: 'sys' })).rejects.toMatchObject({
      code: 'TIMEOUT',
      message: 'sys did not answer within 100 ms',
    });
  });

  it('rejects at once with CANCELLED when the signal is already aborted', async () => {
    const server = await zinoServer({});
    await expect(request(server.socketPath, { type: 'ping' }, { signal: AbortSignal.abort() })).rejects.toMatchObject({ code: 'CANCELLED' });
  });

  it('closes the connection when aborted mid-request, which the server sees', async () => {
    let serverSawClose = false;
    let serverHasRequest = false;
    const socketPath = await rawServer((s) => {
      serverHasRequest = true;
      s.on('close', () => (serverSawClose = true));
    });
    const controller = new AbortController();
    const pending = request(socketPath, { type: 'x' }, { signal: controller.signal });
    // Mid-request: the server has the request and has not answered.
    await waitFor(() => serverHasRequest, 'the server to read the request');
    controller.abort();
    await expect(pending).rejects.toMatchObject({ code: 'CANCELLED' });
    await waitFor(() => serverSawClose, 'the server to see the connection close');
  });
});

describe('connect()', () => {
  it('rejects with TIMEOUT when the connection is not made within connectTimeoutMs', async () => {
    const server = await zinoServer({});
    // On Linux a Unix-socket connect completes or fails at once; the bound matters when the
    // event loop is stalled, which this reproduces: libuv runs due timers before the connect callback.
    const pending = connect(server.socketPath, { connectTimeoutMs: 1, name: 'ctx' });
    const until = Date.now() + 20;
    while (Date.now() < until) {
      // busy-wait: stall the loop past the deadline
    }
    await expect(pending).rejects.toMatchObject({ code: 'TIMEOUT', message: expect.stringContaining('connecting to ctx') });
  });

  it("is stopped by stream()'s overall timeoutMs while it is still in progress, which then rejects with TIMEOUT", async () => {
    const server = await zinoServer({});
    // As above: the loop is stalled past the overall bound before the connect callback runs.
    const pending = request(server.socketPath, { type: 'ping' }, { timeoutMs: 1, connectTimeoutMs: 60_000, name: 'ctx' });
    const until = Date.now() + 20;
    while (Date.now() < until) {
      // busy-wait: stall the loop past the deadline
    }
    await expect(pending).rejects.toMatchObject({ code: 'TIMEOUT', message: 'ctx did not answer within 1 ms', detail: { phase: 'connect' } });
  });

  it('rejects with CANCELLED when aborted', async () => {
    const server = await zinoServer({});
    const controller = new AbortController();
    const pending = connect(server.socketPath, { signal: controller.signal });
    controller.abort();
    await expect(pending).rejects.toMatchObject({ code: 'CANCELLED' });
  });

  it('reports a stale socket file nobody listens on as UPSTREAM_UNAVAILABLE (ECONNREFUSED)', async () => {
    const { spawnSync } = await import('node:child_process');
    const socketPath = path.join(dir, 'stale.sock');
    spawnSync(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(socketPath)}, () => process.kill(process.pid, 'SIGKILL'))`]);
    await expect(connect(socketPath)).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', message: expect.stringContaining('ECONNREFUSED') });
  });

  it("sets up each connection's net.Socket without a new hidden class for its options (V8's inline-cache log)", async () => {
    // Node 20's Socket copies its options with a spread and sets four fields on the copy; on its V8
    // that gives every copy a hidden class of its own, and each read of it in the stream set-up
    // misses its cache (docs/benchmarks.md, round 11). A client process that only connects, with V8
    // logging its inline caches: a read of `objectMode` that missed a megamorphic cache is logged
    // once per connection without socketOptions() (the control run below, so that the test would
    // notice a Node whose log says nothing of it), and not at all with it.
    const { execFile } = await import('node:child_process');
    const { promisify } = await import('node:util');
    const { readFileSync } = await import('node:fs');
    const { pathToFileURL } = await import('node:url');
    const { PACKAGE_ROOT } = await import('../../src/testing/paths.js');
    const server = await zinoServer({});
    const client = pathToFileURL(path.join(PACKAGE_ROOT, 'dist/src/runtime/transport/client.js')).href;
    const missedReads = async (connectOnce: string): Promise<number> => {
      const script = `import net from 'node:net'; import { connect } from ${JSON.stringify(client)};
        const path = ${JSON.stringify(server.socketPath)};
        for (let i = 0; i < 200; i++) { const socket = await ${connectOnce}; socket.destroy(); }`;
      const logFile = path.join(dir, `ic-${Math.random().toString(36).slice(2)}.log`);
      await promisify(execFile)(process.execPath, ['--log-ic', `--logfile=${logFile}`, '--no-logfile-per-isolate', '--input-type=module', '-e', script]);
      return (readFileSync(logFile, 'utf8').match(/,N,N,0x[0-9a-f]+,objectMode,/g) ?? []).length;
    };
    const plain = "new Promise((resolve, reject) => net.createConnection({ path }).once('connect', function () { resolve(this); }).once('error', reject))";
    expect(await missedReads(plain)).toBeGreaterThan(100);
    expect(await missedReads('connect(path)')).toBe(0);
  });
});

describe('stream() on a connection opened earlier', () => {
  it('uses it, and reports one the server closed before the request as never taken (UPSTREAM_UNAVAILABLE)', async () => {
    const server = await zinoServer({ echo: (req) => ({ type: 'ok', v: req.v }) });
    const early = connect(server.socketPath);
    expect(await request(server.socketPath, { type: 'echo', v: 1 }, { connection: early })).toEqual({ type: 'ok', v: 1 });

    const closing = net.createServer((s) => setTimeout(() => s.destroy(), 10));
    const closingPath = path.join(dir, 'closing.sock');
    await new Promise<void>((r) => closing.listen(closingPath, r));
    closers.push(() => new Promise<void>((r) => closing.close(() => r())));
    const idle = connect(closingPath);
    const socket = await idle;
    await new Promise((r) => socket.once('close', r));
    await expect(request(closingPath, { type: 'x' }, { connection: idle, name: 'agr' })).rejects.toMatchObject({
      code: 'UPSTREAM_UNAVAILABLE',
      message: 'agr closed the connection before taking the request',
    });
  });
});

describe('stream() with mergeChunks', () => {
  it('joins chunk frames that waited for a slow consumer, and passes other frames as they are', async () => {
    const server = await zinoServer({
      gen: async (_req, ctx) => {
        for (const d of ['a', 'b', 'c', 'd']) await ctx.send({ type: 'chunk', delta: d });
        await ctx.send({ type: 'iteration', n: 2 });
        await ctx.send({ type: 'chunk', delta: 'e' });
        return { type: 'done', full_text: 'abcde' };
      },
    });
    // The handler writes every frame in one tick, so they reach the client in one read:
    // exactly the backlog a consumer finds when it falls behind.
    expect(await collectFrames(server.socketPath, { type: 'gen' }, { mergeChunks: true })).toEqual([
      { type: 'chunk', delta: 'abcd' },
      { type: 'iteration', n: 2 },
      { type: 'chunk', delta: 'e' },
      { type: 'done', full_text: 'abcde' },
    ]);
    const plain = await collectFrames(server.socketPath, { type: 'gen' });
    expect(plain.filter((f) => f.type === 'chunk')).toHaveLength(5);
  });
});

describe('ping()', () => {
  it('resolves with a round-trip time', async () => {
    const server = await zinoServer({});
    // A round-trip time, not a bound on it: a loaded machine may take any time.
    const ms = await ping(server.socketPath);
    expect(ms).toBeGreaterThan(0);
    expect(Number.isFinite(ms)).toBe(true);
  });

  it('rejects when the reply is not pong', async () => {
    const socketPath = await rawServer((s) => s.end(encodeFrame({ type: 'ok' })));
    await expect(ping(socketPath)).rejects.toMatchObject({ code: 'UPSTREAM_ERROR' });
  });
});

describe('stream() over a real socket', () => {
  it('decodes 100,000 frames of varied sizes sent at random fragmentation, every one identically', async () => {
    const random = rng(7);
    const alphabet = ['a', 'Z', '0', ' ', '\n', '"', '\\', 'é', '€', '🎉', '日', '\u0000'];
    const frames: Frame[] = [];
    for (let i = 0; i < 100_000; i++) {
      const size = random() < 0.01 ? 2000 + Math.floor(random() * 20_000) : Math.floor(random() * 120);
      let text = '';
      for (let j = 0; j < size; j++) text += alphabet[Math.floor(random() * alphabet.length)];
      frames.push(i === 99_999 ? { type: 'done', full_text: text, i } : { type: 'chunk', delta: text, i });
    }
    const bytes = Buffer.concat(frames.map((f) => encodeFrame(f)));
    const socketPath = await rawServer(async (socket) => {
      // Random piece sizes from 1 byte to 64 KiB, with pauses so the reader sees them apart.
      for (let at = 0; at < bytes.length;) {
        const size = 1 + Math.floor(random() ** 3 * 65_536);
        const ok = socket.write(bytes.subarray(at, at + size));
        at += size;
        if (!ok) await new Promise((r) => socket.once('drain', r));
        else if (random() < 0.05) await new Promise((r) => setImmediate(r));
      }
      socket.end();
    });
    let index = 0;
    let mismatches = 0;
    for await (const frame of stream(socketPath, { type: 'gen' })) {
      if (JSON.stringify(frame) !== JSON.stringify(frames[index])) mismatches++;
      index++;
    }
    expect(index).toBe(100_000);
    expect(mismatches).toBe(0);
  });
});

describe('FrameWriter', () => {
  it('hands frames written without waiting to the socket in order, one at a time once its buffer is full', async () => {
    const frames = Array.from({ length: 64 }, (_, i) => ({ type: 'chunk', i, delta: i % 4 === 0 ? 'x'.repeat(64 * 1024) : `small ${i}` }));
    const received: Frame[] = [];
    let peer: net.Socket | undefined;
    const done = new Promise<void>((resolve) => {
      // The reader starts paused: the kernel's buffer fills, and the writer must wait for `drain`.
      const server = net.createServer({ pauseOnConnect: true }, (socket) => {
        peer = socket;
        const decoder = new FrameDecoder();
        socket.on('data', (chunk: Buffer) => received.push(...decoder.pushAndReadAll(chunk)));
        socket.on('end', () => resolve());
      });
      closers.push(() => new Promise<void>((r) => server.close(() => r())));
      server.listen(path.join(dir, 'w.sock'));
    });
    const socket = await connect(path.join(dir, 'w.sock'));
    const writer = new FrameWriter(socket, 16 * 1024 * 1024);
    const accepted: number[] = [];
    const writes = frames.map((frame) => writer.write(frame).then(() => accepted.push(frame.i)));
    // The frames behind a full buffer wait in the writer: the socket holds at most the one that filled it,
    // not the megabyte written (each frame is handed over once the one before it was accepted).
    expect(socket.writableLength).toBeLessThan(256 * 1024);
    await waitFor(() => peer !== undefined, 'the connection');
    peer?.resume();
    await Promise.all(writes);
    socket.end();
    await done;
    expect(received).toEqual(frames);
    expect(accepted).toEqual(frames.map((frame) => frame.i));
  });
});
