/** Load: 200 concurrent streaming clients, every answer complete and on the right channel. */
import { describe, expect, it } from 'vitest';
import { request, stream, type Frame } from '../../src/runtime/index.js';
import { record, useFaultSuite } from './harness.js';

const CLIENTS = 200;

const fs = useFaultSuite('zload');

describe('200 concurrent streaming clients', () => {
  it('all get their complete answer, stored on their own channel', async () => {
    fs.script({
      rules: Array.from({ length: CLIENTS }, (_, i) => ({
        match: `[client ${i}]`,
        reply: `This is the full answer for client number ${i}, end.`,
        chunkSize: 6,
        delayMs: 1,
      })),
    });
    const started = Date.now();
    const results = await Promise.all(
      Array.from({ length: CLIENTS }, async (_, i) => {
        let text = '';
        let done: Frame | undefined;
        for await (const frame of stream(fs.socket('daemon'), { message: `[client ${i}] hello`, stream: true, channel_id: `load-${i}` })) {
          if (frame.type === 'chunk') text += String(frame.delta);
          else done = frame;
        }
        return { text, done };
      }),
    );
    const seconds = (Date.now() - started) / 1000;
    results.forEach(({ text, done }, i) => {
      const expected = `This is the full answer for client number ${i}, end.`;
      expect(text).toBe(expected);
      expect(done).toMatchObject({ type: 'done', full_text: expected });
    });
    const histories = await Promise.all(Array.from({ length: CLIENTS }, (_, i) => request(fs.socket('mem'), { type: 'get_history', channel_id: `load-${i}` })));
    histories.forEach((h, i) =>
      expect((h.messages as Frame[]).map((m) => m.content)).toEqual([`[client ${i}] hello`, `This is the full answer for client number ${i}, end.`]),
    );
    record('load.clients', CLIENTS);
    record('load.seconds', Math.round(seconds * 100) / 100, 's');
  });
});
