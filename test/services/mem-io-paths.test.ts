/**
 * mem writes and reads small records with synchronous system calls on its event loop
 * and larger ones through libuv's thread pool (files.ts, `SYNC_IO_BYTES` = 64 KiB);
 * fdatasyncs always go through the pool. These tests mix both paths on one channel
 * and check what a client can see: nothing acknowledged is lost to a SIGKILL, order is
 * kept, and records on either side of the bound are read back whole.
 */
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { appendUntilKilled, expectAcknowledgedHistory, expectWholeLines, memEnv, user, type MemEnv } from './mem-helpers.js';

let env: MemEnv;
beforeEach(() => {
  env = memEnv('zmemio');
});
afterEach(async () => {
  await env.stopAll();
  env.cleanup();
});

/** Every third request of a client carries a reply over the 64 KiB bound (written through the pool). */
const reply = (key: string, s: number): string => `re ${key} ${s % 3 === 2 ? 'L'.repeat(80 * 1024) : 'short'}`;

interface History {
  messages: { role: string; content: string }[];
}

describe('mem: small writes on the event loop, large ones through the thread pool', () => {
  it('loses no acknowledged append of either size when SIGKILLed mid-way, and keeps per-client and acknowledged order', async () => {
    const mem = await env.start();
    const CLIENTS = 12;
    const run = await appendUntilKilled(mem, 'mixed', CLIENTS, 12, reply);

    await env.start();
    const { messages } = (await env.call({ type: 'get_history', channel_id: 'mixed' })) as unknown as History;
    expectAcknowledgedHistory(messages, run, CLIENTS, reply);
    // Both sizes were acknowledged before the kill.
    expect([...run.acked.keys()].some((k) => Number(k.split('s')[1]) % 3 === 2)).toBe(true);
    expect([...run.acked.keys()].some((k) => Number(k.split('s')[1]) % 3 !== 2)).toBe(true);
    expectWholeLines(path.join(env.dataDir, 'history', 'mixed.jsonl'));
  });

  it('serves every tail of a history whose records straddle the 16 KiB tail block and the 64 KiB blocks, before and after a restart', async () => {
    await env.start();
    // Record sizes around the bounds: each record is one append of one message.
    const sizes = [5, 16 * 1024, 20, 70 * 1024, 16 * 1024 - 60, 1, 64 * 1024, 300 * 1024, 9, 48 * 1024, 33];
    const stored = sizes.map((n, i) => user(`${i}:${'h'.repeat(n)}`));
    for (const m of stored) expect(await env.call({ type: 'append_history', channel_id: 'long', messages: [m] })).toEqual({ type: 'ok' });
    const check = async (): Promise<void> => {
      for (let limit = 1; limit <= stored.length; limit++) {
        const got = (await env.call({ type: 'get_history', channel_id: 'long', limit })) as unknown as History;
        expect(got.messages).toEqual(stored.slice(-limit));
      }
      expect(((await env.call({ type: 'get_history', channel_id: 'long' })) as unknown as History).messages).toEqual(stored);
    };
    await check();
    await env.stopAll();
    await env.start();
    await check();
  });

  it('returns search hits whose total is over the 64 KiB read on the event loop in full', async () => {
    await env.start();
    const bodies = Array.from({ length: 6 }, (_, i) => `zebra notes ${i} ${`w${i} `.repeat(10_000)}`);
    // Entries without the query's word, so that it has a weight (TF-IDF).
    for (const other of ['apples and pears', 'a train timetable', 'the weather today', 'garden tools']) {
      expect((await env.call({ type: 'store_hard', messages: [user(other)] })).type).toBe('ok');
    }
    const ids: number[] = [];
    for (const body of bodies) {
      const reply = await env.call({ type: 'store_hard', messages: [user(body)] });
      expect(reply.type).toBe('ok');
      ids.push(reply.id as number);
    }
    const found = (await env.call({ type: 'search_hard', query: 'zebra', top_k: 6 })) as unknown as { results: { id: number; messages: unknown[] }[] };
    expect(found.results).toHaveLength(6);
    expect(found.results.reduce((n, r) => n + JSON.stringify(r.messages).length, 0)).toBeGreaterThan(128 * 1024);
    for (const r of found.results) expect(r.messages).toEqual([user(bodies[ids.indexOf(r.id)] as string)]);
  });
});
