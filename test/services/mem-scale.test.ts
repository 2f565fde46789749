import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { request } from '../../src/runtime/index.js';
import type { StartedService } from '../../src/testing/suite.js';
import { waitFor } from '../helpers/util.js';
import { memEnv, user, type MemEnv } from './mem-helpers.js';

let env: MemEnv;
beforeEach(() => {
  env = memEnv('zscale');
});
afterEach(async () => {
  await env.stopAll();
  env.cleanup();
});

/** Bytes `pid` has read and written through syscalls so far (/proc/PID/io: files and sockets alike). */
function io(pid: number): { read: number; written: number } {
  const text = readFileSync(`/proc/${pid}/io`, 'utf8');
  const field = (name: string): number => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(text)?.[1]);
  return { read: field('rchar'), written: field('wchar') };
}

/** Appends `n` probes one by one; returns what mem read and wrote meanwhile, and the median time (recorded, not asserted). */
async function probeAppends(mem: StartedService, channel: string, n: number): Promise<{ read: number; written: number; medianMs: number }> {
  const pid = mem.child.pid as number;
  const before = io(pid);
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await request(mem.socket, { type: 'append_history', channel_id: channel, messages: [user(`probe ${i}`)] });
    times.push(performance.now() - started);
  }
  const after = io(pid);
  return { read: after.read - before.read, written: after.written - before.written, medianMs: [...times].sort((a, b) => a - b)[Math.floor(n / 2)] as number };
}

describe('mem: a 100,000-message channel', () => {
  it('answers get_history with a limit from the tail only, returns everything without one, and appends without reading or rewriting the file', async () => {
    const mem = await env.start();
    const emptyChannel = await probeAppends(mem, 'small', 30);
    const BATCH = 1000;
    for (let b = 0; b < 100; b++) {
      const messages = Array.from({ length: BATCH }, (_, i) => user(`m${b * BATCH + i}`));
      expect(await env.call({ type: 'append_history', channel_id: 'big', messages })).toEqual({ type: 'ok' });
    }
    const bigChannel = await probeAppends(mem, 'big', 30);
    // O(1) append: no read or rewrite of the 100k-message file (over 1 MB, see the full read
    // below). Asserted on the bytes mem moved, which the machine's load cannot change; the
    // times are only printed.
    expect(bigChannel.read).toBeLessThan(emptyChannel.read + 64 * 1024);
    expect(bigChannel.written).toBeLessThan(emptyChannel.written + 64 * 1024);
    console.log(`mem-scale: median append ${emptyChannel.medianMs.toFixed(2)} ms (empty channel), ${bigChannel.medianMs.toFixed(2)} ms (100k messages)`);

    const tail = await env.call({ type: 'get_history', channel_id: 'big', limit: 50, request_id: 'tail-read' });
    const expected = [...Array.from({ length: 20 }, (_, i) => user(`m${99_980 + i}`)), ...Array.from({ length: 30 }, (_, i) => user(`probe ${i}`))];
    expect(tail).toEqual({ type: 'history', messages: expected });
    const read = await waitFor(() => mem.logs.find((l) => l.request_id === 'tail-read' && l.msg === 'history read'), 'the tail read log line');
    expect(read).toMatchObject({ limit: 50, returned: 50 });
    expect(read?.bytesRead as number).toBeLessThanOrEqual(64 * 1024);

    const all = await env.call({ type: 'get_history', channel_id: 'big', request_id: 'full-read' });
    const messages = all.messages as { content: string }[];
    expect(messages).toHaveLength(100_030);
    expect(messages[0]).toEqual(user('m0'));
    expect(messages[54_321]).toEqual(user('m54321'));
    expect(messages[99_999]).toEqual(user('m99999'));
    expect(messages[100_029]).toEqual(user('probe 29'));
    const full = await waitFor(() => mem.logs.find((l) => l.request_id === 'full-read' && l.msg === 'history read'), 'the full read log line');
    expect(full?.bytesRead as number).toBeGreaterThan(1_000_000);
  });
});
