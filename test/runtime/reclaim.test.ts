/**
 * Giving memory back once a service stops being busy (src/runtime/transport/reclaim.ts):
 * a compacting collection returns the pages a plain one keeps, the idle compactor runs one
 * only after a while without connections and only when the heap has grown since its last,
 * and a server does it once its last connection has closed, the HTTP front end once its last
 * request has been answered (their debug logs say so). What it gives back in the running
 * suite is measured by `npm run bench suite` (pss.total_7.idle_10s).
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import path from 'node:path';
import { createFrontEnd } from '../../src/frontends/http/server.js';
import { TokenCheck } from '../../src/frontends/http/token.js';
import { request, serve } from '../../src/runtime/index.js';
import { committedOldBytes, compactHeap, IdleCompactor } from '../../src/runtime/transport/reclaim.js';
import { writeTestConfig } from '../../src/testing/suite.js';
import { captureLogger, deferred, tempDir, waitFor } from '../helpers/util.js';

const MB = 1024 * 1024;

describe('compactHeap', () => {
  it('gives back the pages of a fragmented old generation', () => {
    // 400,000 objects, promoted to the old generation, of which every 50th stays alive: every
    // page keeps a few live objects, which a plain full collection leaves where they are.
    const fragmented = (): { a: string; b: number[] }[] =>
      Array.from({ length: 400_000 }, (_, i) => ({ a: `${'x'.repeat(40)}${i}`, b: [i] })).filter((_, i) => i % 50 === 0);
    const kept = fragmented();
    const before = committedOldBytes();
    expect(compactHeap()).toBe(true);
    const after = committedOldBytes();
    expect(kept).toHaveLength(8000);
    expect(before - after).toBeGreaterThan(40 * MB);
  });
});

describe('IdleCompactor', () => {
  afterEach(() => vi.useRealTimers());
  const fake = (): void => void vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
  /** An old generation of `size` bytes, as the compactor reads it. */
  let size = 0;
  const measure = (): number => size;

  it('compacts once the server has had no connection for afterIdleMs, not before', () => {
    fake();
    const events: { beforeBytes: number; afterBytes: number; ms: number }[] = [];
    size = 10 * MB;
    const compactor = new IdleCompactor({ openConnections: () => 0, afterIdleMs: 1000, measure, onCompact: (e) => events.push(e) });
    size = 20 * MB;
    compactor.idle();
    vi.advanceTimersByTime(999);
    expect(compactor.compactions).toBe(0);
    vi.advanceTimersByTime(1);
    expect(compactor.compactions).toBe(1);
    expect(events).toEqual([{ beforeBytes: 20 * MB, afterBytes: 20 * MB, ms: expect.any(Number) }]);
  });

  it('waits while a connection is open, and counts the idle time from the last close', () => {
    fake();
    let open = 0;
    size = 10 * MB;
    const compactor = new IdleCompactor({ openConnections: () => open, afterIdleMs: 1000, measure });
    size = 20 * MB;
    compactor.idle();
    vi.advanceTimersByTime(600);
    open = 1; // a request arrives
    vi.advanceTimersByTime(1000);
    expect(compactor.compactions).toBe(0);
    open = 0;
    compactor.idle(); // it ends
    vi.advanceTimersByTime(600);
    compactor.idle(); // another one opened and closed at once (no timer is armed twice)
    vi.advanceTimersByTime(999);
    expect(compactor.compactions).toBe(0);
    vi.advanceTimersByTime(1);
    expect(compactor.compactions).toBe(1);
  });

  it('needs 4 MiB of growth since the last compaction, or a quarter of the size then when that is more', () => {
    fake();
    size = 10 * MB;
    const compactor = new IdleCompactor({ openConnections: () => 0, afterIdleMs: 1000, measure });
    // [old generation now, compactions run after a pause]
    const steps: [number, number][] = [
      [14 * MB - 1, 0],
      [14 * MB, 1],
      // The size after that compaction is the new baseline (14 MiB here: the measure is fixed).
      [14 * MB, 1],
      [18 * MB, 2],
      // From 100 MiB on, a quarter is more than 4 MiB: 125 MiB earns the next one, not 104.
      [100 * MB, 3],
      [125 * MB - 1, 3],
      [125 * MB, 4],
    ];
    for (const [bytes, compactions] of steps) {
      size = bytes;
      compactor.idle();
      vi.advanceTimersByTime(1000);
      expect(compactor.compactions, `at ${bytes} bytes`).toBe(compactions);
    }
  });

  it('runs nothing after stop()', () => {
    fake();
    size = 0;
    const compactor = new IdleCompactor({ openConnections: () => 0, afterIdleMs: 1000, measure });
    size = 100 * MB;
    compactor.idle();
    compactor.stop();
    vi.advanceTimersByTime(5000);
    expect(compactor.compactions).toBe(0);
  });
});

let dir: string | undefined;
let cleanup: (() => void) | undefined;
afterEach(() => cleanup?.());

describe('a server after a burst of requests', () => {
  it('compacts its heap once its last connection has closed, and says so in its debug log', async () => {
    ({ dir, cleanup } = tempDir('zcompact'));
    const { log, lines } = captureLogger();
    const gate = deferred();
    // Every bit of growth earns a compaction here (a real service waits for 4 MB of it).
    const server = await serve(path.join(dir, 's.sock'), {
      handlers: { hold: () => gate.promise.then(() => ({ type: 'ok' })) },
      log,
      compaction: { afterGrowthBytes: -Infinity, afterGrowthRatio: -Infinity, afterIdleMs: 50 },
    });
    try {
      const held = request(server.socketPath, { type: 'hold' });
      // Connections come and go while one stays open; the compaction follows the close of the last one.
      for (let i = 0; i < 3; i++) expect(await request(server.socketPath, { type: 'ping' })).toEqual({ type: 'pong' });
      gate.resolve();
      expect(await held).toEqual({ type: 'ok' });
      const line = await waitFor(() => lines.find((l) => l.msg === 'heap compacted after a busy spell'), 'the compaction');
      expect(line).toMatchObject({ level: 'debug', oldGenBytesBefore: expect.any(Number), oldGenBytesAfter: expect.any(Number), ms: expect.any(Number) });
    } finally {
      await server.close();
    }
  });

  it('compacts the HTTP front end once its last request has been answered, its keep-alive connection still open', async () => {
    ({ dir, cleanup } = tempDir('zcompacth'));
    const { config } = writeTestConfig(dir);
    const { log, lines } = captureLogger();
    const token = 't'.repeat(40);
    const frontEnd = createFrontEnd({
      config,
      log,
      token: new TokenCheck(token),
      created: 0,
      compaction: { afterGrowthBytes: -Infinity, afterGrowthRatio: -Infinity, afterIdleMs: 50 },
    });
    frontEnd.server.listen(0, '127.0.0.1');
    await once(frontEnd.server, 'listening');
    try {
      const { port } = frontEnd.server.address() as AddressInfo;
      // fetch keeps its connection open for the next request: the compaction does not wait for it to close.
      const reply = await fetch(`http://127.0.0.1:${port}/v1/models`, { headers: { authorization: `Bearer ${token}` } });
      expect(reply.status).toBe(200);
      expect(((await reply.json()) as { object: string }).object).toBe('list');
      const line = await waitFor(() => lines.find((l) => l.msg === 'heap compacted after a busy spell'), 'the compaction');
      expect(line).toMatchObject({ level: 'debug', oldGenBytesBefore: expect.any(Number), oldGenBytesAfter: expect.any(Number) });
    } finally {
      await frontEnd.close(1000);
    }
  });
});
