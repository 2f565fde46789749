import { writeFileSync } from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI_PATH, startProcess, type RunningProcess } from '../../src/testing/process.js';
import { startMockLlm } from '../../src/testing/mock-llm/server.js';
import { tempDir, waitFor } from '../helpers/util.js';

let proc: RunningProcess | undefined;
afterEach(async () => {
  await proc?.stop();
  proc = undefined;
});

describe('zino mock-llm', () => {
  it('serves a scripted reply to the openai SDK, streamed and not', async () => {
    const { dir, cleanup } = tempDir('zmock');
    try {
      const script = path.join(dir, 'script.json');
      writeFileSync(script, JSON.stringify({ model: 'scripted', rules: [{ match: 'weather', reply: 'Sunny and mild.', chunkSize: 3 }] }));
      proc = startProcess(CLI_PATH, ['mock-llm', '--port', '0', '--script', script]);
      const line = await waitFor(() => /base_url = "(.*)"/.exec(proc!.stdout())?.[1] ?? '', 'the listening line');
      const client = new OpenAI({ baseURL: line, apiKey: 'k' });
      expect((await client.models.list()).data.map((m) => m.id)).toEqual(['scripted']);
      const collected = await client.chat.completions.create({ model: 'scripted', messages: [{ role: 'user', content: 'what is the weather?' }] });
      expect(collected.choices[0]?.message.content).toBe('Sunny and mild.');
      const deltas: string[] = [];
      let usage: unknown;
      const stream = await client.chat.completions.create({
        model: 'scripted',
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'weather?' }],
      });
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta?.content) deltas.push(chunk.choices[0].delta.content);
        if (chunk.usage) usage = chunk.usage;
      }
      expect(deltas).toEqual(['Sun', 'ny ', 'and', ' mi', 'ld.']);
      expect(usage).toMatchObject({ completion_tokens: 4 });
      const fallback = await client.chat.completions.create({ model: 'scripted', messages: [{ role: 'user', content: 'anything else' }] });
      expect(fallback.choices[0]?.message.content).toBe('mock reply');
      const stats = (await (await fetch(line.replace('/v1', '/_mock/stats'))).json()) as { requests: number };
      expect(stats.requests).toBe(3);
    } finally {
      cleanup();
    }
  });

  it('refuses an unreadable script with a clear message', async () => {
    proc = startProcess(CLI_PATH, ['mock-llm', '--script', '/nonexistent.json']);
    expect(await proc.exited).toEqual({ code: 2, signal: null });
    expect(proc.logs.map((l) => l.raw).join('\n')).toMatch(/zino mock-llm: cannot use \/nonexistent\.json: ENOENT/);
  });
});

describe('startMockLlm', () => {
  it('answers scripted HTTP errors for the first N calls, then succeeds', async () => {
    const mock = await startMockLlm({ rules: [{ status: 429, failTimes: 1, retryAfter: '0', reply: 'ok' }] });
    try {
      const client = new OpenAI({ baseURL: mock.baseUrl, apiKey: 'k', maxRetries: 0 });
      await expect(client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status: 429 });
      const ok = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
      expect(ok.choices[0]?.message.content).toBe('ok');
      expect(mock.stats.requests).toBe(2);
      expect(mock.stats.bodies[1]).toMatchObject({ model: 'm' });
    } finally {
      await mock.close();
    }
  });

  it('counts a stream the client abandons', async () => {
    const mock = await startMockLlm({ rules: [{ reply: 'a b c d e f', chunkSize: 2, hangAfterChunks: 1 }] });
    try {
      const client = new OpenAI({ baseURL: mock.baseUrl, apiKey: 'k' });
      const controller = new AbortController();
      const stream = await client.chat.completions.create(
        { model: 'm', stream: true, messages: [{ role: 'user', content: 'x' }] },
        { signal: controller.signal },
      );
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta?.content) break;
      }
      await mock.waitForAborts(1, 30_000);
      expect(mock.stats.aborted).toBe(1);
    } finally {
      await mock.close();
    }
  });

  it('answers 400 to a body that is not JSON', async () => {
    const mock = await startMockLlm();
    try {
      const res = await fetch(`${mock.baseUrl}/chat/completions`, { method: 'POST', body: '{nope' });
      expect(res.status).toBe(400);
    } finally {
      await mock.close();
    }
  });
});
