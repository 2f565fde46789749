/**
 * `[limits] max_frame_bytes` reaches every hop: with the limit raised above the
 * 16 MiB default, frames larger than the default cross daemon → sys/ctx/mem/agr,
 * ctx → mem, sys → mem, agr → rtr/exc. Regression: several hops built their client
 * options by hand and dropped the limit, so a raised one was silently ignored there.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ZinoClient } from 'zino';
import { startMockLlm, type MockLlm } from '../../src/testing/mock-llm/server.js';
import { writeTestConfig } from '../../src/testing/suite.js';
import { startSuite, type RunningSuite } from '../../src/testing/up.js';
import { tempDir } from '../helpers/util.js';

const MiB = 1024 * 1024;
/** Larger than the default frame limit (16 MiB), well under the raised one. */
const BIG = 17 * MiB;

let mock: MockLlm;
let suite: RunningSuite;
let cleanup: () => void;
let zino: ZinoClient;

beforeAll(async () => {
  mock = await startMockLlm();
  let dir: string;
  ({ dir, cleanup } = tempDir('zbig'));
  // The client reads the same file: its own frame limit must be raised too.
  const { file } = writeTestConfig(dir, {
    api: { base_url: mock.baseUrl, key: 'sk-big' },
    service: { model: 'big-model' },
    exc: { sandbox: 'none', max_output_bytes: 24 * MiB },
    approval: { mode: 'allow' },
    // The search would tokenise 17 MB of query text; this test is about frames, not TF-IDF.
    ctx: { hard_memory_top_k: 0 },
    // Every part of a prompt (soft memory, context, message) may take a quarter of a frame.
    limits: { max_frame_bytes: 128 * MiB },
    daemon: { max_message_bytes: 32 * MiB },
    rtr: { max_prompt_bytes: 128 * MiB },
  });
  suite = await startSuite(file);
  zino = new ZinoClient({ configFile: file });
}, 120_000);

afterAll(async () => {
  await suite.interrupt();
  await mock.close();
  cleanup();
});

/** The length of the longest message content the mock received in request `i`. */
function longestContent(i: number): number {
  const messages = (mock.stats.bodies[i]?.messages ?? []) as { content?: unknown }[];
  return Math.max(0, ...messages.map((m) => (typeof m.content === 'string' ? m.content.length : 0)));
}

it('carries a soft memory larger than 16 MiB from mem through sys into the prompt', async () => {
  mock.reset({ rules: [{ reply: 'ok' }] });
  await zino.mem.setSoft('s'.repeat(BIG), { timeoutMs: 60_000 });
  // sys takes mem's soft memory on reload (sys → mem), and answers the whole prompt.
  expect((await zino.sys.reload({ timeoutMs: 60_000 })).length).toBeGreaterThan(BIG);
  // The daemon fetches that prompt from sys and sends it through agr and rtr to the model.
  expect((await zino.ask('short question')).content).toBe('ok');
  expect(longestContent(0)).toBeGreaterThan(BIG);
  await zino.mem.setSoft('', { timeoutMs: 60_000 });
  await zino.sys.setSoftMemory('', { timeoutMs: 60_000 });
}, 120_000);

it('stores a message larger than 16 MiB and feeds it back as history', async () => {
  mock.reset({ rules: [{ reply: 'stored' }] });
  const big = 'm'.repeat(BIG);
  // daemon → ctx (the user message), daemon → agr → rtr, daemon → mem (the store).
  expect((await zino.ask(big, { channelId: 'big' })).content).toBe('stored');
  expect(longestContent(0)).toBe(BIG);
  expect(mock.stats.bodies[0]?.messages).toContainEqual({ role: 'user', content: big });
  // ctx → mem (get_history), daemon ← ctx (the context) on the next request.
  expect((await zino.ask('and now?', { channelId: 'big' })).content).toBe('stored');
  const second = (mock.stats.bodies[1]?.messages ?? []) as { role: string; content: string }[];
  expect(second.some((m) => m.role === 'user' && m.content === big)).toBe(true);
}, 120_000);

it('carries a program output larger than 16 MiB from exc through agr to the model', async () => {
  mock.reset({
    rules: [
      { role: 'user', reply: `<tool_call>{"name":"execute_bash","arguments":{"code":"head -c ${BIG} /dev/zero | tr '\\\\0' o"}}</tool_call>` },
      { role: 'assistant', reply: ' Read it.' },
    ],
  });
  const answer = await zino.ask('print a lot');
  expect(answer.content).toContain('Read it.');
  // agr ← exc (the result), then agr → rtr with the output in the prompt.
  const followUp = (mock.stats.bodies[1]?.messages ?? []) as { content: string }[];
  expect(followUp.some((m) => m.content.includes('o'.repeat(BIG)))).toBe(true);
}, 120_000);
