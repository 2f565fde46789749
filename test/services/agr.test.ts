import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { request, stream, type Frame } from '../../src/runtime/index.js';
import { PACKAGE_ROOT, startServices, type ServiceGroup } from '../../src/testing/suite.js';
import { collectFrames } from '../helpers/frames.js';
import { startWithMock, useMockLlm } from '../helpers/mock.js';
import { processesMatching } from '../helpers/procs.js';
import { tempDir, waitFor } from '../helpers/util.js';

const llm = useMockLlm();
const script = llm.script;
let suite: ServiceGroup;
let cleanup: () => void;

beforeAll(async () => {
  ({ group: suite, cleanup } = await startWithMock(llm.mock, ['rtr', 'exc', 'agr'], 'zagr', {
    service: { model: 'mock-model' },
    exc: { timeout: 60 },
    agr: { max_block_bytes: 4096 },
  }));
});
afterAll(async () => {
  const exits = await suite.stop();
  cleanup();
  expect(Object.values(exits)).toEqual([
    { code: 0, signal: null },
    { code: 0, signal: null },
    { code: 0, signal: null },
  ]);
});

beforeEach(() => script({}));

const call = (code: string, name = 'execute_bash') => `<tool_call>\n${JSON.stringify({ name, arguments: { code } })}\n</tool_call>`;
const USER = [
  { role: 'system', content: 'You are a test.' },
  { role: 'user', content: 'please check' },
];
const run = (extra: Frame = {}): Frame => ({ type: 'run', messages: USER, temperature: 0.5, top_p: 1, ...extra });

const frames = (extra: Frame = {}): Promise<Frame[]> => collectFrames(suite.get('agr').socket, run(extra));

describe('agr run, collected', () => {
  it('executes one tool call, injects its result and loops once more', async () => {
    script({
      rules: [
        { role: 'user', match: 'please check', reply: `Checking.\n${call('echo hello; echo oops >&2')}` },
        { role: 'assistant', match: '</tool_response>', reply: 'The command printed hello.' },
      ],
    });
    const reply = await request(suite.get('agr').socket, run());
    const first = `Checking.\n${call('echo hello; echo oops >&2')}\n<tool_response>\nhello\n[stderr]\noops\n</tool_response>\n`;
    expect(reply).toEqual({ type: 'result', content: `${first}The command printed hello.`, iterations: 2, usage: expect.any(Object) });
    expect(llm.mock.stats.bodies[1]?.messages).toEqual([...USER, { role: 'assistant', content: first }]);
    expect(llm.mock.stats.bodies[0]).toMatchObject({ temperature: 0.5, top_p: 1 });
  });

  it('executes two calls in one reply, in order, each followed by its response', async () => {
    script({
      rules: [
        { role: 'user', reply: `A ${call('echo one')} B ${call('exit 3', 'execute_bash')} C` },
        { role: 'assistant', reply: 'done' },
      ],
    });
    const reply = await request(suite.get('agr').socket, run());
    expect(reply.content).toBe(
      `A ${call('echo one')}\n<tool_response>\none\n</tool_response>\n B ${call('exit 3')}\n<tool_response>\n[exit code: 3]\n</tool_response>\n Cdone`,
    );
    expect(reply.iterations).toBe(2);
  });

  it('runs a task through the skill pipeline with the exact interpreter and fabricator prompts', async () => {
    const skill = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'skills', 'bash.json'), 'utf8')) as { interpreter: Frame[]; fabricator: Frame[] };
    const task = '<task>{"skill": "bash", "request": "print the word fabricated"}</task>';
    script({
      rules: [
        { match: ' [KCR] ', reply: 'Here you go:\n```bash\necho fabricated\n```' },
        { match: 'print the word fabricated', role: 'user', reply: '1. Echo the word.' },
        { role: 'user', match: 'please check', reply: `Delegating. ${task}` },
        { role: 'assistant', match: '</task_response>', reply: ' All done.' },
      ],
    });
    const reply = await request(suite.get('agr').socket, run());
    expect(reply.content).toBe(`Delegating. ${task}\n<task_response>\nfabricated\n</task_response>\n All done.`);
    expect(llm.mock.stats.bodies.map((b) => (b.messages as Frame[]).length)).toEqual([2, skill.interpreter.length + 1, skill.fabricator.length + 1, 3]);
    expect(llm.mock.stats.bodies[1]?.messages).toEqual([...skill.interpreter, { role: 'user', content: 'print the word fabricated' }]);
    expect(llm.mock.stats.bodies[2]?.messages).toEqual([...skill.fabricator, { role: 'user', content: 'print the word fabricated [KCR] 1. Echo the word.' }]);
  });

  it('stops at max_iterations', async () => {
    script({ rules: [{ reply: call('echo again') }] });
    const reply = await request(suite.get('agr').socket, run({ max_iterations: 2 }));
    expect(reply.iterations).toBe(2);
    expect(llm.mock.stats.requests).toBe(2);
    expect(String(reply.content).match(/<tool_response>/g)).toHaveLength(2);
  });

  it('tells the model about malformed JSON, unknown tools and skills, empty code, and keeps looping', async () => {
    script({
      rules: [
        {
          role: 'user',
          reply: `<tool_call>{"name": "execute_bash", "arguments": {"code": "ls"</tool_call><tool_call>${JSON.stringify({ name: 'execute_ruby', arguments: { code: 'puts 1' } })}</tool_call><task>{"skill":"cobol","request":"x"}</task><tool_call>{"name":"execute_bash","arguments":{"code":"  "}}</tool_call>`,
        },
        { role: 'assistant', reply: 'I will fix that.' },
      ],
    });
    const reply = await request(suite.get('agr').socket, run());
    const responses = [...String(reply.content).matchAll(/<(?:tool|task)_response>\n(.*)\n<\/(?:tool|task)_response>/g)].map((m) => m[1]);
    expect(responses).toEqual([
      expect.stringMatching(
        /^error: the tool_call block is not valid JSON \(.*\)\. Write exactly one JSON object; inside a string, write its closing tag with the slash escaped, as "<\\\/tool_call>"\.$/,
      ),
      'error: unknown tool "execute_ruby" (available: execute_bash, execute_python3)',
      'error: unknown skill "cobol" (available: bash, python)',
      'error: the call to execute_bash has empty code; nothing was run',
    ]);
    expect(reply.iterations).toBe(2);
    expect(String(reply.content).endsWith('I will fix that.')).toBe(true);
  });

  it('refuses a block larger than [agr] max_block_bytes and says why', async () => {
    script({
      rules: [
        { role: 'user', reply: call(`echo ${'x'.repeat(5000)}`) },
        { role: 'assistant', reply: 'ok' },
      ],
    });
    const reply = await request(suite.get('agr').socket, run());
    expect(reply.content).toMatch(
      /<tool_response>\nerror: the tool_call block is \d+ bytes, more than the limit of 4096 bytes \(\[agr\] max_block_bytes\); it was not executed\. Send a shorter program\.\n<\/tool_response>/,
    );
    expect(reply.content).toMatch(/\[\.\.\. \d+ bytes omitted\]/);
  });

  it('answers rtr failing with one terminal error frame', async () => {
    script({ rules: [{ status: 400, errorMessage: 'context length exceeded' }] });
    expect(await frames({ stream: true })).toEqual([{ type: 'error', code: 'UPSTREAM_ERROR', message: 'the LLM API answered 400: context length exceeded' }]);
  });

  it('rejects a malformed run request', async () => {
    await expect(request(suite.get('agr').socket, { type: 'run', messages: 'hi' })).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    await expect(request(suite.get('agr').socket, run({ max_iterations: 0 }))).rejects.toMatchObject({
      message: 'field "max_iterations" must be at least 1, got 0',
    });
    expect(llm.mock.stats.requests).toBe(0);
  });
});

describe('agr run, streamed', () => {
  it("sends a block's response as a chunk before the model's later text", async () => {
    script({
      rules: [
        {
          role: 'user',
          chunks: ['Before ', '<tool_', 'call>\n{"name":"execute_bash","arguments":{"code":"echo mid"}}\n</tool', '_call>', ' after', ' the', ' call.'],
          delayMs: 30,
        },
        { role: 'assistant', chunks: [' Final', ' words.'] },
      ],
    });
    const out = await frames({ stream: true });
    const chunks = out.filter((f) => f.type === 'chunk').map((f) => String(f.delta));
    const done = out.at(-1) as Frame;
    expect(done).toMatchObject({ type: 'done', iterations: 2 });
    expect(chunks.join('')).toBe(done.full_text);
    const response = chunks.findIndex((c) => c.includes('<tool_response>\nmid\n</tool_response>'));
    const after = chunks.findIndex((c) => c.includes(' after'));
    expect(response).toBeGreaterThan(0);
    expect(response).toBeLessThan(after);
    expect(chunks[0]).toBe('Before ');
    // The block itself is forwarded whole, right before its response.
    expect(chunks[response - 1]).toBe('<tool_call>\n{"name":"execute_bash","arguments":{"code":"echo mid"}}\n</tool_call>');
  });

  it('sends event frames only when asked', async () => {
    const rules = {
      rules: [
        { role: 'user', reply: call('echo evt') },
        { role: 'assistant', reply: 'ok', usage: { prompt_tokens: 5, completion_tokens: 1 } },
      ],
    };
    script(rules);
    const plain = await frames({ stream: true });
    expect(new Set(plain.map((f) => f.type))).toEqual(new Set(['chunk', 'done']));
    script(rules);
    const withEvents = await frames({ stream: true, events: true });
    const events = withEvents.filter((f) => f.type !== 'chunk');
    expect(events.map((f) => f.type)).toEqual(['iteration', 'tool_call', 'tool_result', 'usage', 'iteration', 'usage', 'done']);
    expect(events[0]).toEqual({ type: 'iteration', n: 1 });
    expect(events[1]).toEqual({ type: 'tool_call', kind: 'tool', name: 'execute_bash', code: 'echo evt' });
    expect(events[2]).toEqual({ type: 'tool_result', exit_code: 0, output: 'evt' });
    expect(events[5]).toEqual({ type: 'usage', prompt_tokens: 5, completion_tokens: 1 });
    expect(events[6]).toMatchObject({ type: 'done', iterations: 2, usage: { completion_tokens: expect.any(Number) } });
    script(rules);
    const collected = (await collectFrames(suite.get('agr').socket, run({ events: true }))).map((f) => f.type);
    expect(collected).toEqual(['iteration', 'tool_call', 'tool_result', 'usage', 'iteration', 'usage', 'result']);
  });
});

describe('agr cancellation', () => {
  it('kills a running sleep and aborts the LLM stream when the caller disconnects', async () => {
    const marker = `1000.${Date.now()}`;
    script({ rules: [{ role: 'user', chunks: [`${call(`sleep ${marker}`)}`, ' and then more'], hangAfterChunks: 1 }] });
    const controller = new AbortController();
    const requestId = `agr-cancel-${marker}`;
    const pending = (async () => {
      for await (const f of stream(suite.get('agr').socket, run({ stream: true, request_id: requestId }), { signal: controller.signal })) void f;
    })().catch((e: unknown) => e);
    await waitFor(() => processesMatching(`sleep ${marker}`).length === 1, 'the sleep to start', 30_000);
    controller.abort();
    expect(await pending).toMatchObject({ code: 'CANCELLED' });
    await waitFor(() => processesMatching(`sleep ${marker}`).length === 0, 'exc to kill the sleep', 30_000);
    await llm.mock.waitForAborts(1, 30_000);
    // agr logs this after its handler has returned: it cannot ask the model again after it.
    await waitFor(
      () => suite.get('agr').logs.some((l) => l.request_id === requestId && l.msg === 'request cancelled: client disconnected'),
      'agr to end the request',
      30_000,
    );
    expect(llm.mock.stats.requests).toBe(1);
  });
});

describe('agr when exc is down', () => {
  it('tells the model the code could not be run and keeps looping', async () => {
    const { group: lone, cleanup: done } = await startWithMock(llm.mock, ['rtr', 'agr'], 'zagr2');
    try {
      script({
        rules: [
          { role: 'user', reply: call('echo hi') },
          { role: 'assistant', reply: 'sorry' },
        ],
      });
      const reply = await request(lone.get('agr').socket, run());
      expect(reply.content).toMatch(
        /<tool_response>\nerror: the code could not be run: cannot connect to exc at .*exc\.sock: ENOENT .*\n<\/tool_response>\nsorry$/,
      );
      expect(reply.iterations).toBe(2);
    } finally {
      await lone.stop();
      done();
    }
  });
});

describe('the demo model driving the loop', () => {
  it('calls a tool, has it executed, and summarises the output', async () => {
    const { dir, cleanup: done } = tempDir('zdemo');
    const demo = await startServices(['rtr', 'exc', 'agr'], dir, { api: { base_url: 'demo' }, exc: { sandbox: 'none' }, approval: { mode: 'allow' } });
    try {
      const reply = await request(demo.get('agr').socket, {
        type: 'run',
        messages: [{ role: 'user', content: 'what is the uptime of this machine?' }],
        temperature: 0.7,
        top_p: 1,
      });
      expect(reply.iterations).toBe(2);
      expect(reply.content).toMatch(
        /^Let me check the uptime and load on this machine\.\n<tool_call>\n\{"name":"execute_bash","arguments":\{"code":"uptime"\}\}\n<\/tool_call>\n<tool_response>\n.*load average.*\n<\/tool_response>\n/s,
      );
      expect(reply.content).toContain('It ran successfully. It printed 1 line:');
    } finally {
      await demo.stop();
      done();
    }
  });
});
