/**
 * Cancellation: clients disconnect at chosen points of streamed, tool-using requests
 * (before the model is asked, while it streams, while the tool runs). Afterwards the
 * mock LLM has seen every started request aborted, no exc child process remains, and
 * nothing is stored for the channel. The test waits for that state (up to a generous
 * deadline); how long it took is recorded for docs/reliability.md, not asserted.
 */
import { describe, expect, it } from 'vitest';
import { request, stream } from '../../src/runtime/index.js';
import { processesMatching } from '../helpers/procs.js';
import { rng } from '../helpers/random.js';
import { waitFor } from '../helpers/util.js';
import { record, useFaultSuite } from './harness.js';

const RUNS = 30;
const PHASES = ['before the model', 'model streaming', 'tool running'] as const;
/** A generous bound on everything being cancelled: met in about 10 ms on a quiet machine. */
const SETTLED_WITHIN_MS = 30_000;

const fs = useFaultSuite('zcancel');

describe('clients disconnecting at chosen points', () => {
  it(`cancels everything (${RUNS} runs, ${PHASES.length} phases)`, async () => {
    const random = rng(2026);
    const times: number[] = [];
    const phases: Record<string, number> = {};
    for (let run = 0; run < RUNS; run++) {
      const marker = `1000.${run}${Date.now() % 100000}`;
      // The reply streams, calls a tool that never ends, and its stream then stays open.
      // setScript keeps the counters: a request of an earlier run that reaches the mock late
      // (it left rtr just before the cancel) is counted, and must be aborted, like the others.
      const requestsBefore = fs.mock.stats.requests;
      fs.mock.setScript({
        rules: [
          {
            chunks: ['Working ', 'on it. ', `<tool_call>{"name":"execute_bash","arguments":{"code":"sleep ${marker}"}}</tool_call>`, ' more'],
            delayMs: 40,
            hangAfterChunks: 3,
          },
        ],
      });
      const channel = `cancel-${run}`;
      const phase = PHASES[run % PHASES.length] as (typeof PHASES)[number];
      // While the model streams, leave after the first or the second chunk (seeded).
      const chunksBeforeLeaving = 1 + Math.floor(random() * 2);
      const controller = new AbortController();
      // Text, not frames: a hop may merge chunks that queue up behind a slow reader into one frame.
      let text = '';
      const consume = (async () => {
        for await (const frame of stream(fs.socket('daemon'), { message: 'run forever', stream: true, channel_id: channel }, { signal: controller.signal }))
          if (frame.type === 'chunk') text += String(frame.delta);
      })().catch(() => undefined);
      const textBeforeLeaving = ['Working ', 'Working on it. '][chunksBeforeLeaving - 1] as string;
      // Reach the phase by its event, never by a delay: a slow machine only takes longer to get there.
      if (phase === 'model streaming')
        await waitFor(
          () => fs.mock.stats.active > 0 && text.startsWith(textBeforeLeaving),
          `run ${run}: ${chunksBeforeLeaving} chunk(s) of the model's reply`,
          SETTLED_WITHIN_MS,
          1,
        );
      if (phase === 'tool running') await waitFor(() => processesMatching(`sleep ${marker}`).length > 0, `run ${run}: the tool to start`, SETTLED_WITHIN_MS, 2);
      phases[phase] = (phases[phase] ?? 0) + 1;
      const cancelledAt = Date.now();
      controller.abort();
      await consume;
      await waitFor(
        () => fs.mock.stats.active === 0 && fs.mock.stats.aborted === fs.mock.stats.requests && processesMatching(`sleep ${marker}`).length === 0,
        `run ${run} (${phase}): every LLM request aborted and the tool gone`,
        SETTLED_WITHIN_MS,
        2,
      );
      times.push(Date.now() - cancelledAt);
      if (phase !== 'before the model') expect(fs.mock.stats.requests, `run ${run}: the model was asked`).toBeGreaterThan(requestsBefore);
      expect((await request(fs.socket('mem'), { type: 'get_history', channel_id: channel })).messages, `run ${run}: nothing stored`).toEqual([]);
    }
    record('cancel.runs', RUNS);
    record('cancel.max_ms', Math.max(...times), 'ms');
    record('cancel.median_ms', [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)] ?? 0, 'ms');
    record('cancel.phases', JSON.stringify(phases));
  });
});
