/**
 * mem's opt-in `get_context` (issue 18): `search_hard`'s and `get_history`'s replies
 * in one frame. A real `zino serve mem`: each part equals what its own message
 * answers on the same data; each part fails on its own; while the index is being built
 * the history is answered at once and the search is `pending`; under a small frame
 * limit the two parts together still fit in one frame.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Frame } from '../../src/runtime/index.js';
import { requestOrError } from '../helpers/frames.js';
import { memLimits } from '../../src/services/mem/handlers.js';
import { startService, writeTestConfig, type StartedService } from '../../src/testing/suite.js';
import { tempDir } from '../helpers/util.js';
import { assistant, memEnv, user, type MemEnv } from './mem-helpers.js';

let env: MemEnv | undefined;
const others: { stop: () => Promise<unknown>; cleanup: () => void }[] = [];
afterEach(async () => {
  await env?.stopAll();
  env?.cleanup();
  env = undefined;
  for (const o of others.splice(0)) {
    await o.stop();
    o.cleanup();
  }
});

/** A reply without its `type`: what a part of `context_parts` holds. */
function part(reply: Frame): Frame {
  const { type, ...rest } = reply;
  // An error frame is carried whole, under `error`.
  return type === 'error' ? { error: reply } : rest;
}

describe('mem: get_context', () => {
  it('answers each part as search_hard and get_history answer it, in one frame, and only the parts asked for', async () => {
    env = memEnv('zmemctx');
    await env.start();
    const call = (frame: Frame): Promise<Frame> => (env as MemEnv).call(frame);
    for (const [i, words] of ['restart nginx now', 'nginx config reload', 'postgres backup', 'cooking pasta', 'nginx logs rotate'].entries()) {
      expect(await call({ type: 'store_hard', messages: [user(words), assistant(`answer ${i}`)], tag: i % 2 ? 'ops' : null })).toMatchObject({ type: 'ok' });
    }
    await call({ type: 'append_history', channel_id: 'c', messages: [user('h1'), assistant('h2')] });
    await call({ type: 'append_history', channel_id: 'c', messages: [user('h3'), assistant('h4'), user('h5')] });

    const asks: { query?: string; top_k?: number | null; channel_id?: string; limit?: number }[] = [
      { query: 'nginx', top_k: 2, channel_id: 'c', limit: 3 },
      { query: 'restart nginx', channel_id: 'c' },
      { query: 'nginx', top_k: null, channel_id: 'c', limit: 0 },
      { query: 'zebra', top_k: 5, channel_id: 'never-written', limit: 10 },
      { query: '', top_k: 3, channel_id: 'c', limit: 1 },
    ];
    for (const ask of asks) {
      const { query, top_k, channel_id, limit } = ask;
      const search = await call({ type: 'search_hard', query, ...(top_k === undefined ? {} : { top_k }) });
      const history = await call({ type: 'get_history', channel_id, ...(limit === undefined ? {} : { limit }) });
      expect(search.type).toBe('hard_memories');
      expect(history.type).toBe('history');
      expect(await call({ type: 'get_context', ...ask, request_id: 'r-1' })).toEqual({ type: 'context_parts', hard: part(search), history: part(history) });
    }
    // One part only: no query (or top_k 0) means no search; no channel (or null) no history.
    const history = part(await call({ type: 'get_history', channel_id: 'c', limit: 2 }));
    expect(await call({ type: 'get_context', channel_id: 'c', limit: 2 })).toEqual({ type: 'context_parts', history });
    expect(await call({ type: 'get_context', query: 'nginx', top_k: 0, channel_id: 'c', limit: 2 })).toEqual({ type: 'context_parts', history });
    const hard = part(await call({ type: 'search_hard', query: 'nginx' }));
    expect(await call({ type: 'get_context', query: 'nginx', channel_id: null })).toEqual({ type: 'context_parts', hard });
    expect(await call({ type: 'get_context' })).toEqual({ type: 'context_parts' });
  });

  it('answers a part that fails with the error its own message answers, and the other part beside it', async () => {
    env = memEnv('zmemctxerr');
    await env.start();
    const call = (frame: Frame): Promise<Frame> => (env as MemEnv).call(frame);
    await call({ type: 'store_hard', messages: [user('restart nginx now')] });
    await call({ type: 'append_history', channel_id: 'c', messages: [user('h1')] });
    const longId = 'x'.repeat(300);
    const badHistory = await call({ type: 'get_history', channel_id: longId, limit: 5 });
    expect(badHistory).toMatchObject({ type: 'error', code: 'INVALID_REQUEST' });
    const goodSearch = await call({ type: 'search_hard', query: 'nginx', top_k: 2 });
    expect(await call({ type: 'get_context', query: 'nginx', top_k: 2, channel_id: longId, limit: 5 })).toEqual({
      type: 'context_parts',
      hard: part(goodSearch),
      history: part(badHistory),
    });
    for (const bad of [{ top_k: -1 }, { top_k: 1.5 }, { query: 7 }]) {
      const badSearch = await call({ type: 'search_hard', query: 'nginx', ...bad });
      expect(badSearch).toMatchObject({ type: 'error', code: 'INVALID_REQUEST' });
      const goodHistory = await call({ type: 'get_history', channel_id: 'c', limit: 5 });
      expect(await call({ type: 'get_context', query: 'nginx', ...bad, channel_id: 'c', limit: 5 })).toEqual({
        type: 'context_parts',
        hard: part(badSearch),
        history: part(goodHistory),
      });
    }
    const badLimit = await call({ type: 'get_history', channel_id: 'c', limit: -2 });
    expect(badLimit).toMatchObject({ type: 'error', code: 'INVALID_REQUEST' });
    expect(await call({ type: 'get_context', query: 'nginx', channel_id: 'c', limit: -2 })).toEqual({
      type: 'context_parts',
      hard: part(await call({ type: 'search_hard', query: 'nginx' })),
      history: part(badLimit),
    });
  });

  it('answers the history at once while the index is being built, with the search pending; search_hard then finds it', async () => {
    env = memEnv('zmemctxidx');
    // A large store (as in mem-startup.test.ts): its index takes a while to build.
    mkdirSync(env.dataDir, { recursive: true });
    const lines: string[] = [];
    for (let id = 0; id < 100_000; id++) {
      const content = id === 4242 ? 'zanzibar' : `w${id % 997} v${id % 631} u${id % 401} t${id % 211} s${id}`;
      lines.push(`${JSON.stringify({ id, messages: [user(content)], tag: null })}\n`);
    }
    writeFileSync(path.join(env.dataDir, 'hard_memories.jsonl'), lines.join(''));
    mkdirSync(path.join(env.dataDir, 'history'), { recursive: true });
    writeFileSync(path.join(env.dataDir, 'history', 'ops.jsonl'), `${JSON.stringify({ m: [user('disk?'), assistant('42% used')] })}\n`);
    await env.start();
    const status = async (): Promise<string> => ((await env?.call({ type: 'status' }))?.hard_index as { state: string }).state;
    expect(await status()).toBe('building');
    const reply = await env.call({ type: 'get_context', query: 'zanzibar', top_k: 3, channel_id: 'ops', limit: 10 });
    // Answered while the index was still being built: the history is in, the search left to search_hard.
    expect(await status()).toBe('building');
    expect(reply).toEqual({ type: 'context_parts', hard: { pending: true }, history: { messages: [user('disk?'), assistant('42% used')] } });
    const found = await env.call({ type: 'search_hard', query: 'zanzibar', top_k: 3 });
    expect((found.results as { id: number }[]).map((r) => r.id)).toEqual([4242]);
    // Once ready, get_context answers the search itself.
    expect(await status()).toBe('ready');
    expect(await env.call({ type: 'get_context', query: 'zanzibar', top_k: 3, channel_id: 'ops', limit: 10 })).toEqual({
      type: 'context_parts',
      hard: part(found),
      history: { messages: [user('disk?'), assistant('42% used')] },
    });
  });

  it('fits both parts in one frame: the search results as search_hard cuts them, then the newest history messages that still fit', async () => {
    const FRAME = 64 * 1024;
    const { replyBytes, recordBytes } = memLimits(FRAME);
    const temp = tempDir('zmemctxframe');
    const { file } = writeTestConfig(temp.dir, { limits: { max_frame_bytes: FRAME } });
    const mem: StartedService = await startService('mem', file);
    others.push({ stop: () => mem.stop(), cleanup: temp.cleanup });
    const call = (frame: Frame): Promise<Frame> => requestOrError(mem.socket, frame, { timeoutMs: 30_000 });
    // Two memories of ~20 KB that match, and 40 history messages of 2 KB (80 KB: more than a frame by itself).
    for (const c of ['a', 'b']) await call({ type: 'store_hard', messages: [user(`nginx ${c.repeat(20_000)}`)] });
    for (let i = 0; i < 20; i++) {
      await call({ type: 'append_history', channel_id: 'big', messages: [user(`${i}u${'h'.repeat(2000)}`), assistant(`${i}a${'k'.repeat(2000)}`)] });
    }
    expect(20_000).toBeLessThan(recordBytes);
    const search = await call({ type: 'search_hard', query: 'nginx', top_k: 3 });
    const history = await call({ type: 'get_history', channel_id: 'big', limit: 0 });
    expect(search.results).toHaveLength(2);
    expect(history).toMatchObject({ truncated: true });

    const reply = await call({ type: 'get_context', query: 'nginx', top_k: 3, channel_id: 'big', limit: 0 });
    expect(reply.type).toBe('context_parts');
    expect(Buffer.byteLength(JSON.stringify(reply))).toBeLessThanOrEqual(FRAME);
    expect(reply.hard).toEqual(part(search));
    const got = reply.history as { messages: { content: string }[]; truncated?: boolean; omitted?: number };
    const all = history.messages as { content: string }[];
    // Fewer than get_history alone gives (the results took their room), the newest ones, and the rest counted.
    expect(got.messages.length).toBeGreaterThan(0);
    expect(got.messages.length).toBeLessThan(all.length);
    expect(got.messages).toEqual(all.slice(all.length - got.messages.length));
    expect(got).toMatchObject({ truncated: true, omitted: 40 - got.messages.length });
    const bytes = (list: unknown[]): number => list.reduce<number>((n, x) => n + Buffer.byteLength(JSON.stringify(x)) + 1, 0);
    expect(bytes(search.results as unknown[]) + bytes(got.messages)).toBeLessThanOrEqual(replyBytes);
    // One more message would not have fitted.
    const next = all[all.length - got.messages.length - 1];
    expect(bytes(search.results as unknown[]) + bytes(got.messages) + bytes([next])).toBeGreaterThan(replyBytes);
    // With a limit that fits in the room left, nothing is cut.
    expect(await call({ type: 'get_context', query: 'nginx', top_k: 3, channel_id: 'big', limit: 2 })).toEqual({
      type: 'context_parts',
      hard: part(search),
      history: part(await call({ type: 'get_history', channel_id: 'big', limit: 2 })),
    });
  });
});
