/**
 * Cancellation: clients disconnect at random points of streamed, tool-using
 * requests. Within 200 ms the mock LLM has seen every started request aborted, no
 * exc child process remains, and nothing is stored for the channel.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, stream } from '../../src/runtime/index.js';
import { processesMatching } from '../helpers/procs.js';
import { record, startFaultSuite, type FaultSuite } from './harness.js';
import { rng } from './hostile.js';

const RUNS = 30;

let fs: FaultSuite;
beforeAll(async () => {
  fs = await startFaultSuite('zcancel');
});
afterAll(async () => {
  await fs.close();
});

describe('clients disconnecting at random points', () => {
  it(`cancel everything within 200 ms (${RUNS} runs)`, async () => {
    const random = rng(2026);
    const times: number[] = [];
    const phases: Record<string, number> = {};
    for (let run = 0; run < RUNS; run++) {
      const marker = `1000.${run}${Date.now() % 100000}`;
      // The reply streams, calls a tool that never ends, and its stream then stays open.
      fs.script({
        rules: [
          {
            chunks: ['Working ', 'on it. ', `<tool_call>{"name":"execute_bash","arguments":{"code":"sleep ${marker}"}}</tool_call>`, ' more'],
            delayMs: 40,
            hangAfterChunks: 3,
          },
        ],
      });
      const channel = `cancel-${run}`;
      const controller = new AbortController();
      const delay = Math.floor(random() * 400);
      const consume = (async () => {
        for await (const frame of stream(fs.socket('daemon'), { message: 'run forever', stream: true, channel_id: channel }, { signal: controller.signal }))
          void frame;
      })().catch(() => undefined);
      await new Promise((r) => setTimeout(r, delay));
      const phase = processesMatching(`sleep ${marker}`).length > 0 ? 'tool running' : fs.mock.stats.active > 0 ? 'model streaming' : 'before the model';
      phases[phase] = (phases[phase] ?? 0) + 1;
      const cancelledAt = Date.now();
      controller.abort();
      await consume;
      for (;;) {
        const settled = fs.mock.stats.active === 0 && fs.mock.stats.aborted === fs.mock.stats.requests && processesMatching(`sleep ${marker}`).length === 0;
        if (settled) break;
        if (Date.now() - cancelledAt > 2000) break;
        await new Promise((r) => setTimeout(r, 2));
      }
      const elapsed = Date.now() - cancelledAt;
      times.push(elapsed);
      expect(fs.mock.stats.active, `run ${run}: an LLM request is still open`).toBe(0);
      expect(fs.mock.stats.aborted, `run ${run}: every LLM request was aborted`).toBe(fs.mock.stats.requests);
      expect(processesMatching(`sleep ${marker}`), `run ${run}: the tool still runs`).toEqual([]);
      expect(elapsed, `run ${run}: cancelled after ${delay} ms (${phase})`).toBeLessThan(200);
      expect((await request(fs.socket('mem'), { type: 'get_history', channel_id: channel })).messages).toEqual([]);
    }
    // The random points really covered the phases of a request.
    expect(phases['tool running']).toBeGreaterThan(3);
    expect(phases['model streaming']).toBeGreaterThan(3);
    record('cancel.runs', RUNS);
    record('cancel.max_ms', Math.max(...times), 'ms');
    record('cancel.median_ms', [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)] ?? 0, 'ms');
    record('cancel.phases', JSON.stringify(phases));
  });
});
