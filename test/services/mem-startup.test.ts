/**
 * mem starts without waiting for its hard memory index (issue 13, point 3: recovery
 * after a crash took 39–54 s with a large index, rebuilt from scratch before mem
 * answered anything). A real `zino serve mem` on a data directory written directly in
 * the on-disk format (docs/storage.md): it answers ping, history, soft memory, status
 * and stores while the index is built in the background; a search sent meanwhile is
 * answered once the index is ready, and finds what was stored during the build. The
 * index snapshot is used when it matches the log, and ignored (and rebuilt) when it is
 * corrupt, torn or stale. Nothing here asserts a time: `npm run bench mem` measures.
 */
import { mkdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Frame } from '../../src/runtime/index.js';
import type { StartedService } from '../../src/testing/suite.js';
import { waitFor } from '../helpers/util.js';
import { memEnv, user, type MemEnv } from './mem-helpers.js';

let env: MemEnv;
beforeEach(() => {
  env = memEnv('zstart');
});
afterEach(async () => {
  await env.stopAll();
  env.cleanup();
});

const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'te', 'vo', 'di', 'pra', 'sten', 'dor', 'quel', 'mar', 'tis', 'bun'];
/** Pseudo-words that never meet the probes below. */
const VOCAB = Array.from({ length: 5000 }, (_, i) => {
  let w = 'x';
  for (let n = i + 1; n > 0; n = Math.floor(n / SYLLABLES.length)) w += SYLLABLES[n % SYLLABLES.length];
  return w;
});

/** Writes `count` hard memories straight into the log; memory `id` holds `probes[id]` when there is one. Returns the log's size. */
function writeMemories(dataDir: string, count: number, probes: Record<number, string> = {}): number {
  mkdirSync(dataDir, { recursive: true });
  let seed = 12345;
  const next = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  const words = (n: number): string => Array.from({ length: n }, () => VOCAB[next() % VOCAB.length]).join(' ');
  const lines: string[] = [];
  for (let id = 0; id < count; id++) {
    const content = probes[id] === undefined ? words(12) : `${words(6)} ${probes[id]} ${words(6)}`;
    lines.push(`${JSON.stringify({ id, messages: [user(content), { role: 'assistant', content: words(12) }], tag: null })}\n`);
  }
  const text = lines.join('');
  writeFileSync(path.join(dataDir, 'hard_memories.jsonl'), text);
  return Buffer.byteLength(text);
}

interface IndexStatus {
  state: string;
  entries: number;
  log_bytes: number;
  indexed_bytes: number;
  snapshot_bytes: number;
}

async function indexStatus(): Promise<IndexStatus> {
  const reply = await env.call({ type: 'status' });
  return reply.hard_index as IndexStatus;
}

async function ready(): Promise<IndexStatus> {
  return waitFor(async () => {
    const status = await indexStatus();
    return status.state === 'ready' && status;
  }, 'the index to be ready');
}

const ids = (reply: Frame): number[] => (reply.results as { id: number }[]).map((r) => r.id);
const hasLog = (mem: StartedService, msg: string): Record<string, unknown> | undefined => mem.logs.find((l) => l.msg === msg);

describe('mem: start-up with a large store', () => {
  it('answers ping, history, soft memory and stores while the index builds; a search sent meanwhile is answered, right, once it is ready', async () => {
    const COUNT = 100_000;
    writeMemories(env.dataDir, COUNT, { 77_777: 'zanzibar', 12: 'okapi' });
    mkdirSync(path.join(env.dataDir, 'history'), { recursive: true });
    writeFileSync(path.join(env.dataDir, 'history', 'ops.jsonl'), `${JSON.stringify({ m: [user('disk?'), { role: 'assistant', content: '42% used' }] })}\n`);
    writeFileSync(path.join(env.dataDir, 'soft_memory.txt'), 'the main server is atlas');

    const mem = await env.start(); // resolves once mem answered a ping
    const order: string[] = [];
    const building = await indexStatus();
    order.push('status');
    expect(building.state).toBe('building');
    expect(building.entries).toBeLessThan(COUNT);
    expect(building.log_bytes).toBe(statSync(path.join(env.dataDir, 'hard_memories.jsonl')).size);

    const search = env.call({ type: 'search_hard', query: 'zanzibar', top_k: 5 }).then((reply) => {
      order.push('search');
      return reply;
    });
    expect(await env.call({ type: 'ping' })).toEqual({ type: 'pong' });
    order.push('ping');
    expect(await env.call({ type: 'get_history', channel_id: 'ops', limit: 1 })).toEqual({
      type: 'history',
      messages: [{ role: 'assistant', content: '42% used' }],
    });
    order.push('history');
    expect(await env.call({ type: 'get_soft' })).toEqual({ type: 'soft_memory', content: 'the main server is atlas' });
    order.push('soft');
    // Taken at once, with the id after the last line's; the builder indexes it from the file.
    expect(await env.call({ type: 'store_hard', messages: [user('zanzibar again')] })).toEqual({ type: 'ok', id: COUNT });
    order.push('store');
    const during = await indexStatus();
    order.push('status');

    const found = await search;
    // The search waited for the index; everything else was answered before it.
    expect(during.state).toBe('building');
    expect(order).toEqual(['status', 'ping', 'history', 'soft', 'store', 'status', 'search']);
    expect(ids(found)).toEqual([COUNT, 77_777]);

    const after = await indexStatus();
    expect(after).toMatchObject({ state: 'ready', entries: COUNT + 1, snapshot_bytes: 0 });
    expect(after.indexed_bytes).toBe(after.log_bytes);
    expect(ids(await env.call({ type: 'search_hard', query: 'okapi' }))).toEqual([12]);
    expect(hasLog(mem, 'hard memory index built')).toMatchObject({ entries: COUNT + 1, fromSnapshotBytes: 0 });
    expect(hasLog(mem, 'hard memory index built')?.pauses).toBeGreaterThan(0);
  });
});

describe('mem: the index snapshot', () => {
  const snapshotFile = (): string => path.join(env.dataDir, 'hard_memories.index');
  const logFile = (): string => path.join(env.dataDir, 'hard_memories.jsonl');
  // Over 1 MiB of log, so that mem writes a snapshot once it has indexed it.
  const COUNT = 8000;

  /** Starts mem and waits until it has indexed everything and written a snapshot covering the whole log. */
  async function startAndSnapshot(): Promise<StartedService> {
    const mem = await env.start();
    await ready();
    await waitFor(() => hasLog(mem, 'hard memory index snapshot written'), 'the snapshot to be written');
    return mem;
  }

  it('is written once the log is indexed, used after a crash with the lines after it indexed too, and gives the same answers', async () => {
    const logBytes = writeMemories(env.dataDir, COUNT, { 4321: 'zanzibar' });
    const first = await startAndSnapshot();
    expect(hasLog(first, 'hard memory index snapshot written')).toMatchObject({ entries: COUNT, coversBytes: logBytes });
    const before = await env.call({ type: 'search_hard', query: 'zanzibar quokka', top_k: 5 });
    expect(ids(before)).toEqual([4321]);
    // Stored after the snapshot, then a crash: the next start must index this from the log.
    expect(await env.call({ type: 'store_hard', messages: [user('quokka zanzibar')] })).toEqual({ type: 'ok', id: COUNT });
    await env.stopAll(); // SIGKILL

    const second = await env.start();
    const status = await ready();
    expect(status).toMatchObject({ entries: COUNT + 1, snapshot_bytes: logBytes });
    expect(hasLog(second, 'hard memory index snapshot loaded')).toMatchObject({ coversBytes: logBytes, entries: COUNT });
    expect(hasLog(second, 'hard memory index snapshot ignored; rebuilding from the log')).toBeUndefined();
    const after = await env.call({ type: 'search_hard', query: 'zanzibar quokka', top_k: 5 });
    expect(ids(after)).toEqual([COUNT, 4321]);
    expect(await env.call({ type: 'store_hard', messages: [user('next')] })).toEqual({ type: 'ok', id: COUNT + 1 });

    // The same answers, scores included, as an index built from the log alone.
    await env.stopAll();
    rmSync(snapshotFile());
    await env.start();
    expect((await ready()).snapshot_bytes).toBe(0);
    expect(await env.call({ type: 'search_hard', query: 'zanzibar quokka', top_k: 5 })).toEqual(after);
  });

  it.each([
    ['corrupt (a byte flipped)', 'checksum mismatch (corrupt)'],
    ['torn (cut in half)', 'torn or cut'],
    ['not a snapshot', 'not a snapshot'],
  ])('is ignored with a warning when %s, and rebuilt from the log', async (how, reason) => {
    writeMemories(env.dataDir, COUNT, { 99: 'zanzibar' });
    await startAndSnapshot();
    await env.stopAll();
    const bytes = readFileSync(snapshotFile());
    if (how.startsWith('corrupt')) {
      const middle = Math.floor(bytes.length / 2);
      bytes.writeUInt8(bytes.readUInt8(middle) ^ 0xff, middle);
      writeFileSync(snapshotFile(), bytes);
    } else if (how.startsWith('torn')) {
      truncateSync(snapshotFile(), Math.floor(bytes.length / 2));
    } else {
      writeFileSync(snapshotFile(), '{"not":"a snapshot"}\n');
    }
    const mem = await env.start();
    expect(await ready()).toMatchObject({ entries: COUNT, snapshot_bytes: 0 });
    const warning = hasLog(mem, 'hard memory index snapshot ignored; rebuilding from the log');
    expect(String(warning?.reason)).toContain(reason);
    expect(ids(await env.call({ type: 'search_hard', query: 'zanzibar' }))).toEqual([99]);
    // A fresh snapshot replaces it.
    await waitFor(() => hasLog(mem, 'hard memory index snapshot written'), 'a new snapshot');
  });

  it('is ignored when the log under it changed (an entry rewritten, the log cut short) and a torn temporary file is removed', async () => {
    writeMemories(env.dataDir, COUNT, { 99: 'zanzibar', 7000: 'pelican' });
    await startAndSnapshot();
    await env.stopAll();
    // Same length, another word: only the hash of the covered bytes can tell.
    const log = readFileSync(logFile(), 'utf8');
    writeFileSync(logFile(), log.replace('zanzibar', 'zimbabwe'));
    writeFileSync(`${snapshotFile()}.tmp`, readFileSync(snapshotFile()).subarray(0, 100));
    let mem = await env.start();
    expect((await ready()).snapshot_bytes).toBe(0);
    expect(String(hasLog(mem, 'hard memory index snapshot ignored; rebuilding from the log')?.reason)).toContain('are not the ones it was taken from (stale)');
    expect(hasLog(mem, 'unfinished temporary file removed')).toMatchObject({ file: `${snapshotFile()}.tmp` });
    expect(await env.call({ type: 'search_hard', query: 'zanzibar' })).toEqual({ type: 'hard_memories', results: [] });
    expect(ids(await env.call({ type: 'search_hard', query: 'zimbabwe' }))).toEqual([99]);
    await waitFor(() => hasLog(mem, 'hard memory index snapshot written'), 'a new snapshot');
    await env.stopAll();

    // An older copy of the log, shorter than what the snapshot covers.
    const lines = readFileSync(logFile(), 'utf8').split('\n');
    writeFileSync(logFile(), `${lines.slice(0, 6000).join('\n')}\n`);
    mem = await env.start();
    expect(await ready()).toMatchObject({ entries: 6000, snapshot_bytes: 0 });
    expect(String(hasLog(mem, 'hard memory index snapshot ignored; rebuilding from the log')?.reason)).toContain('(stale)');
    expect(await env.call({ type: 'search_hard', query: 'pelican' })).toEqual({ type: 'hard_memories', results: [] });
    expect(await env.call({ type: 'store_hard', messages: [user('pelican')] })).toEqual({ type: 'ok', id: 6000 });
    expect(ids(await env.call({ type: 'search_hard', query: 'pelican' }))).toEqual([6000]);
  });
});
