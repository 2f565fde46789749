/**
 * Slow consumers: a client stops reading while the model streams. Backpressure
 * reaches all the way to the LLM (the mock stops writing long before the end of the
 * reply), every service's memory stays bounded, and other clients are served
 * normally meanwhile.
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { SERVICE_NAMES, encodeFrame, request } from '../../src/runtime/index.js';
import { waitFor } from '../helpers/util.js';
import { record, rssMiB, useFaultSuite } from './harness.js';

/** 64 MB of reply: more than every kernel and stream buffer on the way can hold (loopback TCP alone may take ~10 MB). */
const CHUNK = 'x'.repeat(1024);
const CHUNKS = 64 * 1024;
const RSS_GROWTH_BOUND_MIB = 120;

const fs = useFaultSuite('zslow');

describe('a client that stops reading', () => {
  it('stalls the model stream, keeps every service bounded, and others are still served', async () => {
    fs.script({ rules: [{ match: 'flood', repeatChunk: CHUNK, repeatCount: CHUNKS }, { reply: 'normal answer' }] });
    const before = Object.fromEntries(SERVICE_NAMES.map((s) => [s, rssMiB(fs.pid(s))]));
    const slow = net.createConnection({ path: fs.socket('daemon') });
    await new Promise<void>((r) => slow.once('connect', () => r()));
    slow.pause();
    slow.write(encodeFrame({ message: 'flood me', stream: true }));
    // Wait until the mock's output stops growing: backpressure has reached the LLM.
    let last = -1;
    await waitFor(
      async () => {
        const now = fs.mock.stats.bytesStreamed;
        const stable = now > 0 && now === last;
        last = now;
        await new Promise((r) => setTimeout(r, 300));
        return stable;
      },
      'the mock to stall',
      30_000,
    );
    const streamed = fs.mock.stats.bytesStreamed;
    const total = CHUNKS * (CHUNK.length + 150);
    expect(streamed).toBeLessThan(total / 3);

    // Meanwhile other clients are answered normally.
    const others = await Promise.all(
      Array.from({ length: 5 }, (_, i) => request(fs.socket('daemon'), { message: `other ${i}`, channel_id: `other-${i}` }, { timeoutMs: 30_000 })),
    );
    for (const reply of others) expect(reply).toMatchObject({ type: 'response', content: 'normal answer' });

    const after = Object.fromEntries(SERVICE_NAMES.map((s) => [s, rssMiB(fs.pid(s))]));
    record('slow.mock_streamed_mb', Math.round(streamed / 1e4) / 100, 'MB');
    record('slow.reply_mb', Math.round(total / 1e4) / 100, 'MB');
    for (const s of SERVICE_NAMES) {
      record(`slow.${s}.rss_before`, before[s] ?? 0, 'MiB');
      record(`slow.${s}.rss_during`, after[s] ?? 0, 'MiB');
      expect((after[s] ?? 0) - (before[s] ?? 0), s).toBeLessThan(RSS_GROWTH_BOUND_MIB);
    }
    slow.destroy();
    await fs.mock.waitForAborts(1, 30_000);
  });
});
