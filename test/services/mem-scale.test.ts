import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { request } from '../../src/runtime/index.js';
import { memEnv, user, type MemEnv } from './mem-helpers.js';

let env: MemEnv;
beforeEach(() => {
  env = memEnv('zscale');
});
afterEach(async () => {
  await env.stopAll();
  env.cleanup();
});

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

async function timedAppends(socket: string, channel: string, n: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await request(socket, { type: 'append_history', channel_id: channel, messages: [user(`probe ${i}`)] });
    times.push(performance.now() - started);
  }
  return times;
}

describe('mem: a 100,000-message channel', () => {
  it('answers get_history with a limit from the tail only, returns everything without one, and appends as fast as to an empty channel', async () => {
    const mem = await env.start();
    const emptyChannel = await timedAppends(mem.socket, 'small', 30);
    const BATCH = 1000;
    for (let b = 0; b < 100; b++) {
      const messages = Array.from({ length: BATCH }, (_, i) => user(`m${b * BATCH + i}`));
      expect(await env.call({ type: 'append_history', channel_id: 'big', messages })).toEqual({ type: 'ok' });
    }
    const bigChannel = await timedAppends(mem.socket, 'big', 30);
    // O(1) append: no read or rewrite of the 100k-message file (generous bound: timing on a shared machine).
    expect(median(bigChannel)).toBeLessThan(median(emptyChannel) * 3 + 2);

    const tail = await env.call({ type: 'get_history', channel_id: 'big', limit: 50, request_id: 'tail-read' });
    const expected = [...Array.from({ length: 20 }, (_, i) => user(`m${99_980 + i}`)), ...Array.from({ length: 30 }, (_, i) => user(`probe ${i}`))];
    expect(tail).toEqual({ type: 'history', messages: expected });
    const read = mem.logs.find((l) => l.request_id === 'tail-read' && l.msg === 'history read');
    expect(read).toMatchObject({ limit: 50, returned: 50 });
    expect(read?.bytesRead as number).toBeLessThanOrEqual(64 * 1024);

    const all = await env.call({ type: 'get_history', channel_id: 'big', request_id: 'full-read' });
    const messages = all.messages as { content: string }[];
    expect(messages).toHaveLength(100_030);
    expect(messages[0]).toEqual(user('m0'));
    expect(messages[54_321]).toEqual(user('m54321'));
    expect(messages[99_999]).toEqual(user('m99999'));
    expect(messages[100_029]).toEqual(user('probe 29'));
    const full = mem.logs.find((l) => l.request_id === 'full-read' && l.msg === 'history read');
    expect(full?.bytesRead as number).toBeGreaterThan(1_000_000);
  });
});
