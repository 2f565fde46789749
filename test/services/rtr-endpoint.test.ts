/**
 * rtr and the LLM as it really is (issue 15, points 2–5): where the key comes from
 * (`[api] key_file`, 0600 checked), the endpoint checked at start and on request
 * (`capabilities` with `probe`), a detected model re-detected when the server's
 * models change, the real problem said first, and `[rtr] timeout` bounding the
 * whole request, retries included.
 */
import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { request } from '../../src/runtime/index.js';
import { startService, writeTestConfig, type ConfigOverrides, type StartedService } from '../../src/testing/suite.js';
import { collectFrames } from '../helpers/frames.js';
import { useMockLlm } from '../helpers/mock.js';
import { closedPort, tempDir, waitFor } from '../helpers/util.js';

const llm = useMockLlm();
const started: { service: StartedService; cleanup: () => void }[] = [];

afterEach(async () => {
  for (const { service, cleanup } of started.splice(0)) {
    expect(await service.stop()).toEqual({ code: 0, signal: null });
    cleanup();
  }
});

/** rtr on a config pointed at the mock; `prepare` may write files into the directory first. */
async function rtr(overrides: ConfigOverrides = {}, env: NodeJS.ProcessEnv = {}, prepare?: (dir: string) => void): Promise<StartedService & { dir: string }> {
  const { dir, cleanup } = tempDir('zrte');
  prepare?.(dir);
  const { file } = writeTestConfig(dir, { api: { base_url: llm.mock.baseUrl, key: 'sk-test' }, service: { model: 'mock-model' }, ...overrides });
  const service = await startService('rtr', file, { env: { LLM_API_KEY: '', ...env } });
  started.push({ service, cleanup });
  return Object.assign(service, { dir });
}

const USER = [{ role: 'user', content: 'hello' }];
const infer = (socket: string, stream = false) => request(socket, { type: 'infer', messages: USER, temperature: 0.7, top_p: 1, stream });

describe('[api] key_file (point 2)', () => {
  const withKeyFile =
    (mode: number, key = 'sk-from-file\n') =>
    (dir: string) => {
      const file = path.join(dir, 'llm.key');
      writeFileSync(file, key);
      chmodSync(file, mode);
    };

  it('is read by rtr and wins over LLM_API_KEY', async () => {
    llm.script({ rules: [{ reply: 'keyed' }] });
    const service = await rtr({ api: { base_url: llm.mock.baseUrl, key: '', key_file: 'llm.key' } }, { LLM_API_KEY: 'sk-env' }, withKeyFile(0o600));
    expect(await infer(service.socket)).toMatchObject({ content: 'keyed' });
    expect(llm.mock.stats.authorizations[0]).toBe('Bearer sk-from-file');
    expect(await request(service.socket, { type: 'capabilities' })).toMatchObject({ key_source: `[api] key_file ${path.join(service.dir, 'llm.key')}` });
  });

  it('is refused, with what to do, when others may read it', async () => {
    llm.script({ rules: [{ reply: 'never' }] });
    const service = await rtr({ api: { base_url: llm.mock.baseUrl, key: '', key_file: 'llm.key' } }, {}, withKeyFile(0o644));
    const file = path.join(service.dir, 'llm.key');
    await expect(infer(service.socket)).rejects.toMatchObject({
      code: 'NOT_CONFIGURED',
      message: `[api] key_file ${file} may be read by others (mode 0644); make it private: chmod 600 ${file}`,
    });
    expect(llm.mock.stats.requests).toBe(0);
    // Fixed and reloaded (SIGHUP), it is used.
    chmodSync(file, 0o600);
    service.child.kill('SIGHUP');
    await waitFor(() => service.logs.some((l) => l.msg === 'reloaded on SIGHUP'), 'rtr to reload');
    await expect(infer(service.socket)).resolves.toMatchObject({ type: 'response' });
  });

  it('names where the key came from in the hint of a 401', async () => {
    llm.script({ apiKey: 'sk-right', rules: [{ reply: 'x' }] });
    const service = await rtr({ api: { base_url: llm.mock.baseUrl, key: '' } }, { LLM_API_KEY: 'sk-wrong' });
    await expect(infer(service.socket)).rejects.toMatchObject({
      message: expect.stringContaining("(rtr sent the key from LLM_API_KEY in rtr's environment. rtr reads the key itself"),
    });
  });
});

describe('the endpoint checked (point 3)', () => {
  it('reports base_url, reachability, the models served and the model in use on probe', async () => {
    llm.script({ models: ['served-a'] });
    const service = await rtr({ service: { model: '' } });
    expect(await request(service.socket, { type: 'capabilities', probe: true })).toMatchObject({
      base_url: llm.mock.baseUrl,
      model: 'served-a',
      llm: { reachable: true, models: ['served-a'] },
    });
  });

  it('logs "ready" at start only when the endpoint answers; a wrong port is a warning naming the cause', async () => {
    const good = await rtr();
    await waitFor(() => good.logs.some((l) => l.msg === 'LLM backend ready: the endpoint answers'), 'the start-up check');
    const port = await closedPort();
    const bad = await rtr({ api: { base_url: `http://127.0.0.1:${port}/v1`, key: 'k' } });
    const warning = await waitFor(() => bad.logs.find((l) => l.msg === 'LLM endpoint check failed: requests will fail until it is fixed'), 'the warning');
    expect(warning).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', reason: `cannot reach the LLM API at http://127.0.0.1:${port}/v1: ECONNREFUSED` });
    expect(bad.logs.some((l) => typeof l.msg === 'string' && l.msg.startsWith('LLM backend ready'))).toBe(false);
    expect(await request(bad.socket, { type: 'capabilities', probe: true })).toMatchObject({ llm: { reachable: false, code: 'UPSTREAM_UNAVAILABLE' } });
  });

  it('reports an endpoint that answers but refuses the key as reachable, with the 401 and where the key came from', async () => {
    llm.script({ apiKey: 'sk-right' });
    const service = await rtr({ api: { base_url: llm.mock.baseUrl, key: '' } }, { LLM_API_KEY: 'sk-wrong' });
    expect(await request(service.socket, { type: 'capabilities', probe: true })).toMatchObject({
      key_source: "LLM_API_KEY in rtr's environment",
      llm: {
        reachable: true,
        code: 'UPSTREAM_ERROR',
        error: expect.stringMatching(/^the LLM API answered 401: Incorrect API key provided\. \(rtr sent the key from LLM_API_KEY/),
      },
    });
  });

  it('detects the model again when the server changes its models (no stale cached model)', async () => {
    llm.script({ models: ['first'], strictModels: true, rules: [{ reply: 'from whichever' }] });
    const service = await rtr({ service: { model: '' } });
    await infer(service.socket);
    expect(llm.mock.stats.bodies.map((b) => b.model)).toEqual(['first']);
    // The server now serves another model: the next request finds out and uses it.
    llm.script({ models: ['second'], strictModels: true, rules: [{ reply: 'from second' }] });
    expect(await infer(service.socket)).toMatchObject({ content: 'from second' });
    expect(llm.mock.stats.bodies.map((b) => b.model)).toEqual(['first', 'second']);
    // And a check sees a change before any request does.
    llm.script({ models: ['third'], strictModels: true });
    expect(await request(service.socket, { type: 'capabilities', probe: true })).toMatchObject({ model: 'third', llm: { models: ['third'] } });
    expect(await request(service.socket, { type: 'capabilities' })).toMatchObject({ model: 'third' });
  });
});

describe('the real problem first (point 4)', () => {
  it('says connection refused at the URL, not "set a model", when nothing listens and no model is set', async () => {
    const port = await closedPort();
    const service = await rtr({ api: { base_url: `http://127.0.0.1:${port}/v1`, key: 'k' }, service: { model: '' }, rtr: { max_retries: 1 } });
    await expect(infer(service.socket)).rejects.toMatchObject({
      code: 'UPSTREAM_UNAVAILABLE',
      message: `cannot reach the LLM API at http://127.0.0.1:${port}/v1: ECONNREFUSED (after 2 attempts)`,
    });
  });

  it('asks for a model, in the file to edit, only when the endpoint answers and leaves the choice open', async () => {
    llm.script({ models: ['a', 'b'] });
    const service = await rtr({ service: { model: '' } });
    await expect(infer(service.socket)).rejects.toMatchObject({
      code: 'NOT_CONFIGURED',
      message: `no model configured: set [service] model in ${path.join(service.dir, 'ZINO.toml')} (it serves: a, b)`,
    });
    llm.script({ modelsStatus: 404 });
    await expect(infer(service.socket)).rejects.toMatchObject({
      code: 'NOT_CONFIGURED',
      message: `no model configured, and ${llm.mock.baseUrl} does not list its models (404): set [service] model in ${path.join(service.dir, 'ZINO.toml')}`,
    });
  });
});

describe('[rtr] max_prompt_bytes (point 10)', () => {
  it('refuses a prompt over the bound before sending anything, naming the bound', async () => {
    llm.script({ rules: [{ reply: 'never' }] });
    const service = await rtr({ rtr: { max_prompt_bytes: 4096 } });
    const messages = [
      { role: 'system', content: 's'.repeat(3000) },
      { role: 'user', content: 'ü'.repeat(600) },
    ];
    await expect(request(service.socket, { type: 'infer', messages, stream: true })).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: 'the prompt is 4200 bytes, over the bound of 4096 bytes ([rtr] max_prompt_bytes); it was not sent to the LLM',
    });
    expect(llm.mock.stats.requests).toBe(0);
    await expect(request(service.socket, { type: 'infer', messages: messages.slice(0, 1), stream: false })).resolves.toMatchObject({ content: 'never' });
  });
});

describe('[rtr] timeout bounds the whole request (point 5)', () => {
  it('ends a request whose retry then hangs with one TIMEOUT, counting the attempts', async () => {
    llm.script({ rules: [{ status: 503, retryAfter: '0', times: 1 }, { hang: true }] });
    const service = await rtr({ rtr: { timeout: 1, max_retries: 5 } });
    const frames = await collectFrames(service.socket, { type: 'infer', messages: USER, temperature: 0.7, top_p: 1, stream: true });
    expect(frames).toEqual([
      { type: 'error', code: 'TIMEOUT', message: 'the LLM did not answer within 1 s ([rtr] timeout, the bound on the whole request) (2 attempts)' },
    ]);
    expect(llm.mock.stats.requests).toBe(2);
    await llm.mock.waitForAborts(1, 30_000);
  });

  it('does not wait out a retry-after longer than the time left', async () => {
    llm.script({ rules: [{ status: 503, retryAfter: '30' }] });
    const service = await rtr({ rtr: { timeout: 2, max_retries: 5 } });
    await expect(infer(service.socket)).rejects.toMatchObject({
      code: 'UPSTREAM_ERROR',
      message: 'the LLM API answered 503: mock error 503; no time left within [rtr] timeout (2 s) to try again',
    });
    expect(llm.mock.stats.requests).toBe(1);
  });
});
