import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { request, serve, type Frame, type Handlers, type ZinoServer } from '../../src/runtime/index.js';
import { requestOrError } from '../helpers/frames.js';
import { startService, writeTestConfig, type ConfigOverrides, type StartedService } from '../../src/testing/suite.js';
import { captureLogger, tempDir, waitFor } from '../helpers/util.js';

let dir: string;
let cleanup: () => void;
const procs: StartedService[] = [];
const fakes: ZinoServer[] = [];

const pad = (s: string): string => `${s} ${'z'.repeat(40)}`.slice(0, 40);
const user = (content: string) => ({ role: 'user', content });
const assistant = (content: string) => ({ role: 'assistant', content });
/** The skill examples of the test skill: two user/assistant pairs, 40 characters each. */
const EXAMPLES = [user(pad('example question one')), assistant(pad('echo one')), user(pad('example question two')), assistant(pad('echo two'))];

beforeEach(() => {
  ({ dir, cleanup } = tempDir('zctx'));
  mkdirSync(path.join(dir, 'skills'), { recursive: true });
  writeFileSync(
    path.join(dir, 'skills', 'demo.json'),
    JSON.stringify({
      name: 'demo',
      description: 'demo skill',
      meta: { executor: 'bash' },
      interpreter: [],
      fabricator: [{ role: 'system', content: 'write bash' }, ...EXAMPLES],
    }),
  );
});
afterEach(async () => {
  await Promise.all(procs.splice(0).map((p) => p.stop('SIGKILL')));
  await Promise.all(fakes.splice(0).map((f) => f.close()));
  cleanup();
});

function config(overrides: ConfigOverrides = {}) {
  return writeTestConfig(dir, { skills: { dir: path.join(dir, 'skills') }, ...overrides, ctx: { history_limit: 50, hard_memory_top_k: 3, ...overrides.ctx } });
}

async function start(name: 'mem' | 'ctx', file: string): Promise<StartedService> {
  const proc = await startService(name, file);
  procs.push(proc);
  return proc;
}

const build = (ctx: StartedService, frame: Frame): Promise<Frame> => requestOrError(ctx.socket, { type: 'build', ...frame });

/** An in-process stand-in for mem on the configured mem socket. */
async function fakeMem(socketPath: string, handlers: Handlers): Promise<void> {
  const { log } = captureLogger('fake-mem');
  fakes.push(await serve(socketPath, { handlers, log }));
}

describe('ctx: build', () => {
  it('returns skill examples, then hard memories for the user message, then the channel history', async () => {
    const { file, config: cfg } = config({ ctx: { history_limit: 3, hard_memory_top_k: 2 } });
    await start('mem', file);
    const ctx = await start('ctx', file);
    const mem = (frame: Frame) => request(cfg.mem.socket, frame);
    await mem({ type: 'store_hard', messages: [user('how to restart nginx'), assistant('systemctl restart nginx')], tag: 'nginx' });
    await mem({ type: 'store_hard', messages: [user('restart postgres')] });
    await mem({ type: 'store_hard', messages: [user('unrelated cooking recipe')] });
    await mem({ type: 'append_history', channel_id: 'c', messages: [user('h1'), assistant('h2'), user('h3'), assistant('h4')] });

    const reply = await build(ctx, { channel_id: 'c', user_message: 'please restart nginx' });
    expect(reply).toEqual({
      type: 'context',
      messages: [
        ...EXAMPLES,
        user('how to restart nginx'),
        assistant('systemctl restart nginx'),
        user('restart postgres'),
        assistant('h2'),
        user('h3'),
        assistant('h4'),
      ],
    });
    // Without channel_id (absent or null): no history.
    const noChannel = await build(ctx, { user_message: 'please restart nginx', channel_id: null });
    expect(noChannel.messages).toHaveLength(EXAMPLES.length + 3);
    // A message matching no memory: examples only (plus history when asked).
    expect(await build(ctx, { user_message: 'zebra' })).toEqual({ type: 'context', messages: EXAMPLES });
    expect(ctx.logs.find((l) => l.msg === 'context built')).toMatchObject({ examples: 4, hardMemories: 2, history: 3, missing: [] });
  });

  it("uses a request's history instead of the channel's, trimmed to history_limit, and never reads the stored one", async () => {
    const { file, config: cfg } = config({ ctx: { history_limit: 3, hard_memory_top_k: 0 } });
    await start('mem', file);
    const ctx = await start('ctx', file);
    await request(cfg.mem.socket, { type: 'append_history', channel_id: 'c', messages: [user('stored question'), assistant('stored answer')] });
    const given = [user('t1'), assistant('a1'), user('t2'), assistant('a2')];
    // With the channel too: the request's history wins; without it, the same.
    for (const channel of [{ channel_id: 'c' }, {}]) {
      const reply = await build(ctx, { user_message: 'next', history: given, ...channel });
      // It says it took the request's history (the daemon adds it itself when a ctx does not).
      expect(reply).toEqual({ type: 'context', messages: [...EXAMPLES, assistant('a1'), user('t2'), assistant('a2')], history_taken: true });
    }
    // An empty history is a history: nothing from the channel.
    expect(await build(ctx, { user_message: 'next', history: [], channel_id: 'c' })).toEqual({ type: 'context', messages: EXAMPLES, history_taken: true });
    // null counts as absent: the channel's history again, and nothing said about a history taken.
    const fromChannel = await build(ctx, { user_message: 'next', history: null, channel_id: 'c' });
    expect(fromChannel.history_taken).toBeUndefined();
    expect(fromChannel.messages).toEqual([...EXAMPLES, user('stored question'), assistant('stored answer')]);
    expect(ctx.logs.filter((l) => l.msg === 'context built').map((l) => l.historyFrom)).toEqual(['request', 'request', 'request', 'channel']);
    for (const bad of [{ history: 'x' }, { history: [{ role: 'user' }] }, { history: [5] }]) {
      expect(await build(ctx, { user_message: 'q', ...bad })).toMatchObject({ type: 'error', code: 'INVALID_REQUEST' });
    }
  });

  it('loads the examples from the package skills (user/assistant pairs of each fabricator list)', async () => {
    const { file } = writeTestConfig(dir, { ctx: { hard_memory_top_k: 0 } });
    const ctx = await start('ctx', file);
    const reply = await build(ctx, { user_message: 'hi' });
    const messages = reply.messages as { role: string }[];
    expect(messages.length).toBeGreaterThan(0);
    expect(messages.length % 2).toBe(0);
    messages.forEach((m, i) => expect(m.role).toBe(i % 2 === 0 ? 'user' : 'assistant'));
  });

  it('answers bad input with INVALID_REQUEST', async () => {
    const { file } = config();
    const ctx = await start('ctx', file);
    for (const frame of [{}, { user_message: 5 }, { user_message: null }, { user_message: 'x', channel_id: 7 }]) {
      expect(await build(ctx, frame)).toMatchObject({ type: 'error', code: 'INVALID_REQUEST' });
    }
  });

  it('answers with the examples alone when mem is not running, and logs why at warn', async () => {
    const { file } = config();
    const ctx = await start('ctx', file);
    expect(await build(ctx, { channel_id: 'c', user_message: 'restart nginx' })).toEqual({
      type: 'context',
      messages: EXAMPLES,
      missing: ['hard_memories', 'history'],
    });
    // Logged just before the reply, on another pipe: wait for the lines rather than race them.
    const warnings = await waitFor(() => {
      const w = ctx.logs.filter((l) => l.msg === 'context part left out: mem failed');
      return w.length >= 2 && w;
    }, 'both warnings');
    expect(warnings.map((w) => w.part).sort()).toEqual(['hard_memories', 'history']);
    for (const w of warnings) expect(w).toMatchObject({ level: 'warn', code: 'UPSTREAM_UNAVAILABLE', reason: expect.any(String) });
  });

  it('leaves out only the part mem answered with an error', async () => {
    const { file, config: cfg } = config();
    await start('mem', file);
    const ctx = await start('ctx', file);
    await request(cfg.mem.socket, { type: 'store_hard', messages: [user('restart nginx now')] });
    // A 300-byte channel id is refused by mem (INVALID_REQUEST) but not by ctx.
    const reply = await build(ctx, { channel_id: 'x'.repeat(300), user_message: 'restart nginx' });
    expect(reply).toEqual({ type: 'context', messages: [...EXAMPLES, user('restart nginx now')], missing: ['history'] });
    expect(await waitFor(() => ctx.logs.find((l) => l.msg === 'context part left out: mem failed'), 'the warning')).toMatchObject({
      part: 'history',
      code: 'INVALID_REQUEST',
    });
  });

  it('asks mem for hard memories and history at once, passes on request_id, top_k and history_limit', async () => {
    const { file, config: cfg } = config({ ctx: { history_limit: 7, hard_memory_top_k: 4 } });
    const seen: Frame[] = [];
    let release: () => void = () => undefined;
    const bothArrived = new Promise<void>((r) => (release = r));
    const arrive = async (frame: Frame): Promise<void> => {
      seen.push(frame);
      if (seen.length === 2) release();
      await bothArrived; // a sequential ctx would never send the second request: it would time out
    };
    await fakeMem(cfg.mem.socket, {
      async search_hard(frame) {
        await arrive(frame);
        return { type: 'hard_memories', results: [{ messages: [user('memory')], score: 0.5 }] };
      },
      async get_history(frame) {
        await arrive(frame);
        return { type: 'history', messages: [user('old')] };
      },
    });
    const ctx = await start('ctx', file);
    const reply = await request(ctx.socket, { type: 'build', channel_id: 'c9', user_message: 'q', request_id: 'req-42' });
    expect(reply).toEqual({ type: 'context', messages: [...EXAMPLES, user('memory'), user('old')] });
    expect(seen.find((f) => f.type === 'search_hard')).toMatchObject({ query: 'q', top_k: 4, request_id: 'req-42' });
    expect(seen.find((f) => f.type === 'get_history')).toMatchObject({ channel_id: 'c9', limit: 7, request_id: 'req-42' });
  });

  it('leaves out a part whose reply is malformed or late (bounded by [daemon] dependency_timeout_ms)', async () => {
    const { file, config: cfg } = config({ daemon: { dependency_timeout_ms: 300 } });
    let cancelled = false;
    await fakeMem(cfg.mem.socket, {
      search_hard: () => ({ type: 'surprise' }),
      async get_history(_frame, hctx) {
        // Far past the 300 ms bound; ends early when ctx gives up and closes the connection.
        await sleep(60_000, undefined, { signal: hctx.signal }).catch(() => undefined);
        cancelled = hctx.signal.aborted;
        return { type: 'history', messages: [] };
      },
    });
    const ctx = await start('ctx', file);
    // That the bound applied is shown by the TIMEOUT below and by mem seeing the cancel,
    // not by a wall-clock figure (the fake mem would otherwise hold the reply for 60 s).
    expect(await build(ctx, { channel_id: 'c', user_message: 'q' })).toEqual({ type: 'context', messages: EXAMPLES, missing: ['hard_memories', 'history'] });
    const warnings = await waitFor(() => {
      const w = ctx.logs.filter((l) => l.msg === 'context part left out: mem failed');
      return w.length >= 2 && w;
    }, 'both warnings');
    expect(warnings).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ part: 'hard_memories', code: 'UPSTREAM_ERROR' }),
        expect.objectContaining({ part: 'history', code: 'TIMEOUT' }),
      ]),
    );
    // ctx closed its connection: the slow request was cancelled on mem's side.
    await waitFor(() => cancelled, 'the slow request to be cancelled');
  });

  it('reloads the skill examples on SIGHUP', async () => {
    const { file } = config({ ctx: { hard_memory_top_k: 0 } });
    const ctx = await start('ctx', file);
    writeFileSync(
      path.join(dir, 'skills', 'demo.json'),
      JSON.stringify({ name: 'demo', meta: { executor: 'bash' }, fabricator: [user('new q'), assistant('new a')] }),
    );
    ctx.child.kill('SIGHUP');
    await waitFor(() => ctx.logs.some((l) => l.msg === 'reloaded on SIGHUP'), 'the reload');
    expect(await build(ctx, { user_message: 'x' })).toEqual({ type: 'context', messages: [user('new q'), assistant('new a')] });
  });
});

describe('ctx: token budget ([ctx] max_context_tokens)', () => {
  // Every message is 40 characters = 10 estimated tokens; the examples are 40 tokens.
  const HISTORY = Array.from({ length: 6 }, (_, i) => user(pad(`history ${i}`)));
  const MEMORIES = [pad('alpha beta gamma'), pad('alpha beta'), pad('alpha')];

  async function setUp(maxTokens: number): Promise<{ ctx: StartedService; ranked: Frame[] }> {
    const { file, config: cfg } = config({ ctx: { max_context_tokens: maxTokens } });
    await start('mem', file);
    const ctx = await start('ctx', file);
    for (const m of [...MEMORIES].reverse()) await request(cfg.mem.socket, { type: 'store_hard', messages: [user(m)] });
    await request(cfg.mem.socket, { type: 'append_history', channel_id: 'c', messages: HISTORY });
    const search = await request(cfg.mem.socket, { type: 'search_hard', query: 'alpha beta gamma' });
    const ranked = (search.results as { messages: Frame[] }[]).map((r) => r.messages[0] as Frame);
    expect(ranked.map((m) => m.content)).toEqual(MEMORIES);
    return { ctx, ranked };
  }

  it('drops the oldest history first', async () => {
    const { ctx, ranked } = await setUp(90);
    const reply = await build(ctx, { channel_id: 'c', user_message: 'alpha beta gamma' });
    expect(reply.messages).toEqual([...EXAMPLES, ...ranked, ...HISTORY.slice(4)]);
    expect(await waitFor(() => ctx.logs.find((l) => l.msg === 'context built'), 'the context built log line')).toMatchObject({
      droppedHistory: 4,
      droppedHardMemories: 0,
      tokens: 90,
    });
  });

  it('then the lowest-scored hard memories', async () => {
    const { ctx, ranked } = await setUp(60);
    const reply = await build(ctx, { channel_id: 'c', user_message: 'alpha beta gamma' });
    expect(reply.messages).toEqual([...EXAMPLES, ...ranked.slice(0, 2)]);
  });

  it('but keeps the skill examples even when they alone are over budget', async () => {
    const { ctx } = await setUp(10);
    expect(await build(ctx, { channel_id: 'c', user_message: 'alpha beta gamma' })).toEqual({ type: 'context', messages: EXAMPLES });
  });

  it('is off at 0: everything is returned', async () => {
    const { ctx, ranked } = await setUp(0);
    expect((await build(ctx, { channel_id: 'c', user_message: 'alpha beta gamma' })).messages).toEqual([...EXAMPLES, ...ranked, ...HISTORY]);
  });
});
