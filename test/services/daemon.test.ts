import net from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { request, type Frame, type ServiceName } from '../../src/runtime/index.js';
import { startServices, type ConfigOverrides, type ServiceGroup } from '../../src/testing/suite.js';
import { collectFrames } from '../helpers/frames.js';
import { mockOverrides, startWithMock, useMockLlm } from '../helpers/mock.js';
import { tempDir, waitFor } from '../helpers/util.js';

const llm = useMockLlm();
const script = llm.script;
const groups: { group: ServiceGroup; cleanup: () => void }[] = [];

afterEach(async () => {
  for (const { group, cleanup } of groups.splice(0)) {
    const exits = await group.stop();
    for (const exit of Object.values(exits)) expect(exit).toEqual({ code: 0, signal: null });
    cleanup();
  }
});

async function suite(names: ServiceName[], overrides: ConfigOverrides = {}): Promise<ServiceGroup> {
  const started = await startWithMock(llm.mock, names, 'zdmn', overrides);
  groups.push(started);
  return started.group;
}

const ALL: ServiceName[] = ['mem', 'sys', 'ctx', 'rtr', 'exc', 'agr', 'daemon'];

const frames = (group: ServiceGroup, req: Frame): Promise<Frame[]> => collectFrames(group.get('daemon').socket, req);

describe('daemon', () => {
  it('assembles [system, ...context, user], answers collected, and stores the exchange', async () => {
    script({ rules: [{ reply: 'Hi there.' }] });
    const group = await suite(ALL);
    const reply = await request(group.get('daemon').socket, { message: 'hello', channel_id: 'c1' });
    expect(reply).toMatchObject({ type: 'response', content: 'Hi there.', via: 'agr', iterations: 1 });
    const sent = llm.mock.stats.bodies[0]?.messages as Frame[];
    expect(sent[0]?.role).toBe('system');
    expect(String(sent[0]?.content)).toContain('execute_bash');
    expect(sent.at(-1)).toEqual({ role: 'user', content: 'hello' });
    // The skill examples from ctx sit between the system prompt and the user message.
    expect(sent.slice(1, -1).some((m) => String(m.content).includes('[KCR]'))).toBe(true);
    const history = await request(group.get('mem').socket, { type: 'get_history', channel_id: 'c1' });
    expect(history.messages).toEqual([
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: 'Hi there.' },
    ]);
  });

  it('streams chunk frames then done, only the contract frames without events', async () => {
    script({ rules: [{ reply: 'one two three', chunkSize: 4 }] });
    const group = await suite(ALL);
    const out = await frames(group, { message: 'hi', stream: true });
    // Chunks that queue up along the way may be joined; their text and order never change.
    expect(new Set(out.slice(0, -1).map((f) => f.type))).toEqual(new Set(['chunk']));
    expect(
      out
        .slice(0, -1)
        .map((f) => f.delta)
        .join(''),
    ).toBe('one two three');
    expect(out.at(-1)).toMatchObject({ type: 'done', full_text: 'one two three' });
  });

  it('passes agr event frames through only when asked', async () => {
    script({
      rules: [
        { role: 'user', reply: '<tool_call>{"name":"execute_bash","arguments":{"code":"echo x"}}</tool_call>' },
        { role: 'assistant', reply: 'ok' },
      ],
    });
    const group = await suite(ALL);
    const types = (await frames(group, { message: 'hi', stream: true, events: true })).map((f) => f.type);
    expect(types).toEqual(expect.arrayContaining(['iteration', 'tool_call', 'tool_result', 'done']));
    const plain = (await frames(group, { message: 'hi', stream: true })).map((f) => f.type);
    expect(new Set(plain)).toEqual(new Set(['chunk', 'done']));
  });

  it('answers through rtr directly when agr is unreachable, streaming or not', async () => {
    script({ rules: [{ reply: 'straight from rtr', chunkSize: 6 }] });
    const group = await suite(['mem', 'sys', 'ctx', 'rtr', 'daemon']);
    expect(await request(group.get('daemon').socket, { message: 'hi' })).toMatchObject({ type: 'response', content: 'straight from rtr', via: 'rtr' });
    const out = await frames(group, { message: 'hi', stream: true, channel_id: 'f' });
    expect(out.at(-1)).toMatchObject({ type: 'done', full_text: 'straight from rtr', via: 'rtr' });
    expect(
      out
        .filter((f) => f.type === 'chunk')
        .map((f) => f.delta)
        .join(''),
    ).toBe('straight from rtr');
    await waitFor(() => group.get('daemon').logs.some((l) => l.msg === 'agr unreachable; answering through rtr directly'), 'the daemon to log the fallback');
    const history = await request(group.get('mem').socket, { type: 'get_history', channel_id: 'f' });
    expect(history.messages).toHaveLength(2);
  });

  it("keeps the client's streaming contract when rtr cannot stream", async () => {
    script({ rules: [{ reply: 'collected only' }] });
    const group = await suite(['rtr', 'daemon'], { rtr: { streaming: false } });
    expect(await frames(group, { message: 'hi', stream: true })).toEqual([
      { type: 'chunk', delta: 'collected only' },
      { type: 'done', full_text: 'collected only', usage: expect.any(Object), via: 'rtr', degraded: ['tools', 'system_prompt', 'context'] },
    ]);
  });

  it('degrades without sys, ctx and mem: answers the bare user message and says so in the log', async () => {
    script({ rules: [{ reply: 'still here' }] });
    const group = await suite(['rtr', 'exc', 'agr', 'daemon']);
    expect(await request(group.get('daemon').socket, { message: 'hi', channel_id: 'x' })).toMatchObject({ type: 'response', content: 'still here' });
    expect(llm.mock.stats.bodies[0]?.messages).toEqual([{ role: 'user', content: 'hi' }]);
    // The caller's own conversation (`history`) still reaches the model without ctx.
    const history = [
      { role: 'user', content: 'earlier question' },
      { role: 'assistant', content: 'earlier answer' },
    ];
    expect(await request(group.get('daemon').socket, { message: 'and now?', history })).toMatchObject({ content: 'still here' });
    expect(llm.mock.stats.bodies[1]?.messages).toEqual([...history, { role: 'user', content: 'and now?' }]);
    // The store gave up just before the reply; its log line comes on another pipe: wait for it.
    await waitFor(() => group.get('daemon').logs.some((l) => l.msg === 'exchange not stored: mem failed'), 'the store miss to be logged');
    const msgs = group.get('daemon').logs.map((l) => l.msg);
    expect(msgs).toEqual(
      expect.arrayContaining([
        'no system prompt: sys failed; answering without it',
        'no context: ctx failed; answering without it',
        'exchange not stored: mem failed',
      ]),
    );
  });

  it("bounds the request's history as ctx would when it adds it itself (ctx down): the last [ctx] history_limit messages", async () => {
    script({ rules: [{ reply: 'bounded' }] });
    const group = await suite(['rtr', 'exc', 'agr', 'daemon'], { ctx: { history_limit: 2 } });
    const history = [
      { role: 'user', content: 'oldest question' },
      { role: 'assistant', content: 'oldest answer' },
      { role: 'user', content: 'newer question' },
    ];
    expect(await request(group.get('daemon').socket, { message: 'now?', history })).toMatchObject({ content: 'bounded' });
    expect(llm.mock.stats.bodies[0]?.messages).toEqual([...history.slice(1), { role: 'user', content: 'now?' }]);
    const added = await waitFor(
      () => group.get('daemon').logs.find((l) => l.msg === "ctx failed: the request's history added here"),
      'the added history logged',
    );
    expect(added).toMatchObject({ messages: 2, dropped: 1 });
  });

  it('keeps the skill examples when mem is slow rather than down (regression: ctx waited as long as the daemon)', async () => {
    script({ rules: [{ reply: 'answered' }] });
    const { dir, cleanup } = tempDir('zslowmem');
    // A mem that accepts connections and never answers.
    const { mkdirSync } = await import('node:fs');
    mkdirSync(path.join(dir, 'run'), { recursive: true });
    const silent = net.createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(path.join(dir, 'run', 'mem.sock'), r));
    // ctx bounds its mem calls at 60% of the daemon's bound; the other 40% (2 s here) is
    // ctx's own margin to answer, wide enough for a loaded machine.
    const group = await startServices(['sys', 'ctx', 'rtr', 'exc', 'agr', 'daemon'], dir, mockOverrides(llm.mock, { daemon: { dependency_timeout_ms: 5000 } }));
    try {
      expect(await request(group.get('daemon').socket, { message: 'hi' })).toMatchObject({ content: 'answered' });
      const sent = llm.mock.stats.bodies[0]?.messages as Frame[];
      expect(sent.some((m) => String(m.content).includes('[KCR]'))).toBe(true);
      await waitFor(
        () => group.get('ctx').logs.some((l) => l.msg === 'context part left out: mem failed' && l.code === 'TIMEOUT'),
        'ctx to log the mem timeout',
      );
      expect(group.get('daemon').logs.some((l) => l.msg === 'no context: ctx failed; answering without it')).toBe(false);
    } finally {
      for (const exit of Object.values(await group.stop())) expect(exit).toEqual({ code: 0, signal: null });
      silent.close();
      cleanup();
    }
  });

  it('turns stored turns with roles a chat API refuses into user text', async () => {
    script({ rules: [{ reply: 'fine' }] });
    const group = await suite(ALL);
    await request(group.get('mem').socket, { type: 'append_history', channel_id: 'legacy', messages: [{ role: 'function', content: '{"temp": 21}' }] });
    expect(await request(group.get('daemon').socket, { message: 'and now?', channel_id: 'legacy' })).toMatchObject({ content: 'fine' });
    const sent = llm.mock.stats.bodies[0]?.messages as Frame[];
    expect(sent.slice(-2)).toEqual([
      { role: 'user', content: '[function] {"temp": 21}' },
      { role: 'user', content: 'and now?' },
    ]);
  });

  it('runs requests on different channels at the same time', async () => {
    // Both replies are held at the mock's gate: they are open at the same time exactly when the
    // second reaches the LLM before the first has an answer (a timed overlap raced on a loaded machine).
    script({ rules: [{ gate: 'both', reply: 'answer' }] });
    const group = await suite(ALL);
    const socket = group.get('daemon').socket;
    const both = Promise.all([request(socket, { message: 'a', channel_id: 'left' }), request(socket, { message: 'b', channel_id: 'right' })]);
    await waitFor(() => llm.mock.stats.waiting.both === 2, 'both requests at the LLM at once');
    llm.mock.release('both');
    expect((await both).map((r) => r.content)).toEqual(['answer', 'answer']);
  });

  it('asks sys and ctx at the same time', async () => {
    script({ rules: [{ reply: 'ok' }] });
    const { dir, cleanup } = tempDir('zconc');
    const { serve } = await import('../../src/runtime/index.js');
    const { captureLogger } = await import('../helpers/util.js');
    // Fake sys and ctx that answer only once both have been asked: fetching them one
    // after the other would leave each waiting for the other until the daemon gives up.
    let arrived = 0;
    let bothAsked!: () => void;
    const barrier = new Promise<void>((r) => (bothAsked = r));
    const arrive = async (): Promise<void> => {
      if (++arrived === 2) bothAsked();
      await barrier;
    };
    const { log } = captureLogger();
    const fakeSys = await serve(path.join(dir, 'run', 'sys.sock'), {
      log,
      handlers: { get: async () => (await arrive(), { type: 'system_prompt', content: 'SYS' }) },
    });
    const fakeCtx = await serve(path.join(dir, 'run', 'ctx.sock'), {
      log,
      handlers: { build: async () => (await arrive(), { type: 'context', messages: [{ role: 'user', content: 'CTX' }] }) },
    });
    // Asked one after the other, each would wait out the whole bound: generous, so only that fails.
    const group = await startServices(['rtr', 'agr', 'exc', 'daemon'], dir, mockOverrides(llm.mock, { daemon: { dependency_timeout_ms: 10_000 } }));
    try {
      expect(await request(group.get('daemon').socket, { message: 'hi' })).toMatchObject({ content: 'ok' });
      expect(llm.mock.stats.bodies[0]?.messages).toEqual([
        { role: 'system', content: 'SYS' },
        { role: 'user', content: 'CTX' },
        { role: 'user', content: 'hi' },
      ]);
    } finally {
      for (const exit of Object.values(await group.stop())) expect(exit).toEqual({ code: 0, signal: null });
      await fakeSys.close();
      await fakeCtx.close();
      cleanup();
    }
  });

  it('reports an rtr failure as one error frame after nothing else', async () => {
    script({ rules: [{ status: 401, errorMessage: 'bad key' }] });
    const group = await suite(ALL);
    expect(await frames(group, { message: 'hi', stream: true, channel_id: 'e' })).toEqual([
      { type: 'error', code: 'UPSTREAM_ERROR', message: expect.stringMatching(/^the LLM API answered 401: bad key \(rtr sent the key from \[api\] key\. /) },
    ]);
    const history = await request(group.get('mem').socket, { type: 'get_history', channel_id: 'e' });
    expect(history.messages).toEqual([]);
  });

  it('refuses a missing or empty message and a bad channel id', async () => {
    const group = await suite(['daemon']);
    const socket = group.get('daemon').socket;
    await expect(request(socket, {})).rejects.toMatchObject({ code: 'INVALID_REQUEST', message: 'missing required field "message"' });
    await expect(request(socket, { message: '   ' })).rejects.toMatchObject({ code: 'INVALID_REQUEST', message: 'field "message" must not be empty' });
    await expect(request(socket, { message: 'hi', channel_id: 5 })).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    await expect(request(socket, { message: 'hi', channel_id: 'x'.repeat(300) })).rejects.toMatchObject({
      message: 'field "channel_id" must be at most 256 UTF-8 bytes, got 300',
    });
    await expect(request(socket, { message: 'hi', stream: 'yes' })).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
  });

  it("uses a request's history instead of the channel's, stores the exchange on the channel, and takes its sampling", async () => {
    script({ rules: [{ reply: 'third answer' }] });
    const group = await suite(ALL);
    const socket = group.get('daemon').socket;
    await request(group.get('mem').socket, { type: 'append_history', channel_id: 'h', messages: [{ role: 'user', content: 'stored turn' }] });
    const history = [
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'first answer' },
    ];
    const reply = await request(socket, { message: 'third', history, channel_id: 'h', temperature: 0.25, top_p: 0.5 });
    expect(reply).toMatchObject({ type: 'response', content: 'third answer' });
    const body = llm.mock.stats.bodies[0] as { messages: Frame[]; temperature: number; top_p: number };
    expect(body.messages.slice(-3)).toEqual([...history, { role: 'user', content: 'third' }]);
    // Once: ctx took the history (and said so), so the daemon did not add it again.
    expect(body.messages.filter((m) => m.content === 'first')).toHaveLength(1);
    expect(body.messages.some((m) => m.content === 'stored turn')).toBe(false);
    expect(body).toMatchObject({ temperature: 0.25, top_p: 0.5 });
    // Stored on the channel after what was there.
    expect((await request(group.get('mem').socket, { type: 'get_history', channel_id: 'h' })).messages).toEqual([
      { role: 'user', content: 'stored turn' },
      { role: 'user', content: 'third' },
      { role: 'assistant', content: 'third answer' },
    ]);
    // Without sampling fields: [agent]'s.
    await request(socket, { message: 'again', history: [] });
    expect(llm.mock.stats.bodies[1]).toMatchObject({ temperature: 0.7, top_p: 1 });
    for (const bad of [{ history: 'x' }, { history: [{ role: 'user', content: 3 }] }, { temperature: 3 }, { top_p: -1 }, { temperature: 'hot' }]) {
      await expect(request(socket, { message: 'hi', ...bad })).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    }
  });

  it('reports every service in status, with rtr capabilities and the version', async () => {
    const group = await suite(['mem', 'rtr', 'daemon']);
    const reply = await request(group.get('daemon').socket, { type: 'status' });
    expect(reply).toMatchObject({
      type: 'status',
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      rtr: { type: 'capabilities', model: 'm', streaming: true },
      services: {
        daemon: { reachable: true },
        mem: { reachable: true, latency_ms: expect.any(Number) },
        rtr: { reachable: true },
        agr: { reachable: false, error: expect.stringContaining('ENOENT') },
      },
    });
  });

  it('carries one request_id through daemon, ctx, agr, rtr and exc logs', async () => {
    script({
      rules: [
        { role: 'user', reply: '<tool_call>{"name":"execute_bash","arguments":{"code":"true"}}</tool_call>' },
        { role: 'assistant', reply: 'ok' },
      ],
    });
    const group = await suite(ALL);
    await request(group.get('daemon').socket, { message: 'trace me', request_id: 'trace-42' });
    // Not sys: the daemon keeps sys's prompt from its watch stream instead of asking per request (prompt-watch.test.ts).
    for (const name of ['daemon', 'ctx', 'agr', 'rtr', 'exc'] as const) {
      await waitFor(() => group.get(name).logs.some((l) => l.request_id === 'trace-42'), `a ${name} log line with the request id`);
    }
  });
});
