/**
 * The OpenAI-compatible endpoint, used by the real `openai` package as any program
 * would: `zino serve http` in front of the real suite and the mock LLM.
 */
import path from 'node:path';
import OpenAI, { APIError } from 'openai';
import type { ChatCompletionChunk, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { request, type Frame, type ServiceName } from '../../src/runtime/index.js';
import { startHttpFrontEnd, type StartedHttp } from '../../src/testing/http.js';
import { writeTestConfig, type ServiceGroup } from '../../src/testing/suite.js';
import { mockOverrides, startWithMock, useMockLlm } from '../helpers/mock.js';
import { tempDir, waitFor } from '../helpers/util.js';

const llm = useMockLlm();
const script = llm.script;
const ALL: ServiceName[] = ['mem', 'sys', 'ctx', 'rtr', 'exc', 'agr', 'daemon'];

let group: ServiceGroup;
let cleanup: () => void;
let http: StartedHttp;
let client: OpenAI;

beforeAll(async () => {
  ({ group, cleanup } = await startWithMock(llm.mock, ALL, 'zhttp', {
    http: { listen: '127.0.0.1:0', max_body_bytes: 64 * 1024, max_concurrent: 2 },
  }));
  http = await startHttpFrontEnd(group.file);
  client = new OpenAI({ baseURL: http.baseUrl, apiKey: http.token, maxRetries: 0 });
});

afterAll(async () => {
  expect(await http?.stop()).toEqual({ code: 0, signal: null });
  await group?.stop();
  cleanup?.();
});

beforeEach(() => script({}));

const bodies = (): { messages: Frame[]; temperature?: number; top_p?: number; max_tokens?: number }[] =>
  llm.mock.stats.bodies as { messages: Frame[]; temperature?: number; top_p?: number; max_tokens?: number }[];
const user = (content: string): ChatCompletionMessageParam => ({ role: 'user', content });
const assistant = (content: string): ChatCompletionMessageParam => ({ role: 'assistant', content });

/** Every chunk of a streamed completion. */
async function chunksOf(stream: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const out: ChatCompletionChunk[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

const textOf = (chunks: ChatCompletionChunk[]): string => chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');

/** The status and OpenAI error body of a failed call. */
async function apiError(call: Promise<unknown>): Promise<{ status: number | undefined; error: unknown }> {
  try {
    await call;
  } catch (err) {
    if (err instanceof APIError) return { status: err.status, error: err.error };
    throw err;
  }
  throw new Error('the call succeeded');
}

describe('models', () => {
  it('lists zino, zino-verbose and zino-direct, and retrieves each', async () => {
    const models = [];
    for await (const model of client.models.list()) models.push(model);
    expect(models.map((m) => m.id)).toEqual(['zino', 'zino-verbose', 'zino-direct']);
    for (const model of models) {
      expect(model).toEqual({ id: model.id, object: 'model', created: expect.any(Number), owned_by: 'zino' });
      expect(model.created).toBeGreaterThan(1_700_000_000);
    }
    expect(await client.models.retrieve('zino-direct')).toMatchObject({ id: 'zino-direct', object: 'model' });
    expect(await apiError(client.models.retrieve('gpt-4o'))).toMatchObject({ status: 404, error: { code: 'model_not_found' } });
  });
});

describe('chat completions through the agent', () => {
  it('answers collected: one chat.completion with finish_reason, id, created, model and usage', async () => {
    script({ rules: [{ reply: 'Collected answer.', usage: { prompt_tokens: 11, completion_tokens: 7 } }] });
    const completion = await client.chat.completions.create({ model: 'zino', messages: [user('hello')] });
    expect(completion).toMatchObject({
      object: 'chat.completion',
      model: 'zino',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Collected answer.' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
    });
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(Math.abs(completion.created - Date.now() / 1000)).toBeLessThan(3600);
    // The agent's prompt: ZINO's system prompt first, the user's message last.
    const sent = bodies()[0]?.messages ?? [];
    expect(String(sent[0]?.content)).toContain('execute_bash');
    expect(sent.at(-1)).toEqual({ role: 'user', content: 'hello' });
  });

  it('streams chat.completion.chunk events, then a usage chunk when asked, then [DONE]', async () => {
    script({ rules: [{ reply: 'A streamed answer.', chunkSize: 3, usage: { prompt_tokens: 5, completion_tokens: 4 } }] });
    const chunks = await chunksOf(
      await client.chat.completions.create({ model: 'zino', messages: [user('hi')], stream: true, stream_options: { include_usage: true } }),
    );
    expect(textOf(chunks)).toBe('A streamed answer.');
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    for (const chunk of chunks) expect(chunk).toMatchObject({ object: 'chat.completion.chunk', model: 'zino', created: expect.any(Number) });
    expect(chunks[0]?.choices[0]?.delta.role).toBe('assistant');
    const last = chunks.at(-1);
    expect(last?.choices).toEqual([]);
    expect(last?.usage).toEqual({ prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 });
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe('stop');
    expect(chunks.slice(0, -2).every((c) => c.choices[0]?.finish_reason === null && c.usage === null)).toBe(true);
    // Without include_usage there is no usage chunk.
    const plain = await chunksOf(await client.chat.completions.create({ model: 'zino', messages: [user('hi')], stream: true }));
    expect(plain.every((c) => c.choices.length === 1 && c.usage === undefined)).toBe(true);
  });

  it('runs a tool call inside the agent loop and sends only the answer text', async () => {
    const rules = [
      { role: 'user', reply: 'Running.<tool_call>{"name":"execute_bash","arguments":{"code":"echo $((6*7))"}}</tool_call>', chunkSize: 5 },
      { role: 'assistant', reply: ' The answer is 42.' },
    ];
    script({ rules });
    const completion = await client.chat.completions.create({ model: 'zino', messages: [user('compute')] });
    expect(completion.choices[0]?.message.content).toBe('Running. The answer is 42.');
    // The program ran: its output went back to the model.
    expect(String(bodies()[1]?.messages.at(-1)?.content)).toContain('<tool_response>\n42\n</tool_response>');

    script({ rules });
    const streamed = await chunksOf(await client.chat.completions.create({ model: 'zino', messages: [user('compute')], stream: true }));
    expect(textOf(streamed)).toBe('Running. The answer is 42.');
  });

  it('shows tool calls and results as Markdown with zino-verbose or the X-Zino-Verbose header', async () => {
    const rules = [
      { role: 'user', reply: 'Running.<tool_call>{"name":"execute_bash","arguments":{"code":"echo $((6*7))"}}</tool_call>' },
      { role: 'assistant', reply: ' The answer is 42.' },
    ];
    script({ rules });
    const text = textOf(await chunksOf(await client.chat.completions.create({ model: 'zino-verbose', messages: [user('compute')], stream: true })));
    expect(text).toBe(
      'Running.\n\n**Running `execute_bash`:**\n\n```bash\necho $((6*7))\n```\n\n**Result** (exit 0):\n\n```text\n42\n```\n\n The answer is 42.',
    );
    script({ rules });
    const collected = await client.chat.completions.create({ model: 'zino', messages: [user('compute')] }, { headers: { 'X-Zino-Verbose': '1' } });
    expect(collected.choices[0]?.message.content).toBe(text);
    expect(collected.model).toBe('zino');
  });

  it('passes temperature and top_p on to the LLM, and ignores fields it does not use', async () => {
    script({ rules: [{ reply: 'ok' }] });
    await client.chat.completions.create({
      model: 'zino',
      messages: [user('hi')],
      temperature: 0.2,
      top_p: 0.3,
      seed: 7,
      stop: ['x'],
      tools: [{ type: 'function', function: { name: 'f', parameters: {} } }],
      response_format: { type: 'text' },
    });
    expect(bodies()[0]).toMatchObject({ temperature: 0.2, top_p: 0.3 });
    await client.chat.completions.create({ model: 'zino', messages: [user('hi')] });
    expect(bodies()[1]).toMatchObject({ temperature: 0.7, top_p: 1 });
  });
});

describe('conversations', () => {
  it('carry three turns the stateless way: the client sends the conversation, nothing is stored', async () => {
    script({
      rules: [
        { match: 'one', reply: 'ONE' },
        { match: 'two', reply: 'TWO' },
        { match: 'three', reply: 'THREE' },
      ],
    });
    const conversation: ChatCompletionMessageParam[] = [{ role: 'system', content: 'Be brief.' }];
    for (const [i, word] of ['one', 'two', 'three'].entries()) {
      conversation.push(user(`turn ${word}`));
      const completion = await client.chat.completions.create({ model: 'zino', messages: conversation });
      const answer = completion.choices[0]?.message.content ?? '';
      expect(answer).toBe(word.toUpperCase());
      conversation.push(assistant(answer));
      // The model saw the conversation once, in order, after ZINO's own system prompt and context.
      const sent = bodies()[i]?.messages ?? [];
      const expected = conversation.slice(0, -1).map((m) => ({ role: m.role, content: m.content }));
      expect(sent.slice(-expected.length)).toEqual(expected);
      expect(sent.filter((m) => m.content === 'turn one')).toHaveLength(1);
      expect(sent[0]?.role).toBe('system');
      expect(String(sent[0]?.content)).toContain('execute_bash');
    }
  });

  it("carry three turns the channel way: `user` names a channel, the client sends only its new message, ZINO's memory has the rest", async () => {
    script({
      rules: [
        { match: 'first', reply: 'A1' },
        { match: 'second', reply: 'A2' },
        { match: 'third', reply: 'A3' },
      ],
    });
    const words = ['first', 'second', 'third'];
    for (const [i, word] of words.entries()) {
      // The third turn names the channel with the header instead of `user`.
      const channel = i === 2 ? { headers: { 'X-Zino-Channel': 'http-alice' } } : {};
      const completion = await client.chat.completions.create(
        { model: 'zino', messages: [user(`${word} question`)], ...(i < 2 ? { user: 'http-alice' } : {}) },
        channel,
      );
      expect(completion.choices[0]?.message.content).toBe(`A${i + 1}`);
      const sent = bodies()[i]?.messages ?? [];
      const expected = words
        .slice(0, i + 1)
        .flatMap((w, j) => [{ role: 'user', content: `${w} question` }, ...(j < i ? [{ role: 'assistant', content: `A${j + 1}` }] : [])]);
      expect(sent.slice(-expected.length)).toEqual(expected);
      expect(sent.filter((m) => m.content === 'first question')).toHaveLength(1);
    }
    const history = await request(group.config.mem.socket, { type: 'get_history', channel_id: 'http-alice' });
    expect(history.messages).toEqual(
      words.flatMap((w, i) => [
        { role: 'user', content: `${w} question` },
        { role: 'assistant', content: `A${i + 1}` },
      ]),
    );
  });

  it('never puts a turn in twice when a client names a channel and still sends its whole conversation', async () => {
    script({ rules: [{ reply: 'fine' }] });
    await request(group.config.mem.socket, { type: 'append_history', channel_id: 'http-bob', messages: [{ role: 'user', content: 'old turn' }] });
    const messages = [user('q1'), assistant('a1'), user('q2')];
    await client.chat.completions.create({ model: 'zino', messages, user: 'http-bob' });
    const sent = bodies()[0]?.messages ?? [];
    expect(sent.slice(-3)).toEqual([
      { role: 'user', content: 'q1' },
      { role: 'assistant', content: 'a1' },
      { role: 'user', content: 'q2' },
    ]);
    expect(sent.some((m) => m.content === 'old turn')).toBe(false);
  });
});

describe('zino-direct', () => {
  it("sends the client's messages to the LLM as they are: no system prompt, memory or tools of ZINO's", async () => {
    script({
      rules: [
        { reply: 'plain <tool_call>{"name":"execute_bash","arguments":{"code":"echo no"}}</tool_call>', usage: { prompt_tokens: 3, completion_tokens: 2 } },
      ],
    });
    const messages = [{ role: 'system' as const, content: 'sys' }, user('q'), assistant('a'), user('direct question')];
    const completion = await client.chat.completions.create({ model: 'zino-direct', messages, temperature: 1.5, top_p: 0.9, max_tokens: 20 });
    expect(bodies()[0]?.messages).toEqual(messages);
    expect(bodies()[0]).toMatchObject({ temperature: 1.5, top_p: 0.9, max_tokens: 20 });
    // Nothing ran: the model's text comes back as it is, markup and all.
    expect(completion.choices[0]?.message.content).toBe('plain <tool_call>{"name":"execute_bash","arguments":{"code":"echo no"}}</tool_call>');
    expect(llm.mock.stats.requests).toBe(1);
    expect(completion.usage).toEqual({ prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 });
    const streamed = await chunksOf(await client.chat.completions.create({ model: 'zino-direct', messages: [user('x')], stream: true }));
    expect(textOf(streamed)).toBe(completion.choices[0]?.message.content);
  });
});

describe('cancellation', () => {
  it('aborting mid-stream closes the daemon connection: the mock LLM sees its request aborted', async () => {
    script({ rules: [{ reply: 'a slow answer that never ends', chunkSize: 2, hangAfterChunks: 2 }] });
    const controller = new AbortController();
    const stream = await client.chat.completions.create({ model: 'zino', messages: [user('hang')], stream: true }, { signal: controller.signal });
    const seen: string[] = [];
    // The mock sends "a " and "sl", then holds the stream open; openai ends the iteration on abort.
    for await (const chunk of stream) {
      seen.push(chunk.choices[0]?.delta.content ?? '');
      if (seen.join('') === 'a sl') controller.abort();
    }
    expect(seen.join('')).toBe('a sl');
    await llm.mock.waitForAborts(1, 30_000);
    await waitFor(() => http.logs.some((l) => l.msg === 'chat completion cancelled: the client went away'), 'the front end to log the cancel');
  });
});

describe('errors, in OpenAI shape', () => {
  it('401 without the token or with a wrong one', async () => {
    const wrong = new OpenAI({ baseURL: http.baseUrl, apiKey: 'not-the-token', maxRetries: 0 });
    expect(await apiError(wrong.chat.completions.create({ model: 'zino', messages: [user('hi')] }))).toEqual({
      status: 401,
      error: { message: expect.stringContaining('Authorization: Bearer'), type: 'invalid_request_error', param: null, code: 'invalid_api_key' },
    });
    expect(await apiError(wrong.models.list())).toMatchObject({ status: 401 });
    const bare = await fetch(`${http.baseUrl}/models`);
    expect(bare.status).toBe(401);
    expect(bare.headers.get('www-authenticate')).toBe('Bearer');
    expect(await bare.json()).toMatchObject({ error: { code: 'invalid_api_key' } });
    expect(llm.mock.stats.requests).toBe(0);
  });

  it('404 for an unknown model or path', async () => {
    expect(await apiError(client.chat.completions.create({ model: 'gpt-4o', messages: [user('hi')] }))).toEqual({
      status: 404,
      error: { message: expect.stringContaining('gpt-4o'), type: 'invalid_request_error', param: 'model', code: 'model_not_found' },
    });
    expect(await apiError(client.get('/embeddings'))).toMatchObject({ status: 404, error: { type: 'invalid_request_error', code: 'unknown_url' } });
  });

  it('400 for a body it cannot use, never 500', async () => {
    const bad = [
      { model: 'zino', messages: 'hi' },
      { model: 'zino', messages: [] },
      { model: 'zino', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'http://x' } }] }] },
      { model: 'zino', messages: [user('hi'), assistant('prefill')] },
      { model: 'zino', messages: [user('hi')], temperature: 5 },
      { model: 'zino', messages: [user('hi')], n: 3 },
      { messages: [user('hi')] },
    ];
    for (const body of bad) {
      const { status, error } = await apiError(client.post('/chat/completions', { body }));
      expect(status, JSON.stringify(body)).toBe(400);
      expect(error).toMatchObject({ message: expect.any(String), type: 'invalid_request_error' });
    }
    // Text parts are joined; unknown message fields are ignored.
    script({ rules: [{ reply: 'parts ok' }] });
    const parts = await client.chat.completions.create({
      model: 'zino',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'part one' },
            { type: 'text', text: 'part two' },
          ],
          name: 'me',
        },
      ],
    });
    expect(parts.choices[0]?.message.content).toBe('parts ok');
    expect(bodies()[0]?.messages.at(-1)).toEqual({ role: 'user', content: 'part one\npart two' });
  });

  it('413 for a body over [http] max_body_bytes', async () => {
    const { status, error } = await apiError(client.chat.completions.create({ model: 'zino', messages: [user('x'.repeat(70_000))] }));
    expect(status).toBe(413);
    expect(error).toMatchObject({ type: 'invalid_request_error', code: 'request_too_large', message: expect.stringContaining('max_body_bytes') });
    expect(llm.mock.stats.requests).toBe(0);
  });

  it('429 over [http] max_concurrent, and serves again once there is room', async () => {
    script({ rules: [{ match: 'hold', hang: true }, { reply: 'room again' }] });
    const controller = new AbortController();
    const held = [0, 1].map(() =>
      client.chat.completions.create({ model: 'zino', messages: [user('hold')] }, { signal: controller.signal }).catch((err: unknown) => err),
    );
    await waitFor(() => llm.mock.stats.active === 2, 'two requests at the LLM');
    const refused = await apiError(client.chat.completions.create({ model: 'zino', messages: [user('third')] }));
    expect(refused).toEqual({
      status: 429,
      error: { message: expect.stringContaining('max_concurrent = 2'), type: 'rate_limit_error', param: null, code: 'rate_limit_exceeded' },
    });
    controller.abort();
    await Promise.all(held);
    await llm.mock.waitForAborts(2, 30_000);
    await waitFor(async () => {
      try {
        return (await client.chat.completions.create({ model: 'zino', messages: [user('again')] })).choices[0]?.message.content === 'room again';
      } catch {
        return false;
      }
    }, 'a request to be served again');
  });

  it('503 when the daemon cannot be reached, and /healthz says unavailable without detail', async () => {
    const { dir, cleanup: done } = tempDir('zhttp503');
    try {
      // A configuration whose daemon socket nobody listens on.
      const { file } = writeTestConfig(dir, mockOverrides(llm.mock, { http: { listen: '127.0.0.1:0' } }));
      const lonely = await startHttpFrontEnd(file);
      try {
        const orphan = new OpenAI({ baseURL: lonely.baseUrl, apiKey: lonely.token, maxRetries: 0 });
        for (const stream of [false, true]) {
          const { status, error } = await apiError(orphan.chat.completions.create({ model: 'zino', messages: [user('anyone?')], stream }));
          expect(status).toBe(503);
          expect(error).toEqual({
            message: expect.stringContaining('daemon cannot be reached'),
            type: 'server_error',
            param: null,
            code: 'service_unavailable',
          });
          expect(JSON.stringify(error)).not.toContain(path.join(dir, 'run'));
        }
        const health = await fetch(`http://127.0.0.1:${lonely.port}/healthz`);
        expect(health.status).toBe(503);
        expect(await health.json()).toEqual({ status: 'unavailable' });
      } finally {
        await lonely.stop();
      }
    } finally {
      done();
    }
  });
});

describe('errors after the answer has begun', () => {
  it('arrive as an error event the openai client raises, with no [DONE]', async () => {
    // The LLM's stream breaks after two chunks: rtr, agr and the daemon pass the error on.
    script({ rules: [{ reply: 'this answer breaks off', chunkSize: 4, dropAfterChunks: 2 }] });
    const stream = await client.chat.completions.create({ model: 'zino', messages: [user('break')], stream: true });
    let text = '';
    const failure = await (async () => {
      try {
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      } catch (err) {
        return err;
      }
      return undefined;
    })();
    expect(text).toBe('this ans');
    expect(failure).toBeInstanceOf(APIError);
    expect((failure as APIError).error).toMatchObject({ type: 'server_error', message: expect.any(String) });
    // The endpoint is fine afterwards.
    script({ rules: [{ reply: 'fine again' }] });
    expect((await client.chat.completions.create({ model: 'zino', messages: [user('again')] })).choices[0]?.message.content).toBe('fine again');
  });
});

describe('/healthz', () => {
  it('needs no token and says only ok', async () => {
    const health = await fetch(`http://127.0.0.1:${http.port}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
  });
});
