/**
 * How ctx asks mem for a `build` (issue 18): one request with mem's opt-in
 * `get_context` when mem knows it, and the contract's `search_hard` + `get_history`
 * when it does not (asked once, remembered until a reload). Real `zino serve ctx` and
 * `zino serve mem` processes; between them a small proxy that counts connections and
 * records each request's type (ctx keeps its connection to mem open between requests); and a mem written from the contract alone, as a raw
 * socket server that knows only the contract's messages.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FrameDecoder, encodeFrame, request, type Frame } from '../../src/runtime/index.js';
import { requestOrError } from '../helpers/frames.js';
import { startService, writeTestConfig, type StartedService } from '../../src/testing/suite.js';
import { tempDir, waitFor } from '../helpers/util.js';

let dir: string;
let cleanup: () => void;
const procs: StartedService[] = [];
const servers: net.Server[] = [];

const user = (content: string) => ({ role: 'user', content });
const assistant = (content: string) => ({ role: 'assistant', content });
const EXAMPLES = [user('example question'), assistant('example answer')];

beforeEach(() => {
  ({ dir, cleanup } = tempDir('zctxmem'));
  mkdirSync(path.join(dir, 'skills'), { recursive: true });
  writeFileSync(
    path.join(dir, 'skills', 'demo.json'),
    JSON.stringify({ name: 'demo', description: 'demo skill', meta: { executor: 'bash' }, interpreter: [], fabricator: EXAMPLES }),
  );
});
afterEach(async () => {
  await Promise.all(procs.splice(0).map((p) => p.stop('SIGKILL')));
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
  cleanup();
});

/** What a socket server in this test saw: one entry per request, its type and its frame (without a kept connection's `keep_alive`). */
interface Seen {
  types: string[];
  frames: Frame[];
  /** Connections opened (counted by the proxy only). */
  connections?: number;
}

/** Calls `onFrame` with the first frame a connection sends (the one request of a connection). */
function firstFrame(socket: net.Socket, onFrame: (frame: Frame) => void): void {
  const decoder = new FrameDecoder();
  let done = false;
  socket.on('data', (chunk: Buffer) => {
    if (done) return;
    const [frame] = decoder.pushAndReadAll(chunk);
    if (frame) {
      done = true;
      onFrame(frame);
    }
  });
}

async function listen(server: net.Server, socketPath: string): Promise<void> {
  mkdirSync(path.dirname(socketPath), { recursive: true });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  servers.push(server);
}

/** A proxy on `socketPath` to `target` that records every request and counts connections. */
async function countingProxy(socketPath: string, target: string): Promise<Seen> {
  const seen: Seen = { types: [], frames: [], connections: 0 };
  const server = net.createServer((client) => {
    seen.connections = (seen.connections ?? 0) + 1;
    const decoder = new FrameDecoder();
    client.on('data', (chunk: Buffer) => {
      for (const frame of decoder.pushAndReadAll(chunk)) {
        expect(frame.keep_alive).toBe(true);
        delete frame.keep_alive;
        seen.types.push(String(frame.type));
        seen.frames.push(frame);
      }
    });
    const upstream = net.createConnection({ path: target });
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await listen(server, socketPath);
  return seen;
}

/**
 * A mem written from the contract alone, over raw frames: it knows `search_hard` and
 * `get_history` and answers anything else with the contract's error frame, which
 * carries no ZINO `code` (or, with `code`, the UNKNOWN_TYPE ZINO's runtime sends).
 */
async function contractMem(socketPath: string, options: { code?: string; close?: boolean } = {}): Promise<Seen> {
  const seen: Seen = { types: [], frames: [] };
  const server = net.createServer((socket) => {
    socket.on('error', () => undefined);
    firstFrame(socket, (frame) => {
      seen.types.push(String(frame.type));
      seen.frames.push(frame);
      if (options.close && frame.type !== 'search_hard' && frame.type !== 'get_history') {
        socket.destroy();
        return;
      }
      const reply =
        frame.type === 'search_hard'
          ? { type: 'hard_memories', results: [{ messages: [user(`memory for ${String(frame.query)}`)], score: 0.5 }] }
          : frame.type === 'get_history'
            ? { type: 'history', messages: [user(`history of ${String(frame.channel_id)}`)] }
            : { type: 'error', message: `unknown message type: ${String(frame.type)}`, ...(options.code ? { code: options.code } : {}) };
      socket.end(encodeFrame(reply));
    });
  });
  await listen(server, socketPath);
  return seen;
}

const build = (ctx: StartedService, frame: Frame): Promise<Frame> => requestOrError(ctx.socket, { type: 'build', ...frame });

/** A ctx whose `[mem] socket` is `memSocket`; returns it and the config of a mem on its own socket. */
async function startCtx(memSocket: string, daemon: Record<string, unknown> = {}): Promise<StartedService> {
  const { file } = writeTestConfig(path.join(dir, 'ctx'), {
    skills: { dir: path.join(dir, 'skills') },
    mem: { socket: memSocket },
    ctx: { history_limit: 10, hard_memory_top_k: 3 },
    daemon,
  });
  const ctx = await startService('ctx', file);
  procs.push(ctx);
  return ctx;
}

describe('ctx: asking mem', () => {
  it('sends one request to a ZINO mem per build (get_context), two for a part each only when one part is asked for, on one kept connection', async () => {
    const { file, config } = writeTestConfig(path.join(dir, 'mem'));
    const mem = await startService('mem', file);
    procs.push(mem);
    await request(mem.socket, { type: 'store_hard', messages: [user('restart nginx now'), assistant('systemctl restart nginx')] });
    await request(mem.socket, { type: 'append_history', channel_id: 'c', messages: [user('h1'), assistant('h2')] });
    const proxy = path.join(dir, 'proxy', 'mem.sock');
    const seen = await countingProxy(proxy, config.mem.socket);
    const ctx = await startCtx(proxy);

    for (let i = 0; i < 3; i++) {
      expect(await build(ctx, { channel_id: 'c', user_message: 'restart nginx', request_id: `req-${i}` })).toEqual({
        type: 'context',
        messages: [...EXAMPLES, user('restart nginx now'), assistant('systemctl restart nginx'), user('h1'), assistant('h2')],
      });
    }
    expect(seen.types).toEqual(['get_context', 'get_context', 'get_context']);
    expect(seen.frames[2]).toEqual({ type: 'get_context', query: 'restart nginx', top_k: 3, channel_id: 'c', limit: 10, request_id: 'req-2' });
    // Builds one after another: each request took the connection the one before left open.
    expect(seen.connections).toBe(1);
    // One part only: its contract message, still one request.
    seen.types.length = 0;
    expect((await build(ctx, { user_message: 'restart nginx' })).messages).toHaveLength(EXAMPLES.length + 2);
    expect((await build(ctx, { user_message: '  ', channel_id: 'c' })).messages).toHaveLength(EXAMPLES.length + 2);
    expect(seen.types).toEqual(['search_hard', 'get_history']);
  });

  it.each([
    ['an error frame without a code', undefined],
    ['UNKNOWN_TYPE', 'UNKNOWN_TYPE'],
    ['a closed connection', 'close'],
  ])('falls back to search_hard and get_history on a mem that answers get_context with %s, asks it only once, and again after a reload', async (_how, code) => {
    const memSocket = path.join(dir, 'fake', 'mem.sock');
    const seen = await contractMem(memSocket, code === undefined ? {} : code === 'close' ? { close: true } : { code });
    const ctx = await startCtx(memSocket);
    const expected = (n: number) => ({ type: 'context', messages: [...EXAMPLES, user(`memory for q${n}`), user('history of c')] });
    for (let i = 0; i < 3; i++) expect(await build(ctx, { channel_id: 'c', user_message: `q${i}` })).toEqual(expected(i));
    // get_context once; then the two contract calls of each build (in either order: they go at once).
    expect(seen.types[0]).toBe('get_context');
    expect(seen.types.filter((t) => t === 'get_context')).toHaveLength(1);
    expect(seen.types.slice(1).sort()).toEqual(['get_history', 'get_history', 'get_history', 'search_hard', 'search_hard', 'search_hard']);
    expect(ctx.logs.find((l) => l.msg === 'mem does not know get_context: asking search_hard and get_history')).toMatchObject({ level: 'info' });
    expect(ctx.logs.some((l) => l.msg === 'context part left out: mem failed')).toBe(false);

    // A reload forgets it: the next build asks get_context again (once).
    ctx.child.kill('SIGHUP');
    await waitFor(() => ctx.logs.some((l) => l.msg === 'reloaded on SIGHUP'), 'the reload');
    seen.types.length = 0;
    for (let i = 0; i < 2; i++) expect(await build(ctx, { channel_id: 'c', user_message: `q${i}` })).toEqual(expected(i));
    expect(seen.types.filter((t) => t === 'get_context')).toHaveLength(1);
    expect(seen.types).toHaveLength(5);
  });

  it('while mem is still building its index: answers get_context with the history at once, then asks search_hard for that build alone', async () => {
    const { file, config } = writeTestConfig(path.join(dir, 'mem'));
    const dataDir = config.mem.data_dir;
    mkdirSync(path.join(dataDir, 'history'), { recursive: true });
    const lines: string[] = [];
    for (let id = 0; id < 100_000; id++) {
      const content = id === 777 ? 'zanzibar ferry times' : `w${id % 997} v${id % 631} u${id % 401} t${id % 211} s${id}`;
      lines.push(`${JSON.stringify({ id, messages: [user(content)], tag: null })}\n`);
    }
    writeFileSync(path.join(dataDir, 'hard_memories.jsonl'), lines.join(''));
    writeFileSync(path.join(dataDir, 'history', 'c.jsonl'), `${JSON.stringify({ m: [user('h1'), assistant('h2')] })}\n`);
    const proxy = path.join(dir, 'proxy', 'mem.sock');
    // A bound long enough for the index to be built: this build waits for the search, as with two calls.
    const ctx = await startCtx(proxy, { dependency_timeout_ms: 120_000 });
    const seen = await countingProxy(proxy, config.mem.socket);
    const mem = await startService('mem', file);
    procs.push(mem);
    expect((await request(mem.socket, { type: 'status' })).hard_index).toMatchObject({ state: 'building' });

    expect(await build(ctx, { channel_id: 'c', user_message: 'zanzibar' })).toEqual({
      type: 'context',
      messages: [...EXAMPLES, user('zanzibar ferry times'), user('h1'), assistant('h2')],
    });
    expect(seen.types).toEqual(['get_context', 'search_hard']);
    // Once the index is ready, one call again.
    expect(await build(ctx, { channel_id: 'c', user_message: 'zanzibar' })).toMatchObject({ type: 'context' });
    expect(seen.types).toEqual(['get_context', 'search_hard', 'get_context']);
    expect(ctx.logs.some((l) => l.msg === 'context part left out: mem failed')).toBe(false);
  });

  it('leaves out the part mem could not supply when the search is pending and the bound passes, keeping the history', async () => {
    // A fake ZINO mem whose index never gets ready: it answers pending, and search_hard never.
    const memSocket = path.join(dir, 'fake', 'mem.sock');
    const seen: Seen = { types: [], frames: [] };
    const server = net.createServer((socket) => {
      socket.on('error', () => undefined);
      firstFrame(socket, (frame) => {
        seen.types.push(String(frame.type));
        if (frame.type === 'get_context') socket.end(encodeFrame({ type: 'context_parts', hard: { pending: true }, history: { messages: [user('h1')] } }));
        // search_hard: no answer; ctx's bound ends it.
      });
    });
    await listen(server, memSocket);
    const ctx = await startCtx(memSocket, { dependency_timeout_ms: 300 });
    expect(await build(ctx, { channel_id: 'c', user_message: 'q' })).toEqual({
      type: 'context',
      messages: [...EXAMPLES, user('h1')],
      missing: ['hard_memories'],
    });
    expect(seen.types).toEqual(['get_context', 'search_hard']);
    expect(await waitFor(() => ctx.logs.find((l) => l.msg === 'context part left out: mem failed'), 'the warning')).toMatchObject({
      part: 'hard_memories',
      code: 'TIMEOUT',
    });
  });

  it('leaves out a part mem answered with an error or malformed, and both when the exchange fails', async () => {
    const memSocket = path.join(dir, 'fake', 'mem.sock');
    let answer: (frame: Frame, socket: net.Socket) => void = () => undefined;
    const server = net.createServer((socket) => {
      socket.on('error', () => undefined);
      firstFrame(socket, (frame) => answer(frame, socket));
    });
    await listen(server, memSocket);
    const ctx = await startCtx(memSocket);
    const warnings = () => ctx.logs.filter((l) => l.msg === 'context part left out: mem failed');
    const cases: [Frame, Frame, { part: string; code: string }[]][] = [
      [
        { type: 'context_parts', hard: { error: { type: 'error', message: 'index failed', code: 'INTERNAL' } }, history: { messages: [user('h1')] } },
        { type: 'context', messages: [...EXAMPLES, user('h1')], missing: ['hard_memories'] },
        [{ part: 'hard_memories', code: 'INTERNAL' }],
      ],
      [
        {
          type: 'context_parts',
          hard: { results: [{ messages: [user('m')], score: 1 }] },
          history: { error: { type: 'error', message: 'bad id', code: 'INVALID_REQUEST' } },
        },
        { type: 'context', messages: [...EXAMPLES, user('m')], missing: ['history'] },
        [{ part: 'history', code: 'INVALID_REQUEST' }],
      ],
      [
        { type: 'context_parts', hard: { results: 'nope' } },
        { type: 'context', messages: EXAMPLES, missing: ['hard_memories', 'history'] },
        [
          { part: 'history', code: 'UPSTREAM_ERROR' },
          { part: 'hard_memories', code: 'UPSTREAM_ERROR' },
        ],
      ],
      [
        { type: 'surprise' },
        { type: 'context', messages: EXAMPLES, missing: ['hard_memories', 'history'] },
        [
          { part: 'hard_memories', code: 'UPSTREAM_ERROR' },
          { part: 'history', code: 'UPSTREAM_ERROR' },
        ],
      ],
    ];
    for (const [reply, context, expectedWarnings] of cases) {
      const before = warnings().length;
      answer = (_frame, socket) => socket.end(encodeFrame(reply));
      expect(await build(ctx, { channel_id: 'c', user_message: 'q' })).toEqual(context);
      const got = await waitFor(() => warnings().length >= before + expectedWarnings.length && warnings().slice(before), 'the warnings');
      expect(got.map((w) => ({ part: w.part, code: w.code }))).toEqual(expectedWarnings);
    }
    // Another error frame (here: shutting down): this build asks each part alone, and the next asks get_context again.
    const types: string[] = [];
    answer = (frame, socket) => {
      types.push(String(frame.type));
      socket.end(
        encodeFrame(
          frame.type === 'get_context'
            ? { type: 'error', message: 'mem is shutting down', code: 'SHUTTING_DOWN' }
            : frame.type === 'search_hard'
              ? { type: 'hard_memories', results: [] }
              : { type: 'history', messages: [user('h9')] },
        ),
      );
    };
    expect(await build(ctx, { channel_id: 'c', user_message: 'q' })).toEqual({ type: 'context', messages: [...EXAMPLES, user('h9')] });
    expect(await build(ctx, { channel_id: 'c', user_message: 'q' })).toEqual({ type: 'context', messages: [...EXAMPLES, user('h9')] });
    expect(types.filter((t) => t === 'get_context')).toHaveLength(2);
    expect(types).toHaveLength(6);
  });
});
