import { afterEach, describe, expect, it } from 'vitest';
import { request, stream } from '../../src/runtime/index.js';
import { startService, writeTestConfig, type ConfigOverrides, type StartedService } from '../../src/testing/suite.js';
import { collectFrames } from '../helpers/frames.js';
import { useMockLlm } from '../helpers/mock.js';
import { WARM_UP_ROUNDS } from '../../src/services/rtr/warm-up.js';
import { closedPort, tempDir, waitFor } from '../helpers/util.js';

const llm = useMockLlm();
const started: { service: StartedService; cleanup: () => void }[] = [];

afterEach(async () => {
  for (const { service, cleanup } of started.splice(0)) {
    const exit = await service.stop();
    expect(exit).toEqual({ code: 0, signal: null });
    cleanup();
  }
});

async function rtr(overrides: ConfigOverrides = {}, env: NodeJS.ProcessEnv = {}): Promise<StartedService> {
  const { dir, cleanup } = tempDir('zrtr');
  const { file } = writeTestConfig(dir, {
    api: { base_url: llm.mock.baseUrl, key: 'sk-test' },
    service: { model: 'mock-model' },
    ...overrides,
  });
  const service = await startService('rtr', file, { env: { LLM_API_KEY: '', ...env } });
  started.push({ service, cleanup });
  return service;
}

const resetMock = llm.script;

const USER = [{ role: 'user', content: 'hello' }];

const collect = collectFrames;

describe('rtr capabilities', () => {
  it('reports streaming and the model', async () => {
    const service = await rtr();
    expect(await request(service.socket, { type: 'capabilities' })).toEqual({
      type: 'capabilities',
      streaming: true,
      model: 'mock-model',
      backend: 'openai',
      configured: true,
      base_url: llm.mock.baseUrl,
      key_source: '[api] key',
    });
  });
});

describe('rtr at start', () => {
  it('warms the openai SDK up with a stream of its own, sending nothing to the endpoint', async () => {
    const service = await rtr({}, { ZINO_LOG_LEVEL: 'debug' });
    const line = await waitFor(() => service.logs.find((l) => l.msg === 'openai SDK warmed up'), 'the warm-up');
    // Every delta of every round came through the SDK and the backend's stream.
    expect(line).toMatchObject({ rounds: WARM_UP_ROUNDS, deltas: WARM_UP_ROUNDS * 10 });
    expect(llm.mock.stats.requests).toBe(0);
    // The service's own client is untouched by it: the next call goes to the endpoint, with the configured model.
    resetMock({ rules: [{ reply: 'after the warm-up' }] });
    expect(await request(service.socket, { type: 'infer', messages: USER, stream: false })).toMatchObject({ type: 'response', content: 'after the warm-up' });
    expect(llm.mock.stats.bodies[0]?.model).toBe('mock-model');
  });
});

describe('rtr infer against the mock LLM', () => {
  it('streams chunk frames and a done frame with full_text and usage', async () => {
    resetMock({ rules: [{ reply: 'Hello there, world!', chunkSize: 5, usage: { prompt_tokens: 11, completion_tokens: 7 } }] });
    const service = await rtr();
    const frames = await collect(service.socket, { type: 'infer', messages: USER, temperature: 0.3, top_p: 0.9, stream: true });
    expect(frames).toEqual([
      { type: 'chunk', delta: 'Hello' },
      { type: 'chunk', delta: ' ther' },
      { type: 'chunk', delta: 'e, wo' },
      { type: 'chunk', delta: 'rld!' },
      { type: 'done', full_text: 'Hello there, world!', usage: { prompt_tokens: 11, completion_tokens: 7 } },
    ]);
    expect(llm.mock.stats.bodies[0]).toMatchObject({
      model: 'mock-model',
      messages: USER,
      temperature: 0.3,
      top_p: 0.9,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(llm.mock.stats.authorizations[0]).toBe('Bearer sk-test');
  });

  it('answers a collected request with one response frame and usage', async () => {
    resetMock({ rules: [{ reply: 'Collected answer', usage: { prompt_tokens: 3, completion_tokens: 2 } }] });
    const service = await rtr();
    const frames = await collect(service.socket, { type: 'infer', messages: USER, temperature: 0.7, top_p: 1, stream: false });
    expect(frames).toEqual([{ type: 'response', content: 'Collected answer', usage: { prompt_tokens: 3, completion_tokens: 2 } }]);
    expect(llm.mock.stats.bodies[0]?.stream).toBe(false);
  });

  it('answers collected when [rtr] streaming = false even if a stream is asked for', async () => {
    resetMock({ rules: [{ reply: 'not streamed' }] });
    const service = await rtr({ rtr: { streaming: false } });
    expect(await request(service.socket, { type: 'capabilities' })).toMatchObject({ streaming: false });
    const frames = await collect(service.socket, { type: 'infer', messages: USER, temperature: 0.7, top_p: 1, stream: true });
    expect(frames).toEqual([{ type: 'response', content: 'not streamed', usage: expect.any(Object) }]);
  });

  it('retries 503, 503, then succeeds', async () => {
    resetMock({ rules: [{ status: 503, failTimes: 2, retryAfter: '0', reply: 'third time lucky' }] });
    const service = await rtr();
    const frames = await collect(service.socket, { type: 'infer', messages: USER, temperature: 0.7, top_p: 1, stream: true });
    expect(frames.at(-1)).toMatchObject({ type: 'done', full_text: 'third time lucky' });
    expect(llm.mock.stats.requests).toBe(3);
    expect(service.logs.filter((l) => l.msg === 'LLM call failed; retrying')).toHaveLength(2);
  });

  it('retries 503 with exponential backoff when no retry-after is sent', async () => {
    resetMock({ rules: [{ status: 503, failTimes: 2, reply: 'ok' }] });
    const service = await rtr();
    expect(await request(service.socket, { type: 'infer', messages: USER, temperature: 0.7, top_p: 1, stream: false })).toMatchObject({ content: 'ok' });
    const [a, b, c] = llm.mock.stats.arrivals as [number, number, number];
    // Equal jitter: retry n waits between half and all of 500 ms × 2^n.
    expect(b - a).toBeGreaterThanOrEqual(240);
    expect(c - b).toBeGreaterThanOrEqual(490);
  });

  it('honours retry-after', async () => {
    resetMock({ rules: [{ status: 429, failTimes: 1, retryAfter: '1', reply: 'ok' }] });
    const service = await rtr();
    expect(await request(service.socket, { type: 'infer', messages: USER, temperature: 0.7, top_p: 1, stream: false })).toMatchObject({ content: 'ok' });
    const [a, b] = llm.mock.stats.arrivals as [number, number];
    expect(b - a).toBeGreaterThanOrEqual(950);
  });

  it('gives up after [rtr] max_retries and says how many attempts were made', async () => {
    resetMock({ rules: [{ status: 500, retryAfter: '0', errorMessage: 'the server is on fire' }] });
    const service = await rtr({ rtr: { max_retries: 1 } });
    await expect(request(service.socket, { type: 'infer', messages: USER, temperature: 0.7, top_p: 1, stream: true })).rejects.toMatchObject({
      code: 'UPSTREAM_ERROR',
      message: 'the LLM API answered 500: the server is on fire (after 2 attempts)',
    });
    expect(llm.mock.stats.requests).toBe(2);
  });

  it('fails a 400 at once with the API message, without retrying', async () => {
    resetMock({ rules: [{ status: 400, errorMessage: "Invalid value for 'temperature'" }] });
    const service = await rtr();
    await expect(request(service.socket, { type: 'infer', messages: USER, temperature: 0.7, top_p: 1, stream: true })).rejects.toMatchObject({
      code: 'UPSTREAM_ERROR',
      message: "the LLM API answered 400: Invalid value for 'temperature'",
    });
    expect(llm.mock.stats.requests).toBe(1);
  });

  it('explains a 401 with a hint about the key', async () => {
    resetMock({ apiKey: 'sk-right', rules: [{ reply: 'x' }] });
    const service = await rtr();
    await expect(request(service.socket, { type: 'infer', messages: USER, temperature: 0.7, top_p: 1, stream: false })).rejects.toMatchObject({
      message:
        'the LLM API answered 401: Incorrect API key provided. (rtr sent the key from [api] key. rtr reads the key itself: set [api] key_file,' +
        ' or LLM_API_KEY in the environment of `npm start` / `zino up` / the zino-rtr unit (not of `zino ask`), then restart)',
    });
  });

  it('does not retry once the reply has started, and reports the broken stream after the chunks', async () => {
    resetMock({ rules: [{ reply: 'abcdefgh', chunkSize: 2, dropAfterChunks: 2 }] });
    const service = await rtr();
    const frames = await collect(service.socket, { type: 'infer', messages: USER, temperature: 0.7, top_p: 1, stream: true });
    expect(frames.slice(0, 2)).toEqual([
      { type: 'chunk', delta: 'ab' },
      { type: 'chunk', delta: 'cd' },
    ]);
    expect(frames[2]).toMatchObject({ type: 'error', message: expect.stringMatching(/^the LLM stream broke after the reply had started: /) });
    expect(frames).toHaveLength(3);
    expect(llm.mock.stats.requests).toBe(1);
  });

  it('ends a stream that stalls mid-reply with TIMEOUT after [rtr] timeout (regression: the SDK timeout stops at the headers)', async () => {
    resetMock({ rules: [{ reply: 'first then nothing', chunkSize: 6, hangAfterChunks: 1 }] });
    const service = await rtr({ rtr: { timeout: 1 } });
    const frames = await collect(service.socket, { type: 'infer', messages: USER, temperature: 0.7, top_p: 1, stream: true });
    expect(frames).toEqual([
      { type: 'chunk', delta: 'first ' },
      { type: 'error', code: 'TIMEOUT', message: 'the LLM did not finish its reply within 1 s ([rtr] timeout, the bound on the whole request)' },
    ]);
    await llm.mock.waitForAborts(1, 30_000);
  });

  it('treats a stream that ends without a finish_reason as broken', async () => {
    resetMock({ rules: [{ reply: 'cut short', chunkSize: 4, noFinish: true }] });
    const service = await rtr();
    const frames = await collect(service.socket, { type: 'infer', messages: USER, temperature: 0.7, top_p: 1, stream: true });
    expect(frames.at(-1)).toEqual({ type: 'error', code: 'UPSTREAM_ERROR', message: 'the LLM stream ended before the reply was finished (no finish_reason)' });
  });

  it('reports an unreachable endpoint as UPSTREAM_UNAVAILABLE after retrying', async () => {
    const port = await closedPort();
    const service = await rtr({ api: { base_url: `http://127.0.0.1:${port}/v1`, key: 'k' }, rtr: { max_retries: 1 } });
    await expect(request(service.socket, { type: 'infer', messages: USER, temperature: 0.7, top_p: 1, stream: false })).rejects.toMatchObject({
      code: 'UPSTREAM_UNAVAILABLE',
      message: `cannot reach the LLM API at http://127.0.0.1:${port}/v1: ECONNREFUSED (after 2 attempts)`,
    });
  });

  it('uses the only model the endpoint serves when none is configured', async () => {
    resetMock({ model: 'served-model', rules: [{ reply: 'detected' }] });
    const service = await rtr({ service: { model: '' } });
    expect(await request(service.socket, { type: 'infer', messages: USER, temperature: 0.7, top_p: 1, stream: false })).toMatchObject({ content: 'detected' });
    expect(llm.mock.stats.bodies[0]?.model).toBe('served-model');
    expect(await request(service.socket, { type: 'capabilities' })).toMatchObject({ model: 'served-model' });
  });

  it('rejects a malformed infer with INVALID_REQUEST and never calls the LLM', async () => {
    resetMock({});
    const service = await rtr();
    await expect(request(service.socket, { type: 'infer', temperature: 0.7, top_p: 1, stream: false })).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: 'missing required field "messages"',
    });
    await expect(request(service.socket, { type: 'infer', messages: [], stream: false })).rejects.toMatchObject({
      message: 'field "messages" must not be empty',
    });
    await expect(request(service.socket, { type: 'infer', messages: USER, temperature: 'hot' })).rejects.toMatchObject({
      message: 'field "temperature" must be a number, got a string',
    });
    await expect(request(service.socket, { type: 'infer', messages: USER, top_p: 3 })).rejects.toMatchObject({
      message: 'field "top_p" must be at most 1, got 3',
    });
    expect(llm.mock.stats.requests).toBe(0);
  });
});

describe('rtr cancellation', () => {
  it('aborts the HTTP request to the LLM when the caller disconnects mid-stream', async () => {
    resetMock({ rules: [{ reply: 'one two three four five', chunkSize: 4, hangAfterChunks: 2 }] });
    const service = await rtr();
    for await (const frame of stream(service.socket, { type: 'infer', messages: USER, temperature: 0.7, top_p: 1, stream: true })) {
      expect(frame.type).toBe('chunk');
      break;
    }
    await llm.mock.waitForAborts(1, 30_000);
    await waitFor(() => service.logs.some((l) => l.msg === 'request cancelled: client disconnected'), 'rtr to log the cancellation');
  });

  it('aborts a collected request the LLM has not answered yet', async () => {
    resetMock({ rules: [{ hang: true }] });
    const service = await rtr();
    const controller = new AbortController();
    const pending = request(service.socket, { type: 'infer', messages: USER, temperature: 0.7, top_p: 1, stream: false }, { signal: controller.signal });
    await waitFor(() => llm.mock.stats.active === 1, 'the request to reach the mock');
    controller.abort();
    await expect(pending).rejects.toMatchObject({ code: 'CANCELLED' });
    await llm.mock.waitForAborts(1, 30_000);
  });

  it('never retries after the caller has gone', async () => {
    resetMock({ rules: [{ status: 503, retryAfter: '0.3' }] });
    const service = await rtr();
    const controller = new AbortController();
    const pending = request(service.socket, { type: 'infer', messages: USER, temperature: 0.7, top_p: 1, stream: false }, { signal: controller.signal }).catch(
      (e: unknown) => e,
    );
    // Abort during the backoff: once rtr has said it will retry (waiting for the first request
    // alone raced the 503 against the disconnect on a loaded machine).
    await waitFor(() => service.logs.some((l) => l.msg === 'LLM call failed; retrying'), 'the first attempt to fail');
    controller.abort();
    await pending;
    // rtr logs this line after the handler has returned, so every attempt it would ever
    // make has been made by then: no sleep needed to wait out the 0.3 s retry-after.
    await waitFor(() => service.logs.some((l) => l.msg === 'request cancelled: client disconnected'), 'rtr to see the disconnect', 30_000);
    expect(llm.mock.stats.requests).toBe(1);
    expect(service.logs.filter((l) => l.msg === 'LLM call failed; retrying')).toHaveLength(1);
  });
});

describe('rtr without a usable configuration', () => {
  it('starts, answers ping and capabilities, and answers infer with what to configure', async () => {
    const service = await rtr({ api: { base_url: '', key: '' }, service: { model: '' } });
    expect(await request(service.socket, { type: 'ping' })).toEqual({ type: 'pong' });
    expect(await request(service.socket, { type: 'capabilities' })).toEqual({
      type: 'capabilities',
      streaming: true,
      model: '',
      backend: 'none',
      configured: false,
      base_url: '',
      problem: expect.stringMatching(/^no LLM endpoint configured: set \[api\] base_url in .*ZINO\.toml/),
    });
    await expect(request(service.socket, { type: 'infer', messages: USER, temperature: 0.7, top_p: 1, stream: true })).rejects.toMatchObject({
      code: 'NOT_CONFIGURED',
      message: expect.stringMatching(/^no LLM endpoint configured: set \[api\] base_url in \/.*\/ZINO\.toml \(OpenAI .*Ollama .*llama\.cpp .*vLLM .*"demo"/),
    });
  });

  it('asks for a key for a remote endpoint and takes it from LLM_API_KEY', async () => {
    const noKey = await rtr({ api: { base_url: 'https://api.example.com/v1', key: '' } });
    await expect(request(noKey.socket, { type: 'infer', messages: USER, temperature: 0.7, top_p: 1, stream: false })).rejects.toMatchObject({
      code: 'NOT_CONFIGURED',
      message: expect.stringMatching(
        /^no API key for https:\/\/api\.example\.com\/v1: set \[api\] key_file in \/.*ZINO\.toml \(a file only you can read\), or LLM_API_KEY in the environment of `npm start` \/ `zino up` \/ the zino-rtr unit/,
      ),
    });
    resetMock({ rules: [{ reply: 'keyed' }] });
    const fromEnv = await rtr({ api: { base_url: llm.mock.baseUrl, key: '' } }, { LLM_API_KEY: 'sk-from-env' });
    await request(fromEnv.socket, { type: 'infer', messages: USER, temperature: 0.7, top_p: 1, stream: false });
    expect(llm.mock.stats.authorizations[0]).toBe('Bearer sk-from-env');
  });
});

describe('rtr with the demo model', () => {
  it('streams a tool call for a question about the machine', async () => {
    const service = await rtr({ api: { base_url: 'demo', key: '' }, service: { model: '' } });
    expect(await request(service.socket, { type: 'capabilities' })).toMatchObject({ model: 'zino-demo', backend: 'demo', configured: true });
    const frames = await collect(service.socket, {
      type: 'infer',
      messages: [{ role: 'user', content: 'How much disk space is free?' }],
      temperature: 0.7,
      top_p: 1,
      stream: true,
    });
    const done = frames.at(-1) as { type: string; full_text: string };
    expect(frames.filter((f) => f.type === 'chunk').length).toBeGreaterThan(5);
    expect(done.type).toBe('done');
    const call = /<tool_call>\n(.*)\n<\/tool_call>/.exec(done.full_text)?.[1];
    expect(JSON.parse(call ?? 'null')).toEqual({ name: 'execute_bash', arguments: { code: expect.stringContaining('df -h') } });
  });

  it('explains how to configure a real endpoint when asked something else', async () => {
    const service = await rtr({ api: { base_url: 'demo', key: '' } });
    const reply = await request(service.socket, {
      type: 'infer',
      messages: [{ role: 'user', content: 'Tell me a joke' }],
      temperature: 0.7,
      top_p: 1,
      stream: false,
    });
    expect(reply.content).toMatch(/demo model/);
    expect(reply.content).toMatch(/OpenRouter/);
    expect(reply.content).toMatch(/Ollama/);
    expect(reply.content).toMatch(/llama\.cpp/);
    expect(reply.content).toMatch(/vLLM/);
  });
});
