/**
 * Kept connections (pool.ts, docs/protocol.md "Kept connections"): the opt-in extension
 * of one request per connection that ZINO's services use between themselves. Our own
 * `serve()` and `request()`/`stream()` over real sockets, raw clients and servers that
 * speak only the contract, and the races: a service ending a kept connection while a
 * request crosses it, and one that dies after reading it.
 */
import { mkdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  FrameDecoder,
  ZinoError,
  closeKeptConnections,
  connect,
  encodeFrame,
  keptConnections,
  request,
  serve,
  stream,
  withMember,
  type Frame,
  type HandlerContext,
  type Handlers,
  type ZinoServer,
} from '../../src/runtime/index.js';
import { requestOrError } from '../helpers/frames.js';
import { rawConnect } from '../helpers/raw.js';
import { captureLogger, deferred, tempDir, waitFor } from '../helpers/util.js';

let dir: string;
let cleanup: () => void;
const servers: ZinoServer[] = [];
const rawServers: net.Server[] = [];
const KEEP = { keepAliveMs: 60_000 };

beforeEach(() => {
  ({ dir, cleanup } = tempDir('zkeep'));
});
afterEach(async () => {
  closeKeptConnections();
  await Promise.all(servers.splice(0).map((s) => s.close()));
  await Promise.all(rawServers.splice(0).map((s) => new Promise((r) => s.close(r))));
  cleanup();
});

async function start(handlers: Handlers, extra: Partial<Parameters<typeof serve>[1]> = {}) {
  const { log, lines } = captureLogger();
  const socketPath = path.join(dir, 'run', `s${servers.length}.sock`);
  const server = await serve(socketPath, { handlers, log, ...extra });
  servers.push(server);
  return { server, socketPath, lines };
}

/** An `echo` handler that records each request as the handler sees it. */
function echoHandlers(seen: Frame[]): Handlers {
  return {
    echo: (req) => {
      seen.push(req);
      return { type: 'echoed', n: req.n };
    },
  };
}

/** Reads frames from a raw socket as they come; `next()` resolves with the next one, or null at EOF. */
function frameQueue(socket: net.Socket): { next: () => Promise<Frame | null>; raw: () => Buffer[] } {
  const decoder = new FrameDecoder();
  const frames: (Frame | null)[] = [];
  const chunks: Buffer[] = [];
  let wake: (() => void) | undefined;
  socket.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    frames.push(...decoder.pushAndReadAll(chunk));
    wake?.();
  });
  socket.on('end', () => {
    frames.push(null);
    wake?.();
  });
  socket.on('error', () => undefined);
  return {
    async next() {
      while (frames.length === 0) await new Promise<void>((resolve) => (wake = resolve));
      return frames.shift() as Frame | null;
    },
    raw: () => chunks,
  };
}

/** A raw server: `onRequest(frame, socket, n)` for every frame any connection sends (n counts them over the server). */
async function rawServer(onRequest: (frame: Frame, socket: net.Socket, n: number) => void): Promise<{ socketPath: string; connections: () => number }> {
  const socketPath = path.join(dir, 'raw', `r${rawServers.length}.sock`);
  mkdirSync(path.dirname(socketPath), { recursive: true });
  let connections = 0;
  let n = 0;
  const server = net.createServer((socket) => {
    connections++;
    socket.on('error', () => undefined);
    const decoder = new FrameDecoder();
    socket.on('data', (chunk: Buffer) => {
      for (const frame of decoder.pushAndReadAll(chunk)) onRequest(frame, socket, ++n);
    });
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  rawServers.push(server);
  return { socketPath, connections: () => connections };
}

describe('kept connections: the service side', () => {
  it('keeps a connection whose client asks: keep_alive last in the terminal frame, the next request on the same connection, the field never shown to the handler', async () => {
    const seen: Frame[] = [];
    const { socketPath, server } = await start(echoHandlers(seen));
    const socket = await rawConnect(socketPath);
    const frames = frameQueue(socket);
    for (let n = 1; n <= 3; n++) {
      socket.write(encodeFrame({ type: 'echo', n, keep_alive: true }));
      expect(await frames.next()).toEqual({ type: 'echoed', n, keep_alive: true });
    }
    // Last member of the text, so that a reader can delete it without a slow object.
    expect(frames.raw().at(-1)?.subarray(4).toString()).toBe('{"type":"echoed","n":3,"keep_alive":true}');
    expect(seen).toEqual([1, 2, 3].map((n) => ({ type: 'echo', n })));
    expect(server.connectionCount).toBe(1);
    // The client leaving ends it on the service's side too.
    socket.end();
    expect(await frames.next()).toBeNull();
    await waitFor(() => server.connectionCount === 0, 'the connection to close');
  });

  it('closes after the reply as the contract says when the client does not ask, asks with anything but true, or the service does not agree', async () => {
    const a = await start(echoHandlers([]));
    const b = await start(echoHandlers([]), { keepAlive: false });
    for (const [socketPath, ask] of [
      [a.socketPath, {}],
      [a.socketPath, { keep_alive: 'yes' }],
      [b.socketPath, { keep_alive: true }],
    ] as const) {
      const socket = await rawConnect(socketPath);
      const frames = frameQueue(socket);
      socket.write(encodeFrame({ type: 'echo', n: 1, ...ask }));
      expect(await frames.next()).toEqual({ type: 'echoed', n: 1 });
      expect(await frames.next()).toBeNull();
      socket.destroy();
    }
  });

  it('does not keep a connection whose client sent more after its request (it asked for nothing the service can read)', async () => {
    const seen: Frame[] = [];
    const { socketPath } = await start(echoHandlers(seen));
    const socket = await rawConnect(socketPath);
    const frames = frameQueue(socket);
    socket.write(Buffer.concat([encodeFrame({ type: 'echo', n: 1, keep_alive: true }), encodeFrame({ type: 'echo', n: 2, keep_alive: true })]));
    expect(await frames.next()).toEqual({ type: 'echoed', n: 1 });
    expect(await frames.next()).toBeNull();
    expect(seen).toHaveLength(1);
    socket.destroy();
  });

  it('cancels the request of a kept connection whose client goes away, as on a new connection', async () => {
    const started = deferred<HandlerContext>();
    const aborted = deferred<unknown>();
    const { socketPath } = await start({
      echo: (req) => ({ type: 'echoed', n: req.n }),
      slow: (_req, ctx) => {
        started.resolve(ctx);
        return new Promise((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => {
            aborted.resolve(ctx.signal.reason);
            reject(ctx.signal.reason as Error);
          });
        });
      },
    });
    const socket = await rawConnect(socketPath);
    const frames = frameQueue(socket);
    socket.write(encodeFrame({ type: 'echo', n: 1, keep_alive: true }));
    expect(await frames.next()).toMatchObject({ keep_alive: true });
    socket.write(encodeFrame({ type: 'slow', keep_alive: true }));
    await started.promise;
    socket.destroy();
    expect(await aborted.promise).toMatchObject({ code: 'CANCELLED' });
  });

  it('ends a kept connection with keep_alive_end when it waits longer than the read bound, at shutdown and when the service is full', async () => {
    // The read bound.
    const a = await start(echoHandlers([]), { requestReadTimeoutMs: 100 });
    const socket = await rawConnect(a.socketPath);
    const frames = frameQueue(socket);
    socket.write(encodeFrame({ type: 'echo', n: 1, keep_alive: true }));
    expect(await frames.next()).toMatchObject({ keep_alive: true });
    expect(await frames.next()).toEqual({ type: 'keep_alive_end' });
    expect(await frames.next()).toBeNull();
    socket.destroy();

    // Full: the kept connection that waits is the one to go, with keep_alive_end.
    const b = await start(echoHandlers([]), { maxConnections: 1 });
    const kept = await rawConnect(b.socketPath);
    const keptFrames = frameQueue(kept);
    kept.write(encodeFrame({ type: 'echo', n: 1, keep_alive: true }));
    expect(await keptFrames.next()).toMatchObject({ keep_alive: true });
    expect(await request(b.socketPath, { type: 'echo', n: 2 })).toEqual({ type: 'echoed', n: 2 });
    expect(await keptFrames.next()).toEqual({ type: 'keep_alive_end' });
    kept.destroy();

    // Shutdown: close() ends the kept connection and resolves (the client closing its side finishes it).
    const c = await start(echoHandlers([]));
    const last = await rawConnect(c.socketPath);
    const lastFrames = frameQueue(last);
    last.write(encodeFrame({ type: 'echo', n: 1, keep_alive: true }));
    expect(await lastFrames.next()).toMatchObject({ keep_alive: true });
    const closed = c.server.close();
    expect(await lastFrames.next()).toEqual({ type: 'keep_alive_end' });
    last.destroy();
    await closed;
  });

  it('reads and drops a request that crosses keep_alive_end: never handled', async () => {
    const seen: Frame[] = [];
    const { socketPath, server } = await start(echoHandlers(seen));
    const socket = await rawConnect(socketPath);
    const frames = frameQueue(socket);
    socket.write(encodeFrame({ type: 'echo', n: 1, keep_alive: true }));
    expect(await frames.next()).toMatchObject({ keep_alive: true });
    const closed = server.close();
    expect(await frames.next()).toEqual({ type: 'keep_alive_end' });
    socket.write(encodeFrame({ type: 'echo', n: 2, keep_alive: true }));
    expect(await frames.next()).toBeNull();
    socket.destroy();
    await closed;
    expect(seen.map((f) => f.n)).toEqual([1]);
  });
});

describe('kept connections: the client side', () => {
  it('sends requests and streams one after another on one connection, and hands the caller frames without keep_alive', async () => {
    const seen: Frame[] = [];
    const { socketPath, server } = await start({
      ...echoHandlers(seen),
      count: async (req, ctx) => {
        for (let i = 0; i < Number(req.to); i++) await ctx.send({ type: 'chunk', delta: String(i) });
        return { type: 'done', full_text: 'x' };
      },
    });
    expect(await request(socketPath, { type: 'echo', n: 1 }, KEEP)).toEqual({ type: 'echoed', n: 1 });
    expect(keptConnections()).toBe(1);
    const frames: Frame[] = [];
    for await (const frame of stream(socketPath, { type: 'count', to: 2 }, KEEP)) frames.push(frame);
    expect(frames).toEqual([
      { type: 'chunk', delta: '0' },
      { type: 'chunk', delta: '1' },
      { type: 'done', full_text: 'x' },
    ]);
    expect(await request(socketPath, { type: 'echo', n: 2 }, KEEP)).toEqual({ type: 'echoed', n: 2 });
    expect(server.connectionCount).toBe(1);
    expect(keptConnections()).toBe(1);
    expect(seen.map((f) => Object.keys(f))).toEqual([
      ['type', 'n'],
      ['type', 'n'],
    ]);
  });

  it('opens a connection per request at once, and keeps at most eight to one socket', async () => {
    const gate = deferred();
    const { socketPath, server } = await start({
      wait: async () => {
        await gate.promise;
        return { type: 'ok' };
      },
    });
    const calls = Array.from({ length: 12 }, () => request(socketPath, { type: 'wait' }, KEEP));
    await waitFor(() => server.connectionCount === 12, 'twelve connections');
    gate.resolve();
    await Promise.all(calls);
    expect(keptConnections()).toBe(8);
    await waitFor(() => server.connectionCount === 8, 'four to close');
  });

  it('closes a kept connection after keepAliveMs: the service sees it close', async () => {
    const { socketPath, server } = await start(echoHandlers([]));
    await request(socketPath, { type: 'echo', n: 1 }, { keepAliveMs: 50 });
    expect(server.connectionCount).toBe(1);
    await waitFor(() => keptConnections() === 0 && server.connectionCount === 0, 'the kept connection to close');
  });

  it('closes the connection when the caller stops reading a stream or aborts: nothing is kept, the service cancels', async () => {
    const cancelled = deferred<unknown>();
    const { socketPath } = await start({
      count: async (_req, ctx) => {
        ctx.signal.addEventListener('abort', () => cancelled.resolve(ctx.signal.reason));
        for (let i = 0; ; i++) await ctx.send({ type: 'chunk', delta: String(i) });
      },
    });
    for await (const frame of stream(socketPath, { type: 'count' }, KEEP)) {
      expect(frame).toEqual({ type: 'chunk', delta: '0' });
      break;
    }
    expect(await cancelled.promise).toMatchObject({ code: 'CANCELLED' });
    expect(keptConnections()).toBe(0);
  });

  it('works with a service written from the contract alone: it ignores keep_alive and closes, and nothing is kept', async () => {
    const raw = await rawServer((frame, socket) => socket.end(encodeFrame({ type: 'pong', n: frame.n })));
    for (let n = 1; n <= 3; n++) expect(await request(raw.socketPath, { type: 'ping', n }, KEEP)).toEqual({ type: 'pong', n });
    expect(raw.connections()).toBe(3);
    expect(keptConnections()).toBe(0);
  });

  it('drops a kept connection the service ends while it waits, and connects anew for the next request', async () => {
    const { socketPath, server } = await start(echoHandlers([]), { requestReadTimeoutMs: 100 });
    await request(socketPath, { type: 'echo', n: 1 }, KEEP);
    expect(keptConnections()).toBe(1);
    await waitFor(() => keptConnections() === 0 && server.connectionCount === 0, 'keep_alive_end to drop it');
    expect(await request(socketPath, { type: 'echo', n: 2 }, KEEP)).toEqual({ type: 'echoed', n: 2 });
  });

  it('sends a request again on a new connection when its kept one answers keep_alive_end: the service ended it as the request crossed', async () => {
    // A service that agrees, and ends the connection instead of answering the second request on it (a crossing).
    const handled: number[] = [];
    const raw = await rawServer((frame, socket, n) => {
      if (n === 2) {
        socket.end(encodeFrame({ type: 'keep_alive_end' }));
        return;
      }
      handled.push(Number(frame.n));
      socket.write(withMember(encodeFrame({ type: 'echoed', n: frame.n }), '"keep_alive":true'));
    });
    expect(await request(raw.socketPath, { type: 'echo', n: 1 }, KEEP)).toEqual({ type: 'echoed', n: 1 });
    expect(await request(raw.socketPath, { type: 'echo', n: 2 }, KEEP)).toEqual({ type: 'echoed', n: 2 });
    expect(handled).toEqual([1, 2]);
    expect(raw.connections()).toBe(2);

    // The same through stream().
    const frames: Frame[] = [];
    const raw2 = await rawServer((frame, socket, n) => {
      if (n === 2) socket.end(encodeFrame({ type: 'keep_alive_end' }));
      else socket.write(withMember(encodeFrame({ type: 'done', full_text: String(frame.n) }), '"keep_alive":true'));
    });
    await request(raw2.socketPath, { type: 'echo', n: 1 }, KEEP);
    for await (const frame of stream(raw2.socketPath, { type: 'echo', n: 2 }, KEEP)) frames.push(frame);
    expect(frames).toEqual([{ type: 'done', full_text: '2' }]);
    expect(raw2.connections()).toBe(2);
  });

  it('does not send a request again when its kept connection closes without a word after taking it (the service may have acted on it)', async () => {
    const handled: number[] = [];
    const raw = await rawServer((frame, socket, n) => {
      handled.push(Number(frame.n));
      if (n === 2) socket.end();
      else socket.write(withMember(encodeFrame({ type: 'echoed', n: frame.n }), '"keep_alive":true'));
    });
    await request(raw.socketPath, { type: 'echo', n: 1 }, KEEP);
    const err = await request(raw.socketPath, { type: 'echo', n: 2 }, KEEP).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ZinoError);
    expect(err).toMatchObject({ code: 'CONNECTION_CLOSED' });
    expect(handled).toEqual([1, 2]);
    expect(raw.connections()).toBe(1);
  });

  it('takes a kept connection for connect(), so the daemon can open its agr connection early on one', async () => {
    const { socketPath, server } = await start(echoHandlers([]));
    await request(socketPath, { type: 'echo', n: 1 }, KEEP);
    const early = connect(socketPath, KEEP);
    expect(keptConnections()).toBe(0);
    expect(await requestOrError(socketPath, { type: 'echo', n: 2 }, { ...KEEP, connection: early })).toEqual({ type: 'echoed', n: 2 });
    expect(server.connectionCount).toBe(1);
    expect(keptConnections()).toBe(1);
  });
});
