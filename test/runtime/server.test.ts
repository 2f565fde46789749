import { existsSync, statSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { setFlagsFromString } from 'node:v8';
import { runInThisContext } from 'node:vm';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ZinoError,
  encodeFrame,
  removeStaleSocket,
  request,
  serve,
  stream,
  type HandlerContext,
  type Handlers,
  type ZinoServer,
} from '../../src/runtime/index.js';
import { captureLogger, deferred, tempDir, waitFor } from '../helpers/util.js';
import { collectFrames } from '../helpers/frames.js';
import { halfCloseSeen, rawConnect, rawExchange, readRawFrames } from '../helpers/raw.js';

let dir: string;
let cleanup: () => void;
const servers: ZinoServer[] = [];

beforeEach(() => {
  ({ dir, cleanup } = tempDir('zsrv'));
});
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  cleanup();
});

async function start(handlers: Handlers, extra: Partial<Parameters<typeof serve>[1]> = {}, socketPath = path.join(dir, 'run', 's.sock')) {
  const { log, lines } = captureLogger();
  const server = await serve(socketPath, { handlers, log, ...extra });
  servers.push(server);
  return { server, socketPath, lines };
}

describe('serve: routing', () => {
  it('answers ping with pong', async () => {
    const { socketPath } = await start({});
    expect(await request(socketPath, { type: 'ping' })).toEqual({ type: 'pong' });
  });

  it('answers an unknown type with UNKNOWN_TYPE naming it and what is handled', async () => {
    const { socketPath } = await start({ get: () => ({ type: 'ok' }) });
    const { frames } = await rawExchange(socketPath, { type: 'frobnicate' });
    expect(frames).toEqual([{ type: 'error', code: 'UNKNOWN_TYPE', message: 'unknown request type "frobnicate" (this service handles: ping, get)' }]);
  });

  it('answers a request without type, or with a non-string type, with INVALID_REQUEST', async () => {
    const { socketPath } = await start({ get: () => ({ type: 'ok' }) });
    const a = await rawExchange(socketPath, { message: 'hi' });
    expect(a.frames[0]).toMatchObject({ type: 'error', code: 'INVALID_REQUEST', message: expect.stringContaining('no "type"') });
    const b = await rawExchange(socketPath, { type: 7 });
    expect(b.frames[0]).toMatchObject({ type: 'error', code: 'INVALID_REQUEST', message: 'field "type" must be a string' });
  });

  it('routes a request without type to the untyped handler', async () => {
    const { socketPath } = await start({}, { untyped: (req) => ({ type: 'response', content: String(req.message) }) });
    expect(await request(socketPath, { message: 'hi' })).toEqual({ type: 'response', content: 'hi' });
  });

  it('turns a throwing handler into an INTERNAL error frame without a stack, and keeps serving', async () => {
    const { socketPath, lines } = await start({
      boom: () => {
        throw new TypeError('secret internals at /src/x.ts:12');
      },
      refused: () => {
        throw new ZinoError('NOT_CONFIGURED', 'set [api] base_url');
      },
    });
    const { frames } = await rawExchange(socketPath, { type: 'boom' });
    expect(frames).toEqual([{ type: 'error', code: 'INTERNAL', message: 'internal error (see the service log)' }]);
    expect(JSON.stringify(frames)).not.toContain('secret');
    expect(lines.some((l) => l.msg === 'handler threw an unexpected error' && JSON.stringify(l.err).includes('secret internals'))).toBe(true);
    await expect(request(socketPath, { type: 'refused' })).rejects.toMatchObject({ code: 'NOT_CONFIGURED', message: 'set [api] base_url' });
    expect(await request(socketPath, { type: 'ping' })).toEqual({ type: 'pong' });
  });

  it('ignores bytes sent after the request frame', async () => {
    const { socketPath } = await start({ echo: (req) => ({ type: 'ok', v: req.v }) });
    const bytes = Buffer.concat([encodeFrame({ type: 'echo', v: 1 }), encodeFrame({ type: 'echo', v: 2 }), Buffer.from('garbage')]);
    const { frames } = await rawExchange(socketPath, bytes);
    expect(frames).toEqual([{ type: 'ok', v: 1 }]);
  });

  it('passes the caller request_id to the handler and onto its log lines', async () => {
    let seen = '';
    const { socketPath, lines } = await start({
      get: (_req, ctx) => {
        seen = ctx.requestId;
        ctx.log.info('inside handler');
        return { type: 'ok' };
      },
    });
    await request(socketPath, { type: 'get', request_id: 'abc-123' });
    expect(seen).toBe('abc-123');
    expect(lines.find((l) => l.msg === 'inside handler')).toMatchObject({ request_id: 'abc-123', type: 'get', service: 'test' });
    await request(socketPath, { type: 'get' });
    expect(seen).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it("gives every handler a context with V8's fast properties, of one shape for every request", async () => {
    // An object literal with getters is a dictionary-mode object: every read a handler made of
    // ctx was a slow lookup (docs/benchmarks.md, round 11). V8's own view, through its natives.
    setFlagsFromString('--allow-natives-syntax');
    // Compiled after the flag is set: natives syntax cannot appear in this file's own source.
    const hasFastProperties = runInThisContext('(o) => %HasFastProperties(o)') as (o: object) => boolean;
    const haveSameMap = runInThisContext('(a, b) => %HaveSameMap(a, b)') as (a: object, b: object) => boolean;
    const contexts: HandlerContext[] = [];
    const { socketPath } = await start({
      get: async (_req, ctx) => {
        contexts.push(ctx);
        await ctx.send({ type: 'chunk', delta: ctx.signal.aborted ? 'aborted' : 'live' });
        return { type: 'done' };
      },
    });
    expect(await collectFrames(socketPath, { type: 'get', request_id: 'one' })).toEqual([{ type: 'chunk', delta: 'live' }, { type: 'done' }]);
    await collectFrames(socketPath, { type: 'get' });
    const [first, second] = contexts as [HandlerContext, HandlerContext];
    expect(first.requestId).toBe('one');
    expect(hasFastProperties(first)).toBe(true);
    expect(haveSameMap(first, second)).toBe(true);
  });
});

describe('serve: connection limit', () => {
  it('answers a connection over max_connections with OVERLOADED and keeps serving the others', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const { socketPath, server } = await start(
      {
        hold: async () => {
          await held;
          return { type: 'ok' };
        },
      },
      { maxConnections: 1 },
    );
    const first = request(socketPath, { type: 'hold' });
    await waitFor(() => server.connectionCount === 1, 'the first connection');
    await expect(request(socketPath, { type: 'ping' })).rejects.toMatchObject({ code: 'OVERLOADED', message: 'too many connections (1); try again shortly' });
    release();
    expect(await first).toEqual({ type: 'ok' });
    await waitFor(() => server.connectionCount === 0, 'the connection to close');
    expect(await request(socketPath, { type: 'ping' })).toEqual({ type: 'pong' });
  });
});

describe('serve: idle connections at the limit', () => {
  it('closes the oldest connection that has sent nothing to make room, so ping still answers', async () => {
    // Regression: max_connections idle connections made every caller, ping too, get OVERLOADED.
    const { socketPath, server, lines } = await start({}, { maxConnections: 20 });
    const partial = await rawConnect(socketPath);
    partial.write(Buffer.from([0, 0])); // half a header: it has sent something, so it keeps its slot
    const silent = [];
    for (let i = 0; i < 19; i++) silent.push(await rawConnect(socketPath));
    for (const socket of [partial, ...silent]) socket.on('error', () => undefined);
    // The server's close arrives as the end of the stream (the client allows half-open sockets).
    const closed = silent.map((socket) => new Promise<void>((resolve) => socket.once('end', () => resolve())));
    let oldestClosed = false;
    void closed[0]?.then(() => (oldestClosed = true));
    await waitFor(() => server.connectionCount === 20, 'twenty open connections');
    expect(await request(socketPath, { type: 'ping' })).toEqual({ type: 'pong' });
    await waitFor(() => oldestClosed, 'the oldest silent connection to be closed');
    // The other 19 stay: the half header's and 18 silent ones (the ping's own has closed).
    await waitFor(() => server.connectionCount === 19, 'the ping connection to close');
    expect(partial.readableEnded).toBe(false);
    expect(silent.slice(1).every((socket) => !socket.readableEnded)).toBe(true);
    expect(lines.some((l) => l.msg === 'connection limit reached: closed the oldest connection that had sent nothing')).toBe(true);
    for (const socket of [partial, ...silent]) socket.destroy();
  });
});

describe('serve: bytes held in partly received requests', () => {
  it('refuses a large request with OVERLOADED once the budget is spent, still answers small ones, and takes large ones again after', async () => {
    // Regression: connections stalling mid-frame could make one service hold max_connections × max_frame_bytes.
    const MiB = 1024 * 1024;
    const { socketPath, server } = await start(
      { size: (req) => ({ type: 'size', bytes: String(req.blob).length }) },
      { maxFrameBytes: MiB, maxReceiveBytes: 2 * MiB },
    );
    const header = (length: number): Buffer => {
      const b = Buffer.alloc(4);
      b.writeUInt32BE(length);
      return b;
    };
    const stalled = [];
    for (let i = 0; i < 2; i++) {
      const socket = await rawConnect(socketPath);
      socket.on('error', () => undefined);
      socket.write(Buffer.concat([header(900_000), Buffer.alloc(800_000, 0x20)]));
      stalled.push(socket);
    }
    // Each holds 800,004 bytes, of which all but the free 64 KiB count.
    await waitFor(() => server.receivingBytes === 2 * (800_004 - 65_536), 'both stalled requests to be received');
    const third = await rawExchange(socketPath, Buffer.concat([header(900_000), Buffer.alloc(800_000, 0x20)]), { timeoutMs: 30_000 });
    expect(third.frames).toEqual([
      { type: 'error', code: 'OVERLOADED', message: `the service is receiving too many large requests at once (${2 * MiB} bytes); try again shortly` },
    ]);
    expect(third.closedByServer).toBe(true);
    expect(await request(socketPath, { type: 'ping' })).toEqual({ type: 'pong' });
    for (const socket of stalled) socket.destroy();
    await waitFor(() => server.receivingBytes === 0, 'the stalled requests to be given back');
    const blob = 'x'.repeat(900_000);
    expect(await request(socketPath, { type: 'size', blob }, { maxFrameBytes: MiB })).toEqual({ type: 'size', bytes: 900_000 });
  });
});

describe('serve: protocol errors', () => {
  it('answers an oversize length header with FRAME_TOO_LARGE and closes', async () => {
    const { socketPath } = await start({}, { maxFrameBytes: 1024 });
    const header = Buffer.alloc(4);
    header.writeUInt32BE(1025);
    const { frames, closedByServer } = await rawExchange(socketPath, header);
    expect(frames).toEqual([{ type: 'error', code: 'FRAME_TOO_LARGE', message: 'frame of 1025 bytes exceeds the limit of 1024 bytes' }]);
    expect(closedByServer).toBe(true);
  });

  it.each([
    ['bad JSON', Buffer.from('{nope')],
    ['a JSON array', Buffer.from('[]')],
    ['invalid UTF-8', Buffer.from([0xff, 0xfe])],
  ])('answers %s with INVALID_FRAME and closes', async (_name, body) => {
    const { socketPath } = await start({});
    const header = Buffer.alloc(4);
    header.writeUInt32BE(body.length);
    const { frames } = await rawExchange(socketPath, Buffer.concat([header, body]));
    expect(frames).toHaveLength(1);
    expect(frames[0]).toMatchObject({ type: 'error', code: 'INVALID_FRAME' });
  });

  it('answers a frame truncated by a half-close with INVALID_FRAME', async () => {
    const { socketPath } = await start({});
    const whole = encodeFrame({ type: 'ping' });
    const { frames } = await rawExchange(socketPath, whole.subarray(0, whole.length - 2), { halfClose: true });
    expect(frames[0]).toMatchObject({ type: 'error', code: 'INVALID_FRAME', message: expect.stringContaining('stream ended inside a frame') });
  });

  it('closes quietly when a client connects and leaves without a request', async () => {
    const { socketPath, server } = await start({});
    const { frames } = await rawExchange(socketPath, Buffer.alloc(0), { halfClose: true });
    expect(frames).toEqual([]);
    await waitFor(() => server.connectionCount === 0, 'the connection to be dropped');
  });

  it('times out a client that never sends its request', async () => {
    const { socketPath } = await start({}, { requestReadTimeoutMs: 100 });
    const { frames } = await rawExchange(socketPath, Buffer.from([0, 0]));
    expect(frames).toEqual([{ type: 'error', code: 'TIMEOUT', message: 'no request received within 100 ms' }]);
  });

  it('times out each silent client in its turn, one bound for all, while the clients between them are answered', async () => {
    const { socketPath, server } = await start({}, { requestReadTimeoutMs: 150 });
    const first = rawExchange(socketPath, Buffer.from([0, 0]));
    // A client whose request comes in time is answered and its bound never fires (it would answer TIMEOUT instead).
    expect((await rawExchange(socketPath, { type: 'ping' })).frames).toEqual([{ type: 'pong' }]);
    const second = rawExchange(socketPath, Buffer.from([0]));
    const timedOut = { type: 'error', code: 'TIMEOUT', message: 'no request received within 150 ms' };
    expect((await first).frames).toEqual([timedOut]);
    expect((await second).frames).toEqual([timedOut]);
    expect((await rawExchange(socketPath, { type: 'ping' })).frames).toEqual([{ type: 'pong' }]);
    await waitFor(() => server.connectionCount === 0, 'every connection to be done');
  });
});

describe('serve: cancellation', () => {
  it('aborts the handler signal when the client goes away', async () => {
    let aborted: unknown;
    let started = false;
    const { socketPath } = await start({
      slow: (_req, ctx) =>
        new Promise((_resolve, reject) => {
          started = true;
          ctx.signal.addEventListener('abort', () => {
            aborted = ctx.signal.reason;
            reject(ctx.signal.reason);
          });
        }),
    });
    const controller = new AbortController();
    const pending = request(socketPath, { type: 'slow' }, { signal: controller.signal });
    await waitFor(() => started, 'the handler to start');
    controller.abort();
    await expect(pending).rejects.toMatchObject({ code: 'CANCELLED' });
    await waitFor(() => aborted, 'the handler to see the abort');
    expect(aborted).toMatchObject({ code: 'CANCELLED', message: 'the client disconnected' });
  });

  it('still answers a client that half-closes after its request', async () => {
    const gate = deferred();
    const { socketPath } = await start({
      slow: async (_req, ctx) => {
        await gate.promise;
        return { type: 'result', aborted: ctx.signal.aborted };
      },
    });
    const socket = await rawConnect(socketPath);
    const frames = readRawFrames(socket);
    await halfCloseSeen(socket, socketPath, { type: 'slow' });
    // The server has read the half-close (see halfCloseSeen) while the handler still ran; only now may it answer.
    gate.resolve();
    expect((await frames).frames).toEqual([{ type: 'result', aborted: false }]);
  });

  it('cancels a half-closed client that later closes entirely', async () => {
    let aborted = false;
    const { socketPath } = await start({
      slow: (_req, ctx) =>
        new Promise((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => {
            aborted = true;
            reject(ctx.signal.reason);
          });
        }),
    });
    const socket = await rawConnect(socketPath);
    await halfCloseSeen(socket, socketPath, { type: 'slow' });
    // The server has read the half-close and not cancelled (a fixed sleep could not tell "not yet" from "never").
    expect(aborted).toBe(false);
    socket.destroy();
    await waitFor(() => aborted, 'the abort after the full close');
  });
});

describe('serve: backpressure', () => {
  it('stalls a streaming handler while the client does not read, then delivers everything', async () => {
    let sent = 0;
    const big = 'x'.repeat(64 * 1024);
    const { socketPath } = await start({
      flood: async (_req, ctx) => {
        for (let i = 0; i < 256; i++) {
          await ctx.send({ type: 'chunk', delta: big });
          sent++;
        }
        return { type: 'done', full_text: '' };
      },
    });
    const socket = await rawConnect(socketPath);
    socket.pause();
    socket.write(encodeFrame({ type: 'flood' }));
    // Stalled: a ping round trip to the same server (which runs in this process, so its
    // writes had every turn of the event loop that the ping needed) left `sent` where it was.
    // Polled, never slept: a slow machine only takes more rounds to fill the buffers.
    let stalledAt = -1;
    await waitFor(
      async () => {
        const before = sent;
        await request(socketPath, { type: 'ping' });
        await request(socketPath, { type: 'ping' });
        if (sent !== before || sent === 0) return false;
        stalledAt = sent;
        return true;
      },
      'the handler to stall',
      30_000,
      0,
    );
    expect(await request(socketPath, { type: 'ping' })).toEqual({ type: 'pong' });
    expect(sent).toBe(stalledAt);
    // 256 × 64 KiB = 16 MiB would be buffered without backpressure; the buffers hold about 1 MiB at most.
    expect(stalledAt).toBeGreaterThan(0);
    expect(stalledAt).toBeLessThan(16);
    let frames = 0;
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4 && pending.length >= 4 + pending.readUInt32BE(0)) {
        pending = pending.subarray(4 + pending.readUInt32BE(0));
        frames++;
      }
    });
    socket.resume();
    await waitFor(() => frames === 257, 'all 257 frames', 30_000);
    expect(sent).toBe(256);
    socket.destroy();
  });
});

describe('serve: socket file', () => {
  it('creates the parent directory 0750 and the socket 0660', async () => {
    const { socketPath } = await start({}, {}, path.join(dir, 'a', 'b', 'x.sock'));
    expect(statSync(path.dirname(socketPath)).mode & 0o777).toBe(0o750);
    expect(statSync(socketPath).mode & 0o777).toBe(0o660);
    expect(statSync(socketPath).isSocket()).toBe(true);
  });

  it('refuses to start when a live server answers on the path', async () => {
    const { socketPath } = await start({});
    const { log } = captureLogger();
    await expect(serve(socketPath, { handlers: {}, log })).rejects.toMatchObject({ code: 'ADDRESS_IN_USE' });
    expect(await request(socketPath, { type: 'ping' })).toEqual({ type: 'pong' });
  });

  it('removes a stale socket file and starts', async () => {
    const socketPath = path.join(dir, 'stale.sock');
    // A server that dies without cleaning up leaves a socket file nobody listens on.
    const made = spawnSync(process.execPath, [
      '-e',
      `require('net').createServer().listen(${JSON.stringify(socketPath)}, () => process.kill(process.pid, 'SIGKILL'))`,
    ]);
    expect(made.signal).toBe('SIGKILL');
    expect(statSync(socketPath).isSocket()).toBe(true);
    const { lines } = await start({}, {}, socketPath);
    expect(await request(socketPath, { type: 'ping' })).toEqual({ type: 'pong' });
    expect(lines.some((l) => l.msg === 'removed stale socket file')).toBe(true);
  });

  it('refuses to replace a path that is not a socket', async () => {
    const socketPath = path.join(dir, 'file.sock');
    writeFileSync(socketPath, 'precious');
    const { log } = captureLogger();
    await expect(serve(socketPath, { handlers: {}, log })).rejects.toMatchObject({
      code: 'ADDRESS_IN_USE',
      message: expect.stringContaining('is not a socket'),
    });
  });

  it('refuses a socket path longer than sun_path allows', async () => {
    const { log } = captureLogger();
    await expect(serve(path.join(dir, 'x'.repeat(120)), { handlers: {}, log })).rejects.toMatchObject({ code: 'CONFIG' });
  });
});

describe('removeStaleSocket', () => {
  it('removes a socket nobody listens on, but never a live socket or a regular file', async () => {
    const { socketPath } = await start({});
    expect(await removeStaleSocket(socketPath)).toBe(false);
    expect(await request(socketPath, { type: 'ping' })).toEqual({ type: 'pong' });
    const stale = path.join(dir, 'stale2.sock');
    spawnSync(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(stale)}, () => process.kill(process.pid, 'SIGKILL'))`]);
    expect(await removeStaleSocket(stale)).toBe(true);
    expect(existsSync(stale)).toBe(false);
    const plain = path.join(dir, 'plain.sock');
    writeFileSync(plain, 'data');
    expect(await removeStaleSocket(plain)).toBe(false);
    expect(existsSync(plain)).toBe(true);
  });
});

describe('serve: close()', () => {
  it('lets an in-flight request finish, removes the socket file, and is idempotent', async () => {
    const gate = deferred();
    let started = false;
    const { socketPath, server } = await start({
      slow: async () => {
        started = true;
        await gate.promise;
        return { type: 'result', ok: true };
      },
    });
    const pending = request(socketPath, { type: 'slow' });
    await waitFor(() => started, 'the request to reach its handler');
    const closing = server.close();
    expect(server.close()).toBe(closing);
    await expect(request(socketPath, { type: 'ping' })).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
    // Still in flight after the close began and new connections were refused: let it finish.
    gate.resolve();
    expect(await pending).toEqual({ type: 'result', ok: true });
    await closing;
    expect(existsSync(socketPath)).toBe(false);
  });

  it('cancels requests still running after the grace period with SHUTTING_DOWN', async () => {
    const { socketPath, server } = await start(
      {
        forever: (_req, ctx) => new Promise((_r, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))),
      },
      { shutdownGraceMs: 100 },
    );
    const outcome = request(socketPath, { type: 'forever' }).catch((err: unknown) => err);
    await waitFor(() => server.connectionCount === 1, 'the request to arrive');
    await server.close();
    expect(await outcome).toMatchObject({ code: 'SHUTTING_DOWN', message: 'the service is shutting down' });
  });
});

describe('stream()', () => {
  it('yields frames up to and including the terminal one', async () => {
    const { socketPath } = await start({
      gen: async (_req, ctx) => {
        for (const d of ['a', 'b', 'c']) await ctx.send({ type: 'chunk', delta: d });
        return { type: 'done', full_text: 'abc' };
      },
    });
    expect(await collectFrames(socketPath, { type: 'gen' })).toEqual([
      { type: 'chunk', delta: 'a' },
      { type: 'chunk', delta: 'b' },
      { type: 'chunk', delta: 'c' },
      { type: 'done', full_text: 'abc' },
    ]);
  });

  it('cancels the server-side request when the consumer breaks out of the loop', async () => {
    let aborted = false;
    const { socketPath } = await start({
      gen: async (_req, ctx) => {
        ctx.signal.addEventListener('abort', () => (aborted = true));
        for (let i = 0; ; i++) {
          await ctx.send({ type: 'chunk', delta: String(i) });
          await new Promise((r) => setTimeout(r, 5));
        }
      },
    });
    for await (const f of stream(socketPath, { type: 'gen' })) {
      if (f.delta === '3') break;
    }
    await waitFor(() => aborted, 'the server to see the consumer leave');
  });
});
