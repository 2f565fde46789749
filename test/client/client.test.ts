/**
 * The public client library against a real suite (`zino up` with the mock LLM):
 * every message of every service through `ZinoClient`, imported by the package
 * name as a user would; typed errors; cancellation; and the docs' examples.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ERROR_CODES, RemoteError, SERVICE_NAMES, ZinoClient, ZinoError, type DoneFrame } from 'zino';
import { startMockLlm, type MockLlm } from '../../src/testing/mock-llm/server.js';
import { PACKAGE_ROOT, writeTestConfig } from '../../src/testing/suite.js';
import { startSuite, type RunningSuite } from '../../src/testing/up.js';
import { tempDir, waitFor } from '../helpers/util.js';
import * as examples from './examples.js';

let mock: MockLlm;
let suite: RunningSuite;
let dir: string;
let cleanup: () => void;
let zino: ZinoClient;

const TOOL_REPLY = 'Looking.<tool_call>{"name":"execute_bash","arguments":{"code":"echo client-tool"}}</tool_call>';
const HOST_REPLY = 'Restarting.<tool_call>{"name":"execute_bash","arguments":{"code":"echo restarted","host":true,"reason":"restart it"}}</tool_call>';

beforeAll(async () => {
  mock = await startMockLlm();
  ({ dir, cleanup } = tempDir('zcl'));
  const { file } = writeTestConfig(dir, {
    api: { base_url: mock.baseUrl, key: 'sk-client' },
    service: { model: 'client-model' },
    exc: { sandbox: 'none' },
    // Every run is a host run here: clients that cannot be asked are allowed; the approval example is asked.
    approval: { mode: 'ask', unattended: 'allow' },
  });
  suite = await startSuite(file);
  zino = new ZinoClient({ dir });
});

afterAll(async () => {
  await suite.interrupt();
  await mock.close();
  cleanup();
});

beforeEach(() => mock.reset({}));

describe('ZinoClient: the daemon', () => {
  it('asks and gets the collected answer, stored on the channel', async () => {
    mock.reset({ rules: [{ reply: 'collected answer' }] });
    const answer = await zino.ask('hello there', { channelId: 'cl-ask' });
    expect(answer).toMatchObject({ type: 'response', content: 'collected answer', via: 'agr' });
    expect(await zino.mem.getHistory('cl-ask')).toEqual([
      { role: 'user', content: 'hello there' },
      { role: 'assistant', content: 'collected answer' },
    ]);
  });

  it("sends a conversation of the caller's own as history, and this request's sampling", async () => {
    mock.reset({ rules: [{ reply: 'with history' }] });
    const history = [
      { role: 'user', content: 'my earlier question' },
      { role: 'assistant', content: 'my earlier answer' },
    ];
    await zino.ask('and now?', { history, temperature: 0.1, topP: 0.4 });
    const body = mock.stats.bodies[0] as { messages: unknown[]; temperature: number; top_p: number };
    expect(body.messages.slice(-3)).toEqual([...history, { role: 'user', content: 'and now?' }]);
    expect(body).toMatchObject({ temperature: 0.1, top_p: 0.4 });
  });

  it('streams chunks, tool events and done, in order', async () => {
    mock.reset({
      rules: [
        { role: 'user', reply: TOOL_REPLY },
        { role: 'assistant', reply: ' All done.' },
      ],
    });
    const types: string[] = [];
    let text = '';
    let done: DoneFrame | undefined;
    for await (const frame of zino.askStream('run a tool', { events: true })) {
      types.push(frame.type);
      if (frame.type === 'chunk') text += frame.delta;
      if (frame.type === 'done') done = frame;
    }
    expect(types.at(-1)).toBe('done');
    expect(types).toContain('tool_call');
    expect(types.indexOf('tool_call')).toBeLessThan(types.indexOf('tool_result'));
    expect(text).toContain('client-tool');
    expect(done?.full_text).toBe(text);
  });

  it('passes events to onEvent when collecting', async () => {
    mock.reset({
      rules: [
        { role: 'user', reply: TOOL_REPLY },
        { role: 'assistant', reply: ' Collected.' },
      ],
    });
    const events: string[] = [];
    const answer = await zino.ask('run a tool', { onEvent: (event) => events.push(event.type) });
    expect(answer.content).toContain('Collected.');
    expect(events).toContain('tool_call');
    expect(events).toContain('tool_result');
  });

  it('reports status of all seven services and the model', async () => {
    const status = await zino.status();
    for (const name of SERVICE_NAMES) expect(status.services[name]?.reachable).toBe(true);
    expect(status.rtr?.model).toBe('client-model');
  });

  it('pings every service', async () => {
    const all = await zino.pingAll();
    for (const name of SERVICE_NAMES) expect(all[name].ok).toBe(true);
    expect(await zino.ping('mem')).toBeGreaterThan(0);
  });

  it('cancels the request all the way down when the signal aborts', async () => {
    mock.reset({ rules: [{ reply: 'never finishing', chunkSize: 1, hangAfterChunks: 3 }] });
    const controller = new AbortController();
    const seen: string[] = [];
    const run = (async () => {
      for await (const frame of zino.askStream('hang', { signal: controller.signal })) {
        seen.push(frame.type);
        if (seen.length === 1) controller.abort();
      }
    })();
    await expect(run).rejects.toMatchObject({ code: 'CANCELLED' });
    await mock.waitForAborts(1);
  });
});

describe('ZinoClient: each service', () => {
  it('mem: history, hard memories, soft memory', async () => {
    await zino.mem.appendHistory('cl-mem', [
      { role: 'user', content: 'a' },
      { role: 'assistant', content: 'b' },
    ]);
    expect(await zino.mem.getHistory('cl-mem', { limit: 1 })).toEqual([{ role: 'assistant', content: 'b' }]);
    await zino.mem.clearHistory('cl-mem');
    expect(await zino.mem.getHistory('cl-mem')).toEqual([]);
    const id = await zino.mem.storeHard([{ role: 'user', content: 'the zebra lives in the zoo' }], { tag: 'animals' });
    const hits = await zino.mem.searchHard('zebra zoo', { topK: 1 });
    expect(hits[0]).toMatchObject({ id, tag: 'animals' });
    await zino.mem.setSoft('prefers metric units');
    expect(await zino.mem.getSoft()).toBe('prefers metric units');
    await waitFor(async () => (await zino.mem.status()).state === 'ready', 'the hard memory index ready');
    expect(await zino.mem.status()).toMatchObject({ state: 'ready', entries: 1 });
    await zino.mem.appendHistory('cl-mem', [{ role: 'user', content: 'c' }]);
    expect(await zino.mem.getContext({ query: 'zebra zoo', topK: 1, channelId: 'cl-mem', limit: 5, requestId: 'cl-ctx-1' })).toEqual({
      hard: { results: hits },
      history: { messages: [{ role: 'user', content: 'c' }] },
    });
    expect(await zino.mem.getContext({ channelId: '' })).toEqual({ history: { error: expect.objectContaining({ type: 'error', code: 'INVALID_REQUEST' }) } });
  });

  it('sys: the prompt, reload, soft memory in the prompt', async () => {
    expect(await zino.sys.get()).toContain('execute_bash');
    expect(await zino.sys.reload()).toContain('execute_bash');
    expect(await zino.sys.setSoftMemory('client soft memory')).toContain('client soft memory');
    // watch: the prompt now, then the next change; breaking out closes the stream.
    const seen: string[] = [];
    for await (const prompt of zino.sys.watch()) {
      seen.push(prompt);
      if (seen.length === 1) void zino.sys.setSoftMemory('watched soft memory');
      else break;
    }
    expect(seen[0]).toContain('client soft memory');
    expect(seen[1]).toContain('watched soft memory');
  });

  it('ctx: builds the context with the channel history', async () => {
    await zino.mem.appendHistory('cl-ctx', [{ role: 'user', content: 'earlier question' }]);
    const messages = await zino.ctx.build('next question', { channelId: 'cl-ctx' });
    expect(messages.at(-1)).toEqual({ role: 'user', content: 'earlier question' });
    const instead = await zino.ctx.build('next question', { channelId: 'cl-ctx', history: [{ role: 'user', content: 'given turn' }] });
    expect(instead.at(-1)).toEqual({ role: 'user', content: 'given turn' });
  });

  it('exc: execute, validate, capabilities', async () => {
    expect(await zino.exc.execute('bash', 'echo from-exc; exit 3')).toMatchObject({ type: 'result', exit_code: 3, stdout: 'from-exc\n' });
    expect(await zino.exc.validate('python3', 'def broken(:')).toMatchObject({ type: 'validation', ok: false });
    const caps = await zino.exc.capabilities();
    expect(Object.keys(caps.executors)).toEqual(expect.arrayContaining(['bash', 'python3']));
  });

  it('exc: approvals and approve (nothing pending: every run here is allowed unattended)', async () => {
    expect(await zino.exc.approvals()).toMatchObject({ type: 'approvals', pending: [] });
    await expect(zino.exc.approve('no-such-id', 'allow')).rejects.toMatchObject({ code: 'APPROVAL_UNKNOWN' });
  });

  it('exc: listTools and callTool (no MCP server configured here; test/services/exc-mcp.test.ts has them)', async () => {
    expect(await zino.exc.listTools()).toEqual({ type: 'tools', tools: [], servers: [] });
    await expect(zino.exc.callTool('files', 'read_text_file', { path: '/x' })).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: 'no MCP server "files" is configured (configured: none)',
    });
  });

  it('rtr: capabilities, collected and streamed inference', async () => {
    mock.reset({ rules: [{ reply: 'from the model', chunkSize: 4 }] });
    expect(await zino.rtr.capabilities()).toMatchObject({ model: 'client-model', configured: true });
    expect((await zino.rtr.infer([{ role: 'user', content: 'q' }], { temperature: 0.1 })).content).toBe('from the model');
    let streamed = '';
    for await (const frame of zino.rtr.inferStream([{ role: 'user', content: 'q' }])) if (frame.type === 'chunk') streamed += frame.delta;
    expect(streamed).toBe('from the model');
    expect(mock.stats.bodies[0]?.temperature).toBe(0.1);
  });

  it('agr: a collected and a streamed run', async () => {
    mock.reset({ rules: [{ reply: 'agr answer' }] });
    expect(await zino.agr.run([{ role: 'user', content: 'q' }])).toMatchObject({ type: 'result', content: 'agr answer', iterations: 1 });
    const types: string[] = [];
    for await (const frame of zino.agr.runStream([{ role: 'user', content: 'q' }], { events: true })) types.push(frame.type);
    expect(types[0]).toBe('iteration');
    expect(types.at(-1)).toBe('done');
  });
});

describe('ZinoClient: errors', () => {
  it('an error frame is a RemoteError with the service code', async () => {
    const err: unknown = await zino.mem.getHistory('').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RemoteError);
    expect(err).toMatchObject({ code: 'INVALID_REQUEST' });
    expect(ERROR_CODES).toContain((err as ZinoError).code);
  });

  it('an unreachable suite is UPSTREAM_UNAVAILABLE with phase and errno', async () => {
    const nowhere = new ZinoClient({ dir: path.join(dir, 'nowhere') });
    const err: unknown = await nowhere.ask('anyone?').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ZinoError);
    expect(err).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', detail: { phase: 'connect', errno: 'ENOENT', service: 'daemon' } });
  });
});

describe('docs/client.md', () => {
  it('runs its examples', async () => {
    mock.reset({
      rules: [
        { role: 'user', match: 'uptime', reply: TOOL_REPLY },
        { role: 'user', match: 'restart the web server', reply: HOST_REPLY },
        { role: 'assistant', match: 'the operator denied this: only', reply: ' Refused.' },
        { role: 'assistant', reply: ' Up.' },
        { match: 'system log', hang: true },
        { reply: 'plenty free' },
      ],
    });
    expect(await examples.askOnce(dir)).toBe('plenty free');
    const written: string[] = [];
    expect(await examples.askStreaming(dir, (t) => written.push(t))).toMatch(/characters, 1 tool call\(s\)$/);
    expect(await examples.askWithDeadline(dir, 500)).toBe('gave up');
    expect(await examples.rememberAndSearch(dir)).toContainEqual(expect.stringMatching(/^[01]\.\d\d the backup server is nas-2$/));
    expect(await examples.describeFailure(dir)).toBe('mem refused: INVALID_REQUEST');
    expect(await examples.askApprovingOnly(dir, 'echo restarted')).toMatch(/<tool_response>\nrestarted\n<\/tool_response>\n Up\.$/);
    expect(await examples.askApprovingOnly(dir, 'echo something else')).toMatch(/ Refused\.$/);
  });

  it('shows each example verbatim', () => {
    const doc = readFileSync(path.join(PACKAGE_ROOT, 'docs', 'client.md'), 'utf8');
    const source = readFileSync(path.join(PACKAGE_ROOT, 'test', 'client', 'examples.ts'), 'utf8');
    const regions = [...source.matchAll(/\/\/ example: (\w+)\n([\s\S]*?)\/\/ end\n/g)];
    expect(regions.map((r) => r[1])).toEqual(['ask', 'stream', 'cancel', 'memory', 'approve', 'errors']);
    for (const [, name, code] of regions) expect(doc, `docs/client.md shows the "${name}" example`).toContain(code);
  });
});
