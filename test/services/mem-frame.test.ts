/**
 * mem under a small frame limit (`[limits] max_frame_bytes` = 64 KiB): no reply is
 * ever larger than a frame (history and search results are cut to what fits, and
 * say so), and what one request may store is bounded so the newest item always fits.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Frame } from '../../src/runtime/index.js';
import { requestOrError } from '../helpers/frames.js';
import { memLimits } from '../../src/services/mem/handlers.js';
import { startService, writeTestConfig, type StartedService } from '../../src/testing/suite.js';
import { tempDir } from '../helpers/util.js';

const FRAME = 64 * 1024;
const limits = memLimits(FRAME);
let mem: StartedService;
let cleanup: () => void;

beforeAll(async () => {
  const temp = tempDir('zmemframe');
  cleanup = temp.cleanup;
  const { file } = writeTestConfig(temp.dir, { limits: { max_frame_bytes: FRAME } });
  mem = await startService('mem', file);
});
afterAll(async () => {
  await mem.stop();
  cleanup();
});

const call = (frame: Frame): Promise<Frame> => requestOrError(mem.socket, frame, { timeoutMs: 30_000 });

const text = (n: number, c: string): string => c.repeat(n);

describe('mem: replies within the frame limit', () => {
  it('answers get_history with the most recent messages that fit, cutting inside a request, oldest first', async () => {
    // Ten records of two 5 KB messages: 100 KB in all.
    for (let i = 0; i < 10; i++) {
      const reply = await call({
        type: 'append_history',
        channel_id: 'h',
        messages: [
          { role: 'user', content: `${i}u${text(5000, 'a')}` },
          { role: 'assistant', content: `${i}a${text(5000, 'b')}` },
        ],
      });
      expect(reply).toEqual({ type: 'ok' });
    }
    const all = await call({ type: 'get_history', channel_id: 'h', limit: 0 });
    const got = (all.messages as { content: string }[]).map((m) => m.content.slice(0, 2));
    expect(got.length).toBeGreaterThan(0);
    expect(got.at(-1)).toBe('9a');
    expect(all).toMatchObject({ truncated: true, omitted: 20 - got.length });
    expect(Buffer.byteLength(JSON.stringify(all))).toBeLessThanOrEqual(FRAME);
    // A limit that fits is answered whole; one that does not counts only what it asked for.
    expect(await call({ type: 'get_history', channel_id: 'h', limit: 3 })).toEqual({
      type: 'history',
      messages: [
        { role: 'assistant', content: `8a${text(5000, 'b')}` },
        { role: 'user', content: `9u${text(5000, 'a')}` },
        { role: 'assistant', content: `9a${text(5000, 'b')}` },
      ],
    });
    expect(await call({ type: 'get_history', channel_id: 'h', limit: got.length + 2 })).toMatchObject({ truncated: true, omitted: 2 });
  });

  it('refuses an append_history or store_hard over half the frame and a soft memory over a quarter, storing nothing', async () => {
    const big = [{ role: 'user', content: text(limits.recordBytes, 'z') }];
    for (const frame of [
      { type: 'append_history', channel_id: 'r', messages: big },
      { type: 'store_hard', messages: big },
    ]) {
      const reply = await call(frame);
      expect(reply).toMatchObject({ type: 'error', code: 'INVALID_REQUEST' });
      expect(String(reply.message)).toContain(`mem's bound of ${limits.recordBytes} bytes`);
    }
    expect(await call({ type: 'get_history', channel_id: 'r' })).toEqual({ type: 'history', messages: [] });
    expect(await call({ type: 'set_soft', content: text(limits.softBytes + 1, 's') })).toMatchObject({ type: 'error', code: 'INVALID_REQUEST' });
    expect(await call({ type: 'set_soft', content: text(limits.softBytes, 's') })).toEqual({ type: 'ok' });
  });

  it('answers search_hard with the best results that fit', async () => {
    for (let i = 0; i < 10; i++) {
      const reply = await call({ type: 'store_hard', messages: [{ role: 'user', content: `needle ${text(10_000, 'q')}` }] });
      expect(reply).toMatchObject({ type: 'ok' });
    }
    const reply = await call({ type: 'search_hard', query: 'needle', top_k: 10 });
    const results = reply.results as unknown[];
    expect(results.length).toBeGreaterThan(0);
    expect(results.length).toBeLessThan(10);
    expect(reply).toMatchObject({ truncated: true, omitted: 10 - results.length });
    expect(Buffer.byteLength(JSON.stringify(reply))).toBeLessThanOrEqual(FRAME);
  });
});
