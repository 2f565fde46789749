/**
 * The pieces behind mem's background index build (issue 13, point 3), without
 * processes: the index image and the snapshot encoding give back the same index, a
 * search waits for the build and gives up with its caller, close() stops a build,
 * and the id rule holds while the build runs. The end-to-end behaviour is in
 * mem-startup.test.ts.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HardStore } from '../../src/services/mem/hard.js';
import { Slicer } from '../../src/services/mem/slices.js';
import { SNAPSHOT_FILE, SnapshotInvalid, decodeSnapshot, encodeSnapshot } from '../../src/services/mem/snapshot.js';
import { TfIdfIndex } from '../../src/services/mem/tfidf.js';
import { captureLogger, tempDir } from '../helpers/util.js';
import { rng } from '../helpers/random.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function randomDocs(count: number, seed: number): string[][] {
  const rand = rng(seed);
  const vocab = Array.from({ length: 60 }, (_, i) => `w${i}`);
  return Array.from({ length: count }, () => Array.from({ length: Math.floor(rand() * 9) }, () => vocab[Math.floor(rand() * rand() * vocab.length)] as string));
}

const queries = [['w0'], ['w1', 'w2'], ['w5', 'w5', 'w40'], ['w59', 'w3'], ['nothing']];

describe('the index image and the snapshot file', () => {
  it('give back an index that answers exactly as the one built document by document, with documents added after it', async () => {
    const docs = randomDocs(400, 3);
    const original = new TfIdfIndex();
    docs.slice(0, 300).forEach((d, i) => original.add(i, d));
    const slicer = new Slicer(0); // yields at every check: the slices must not change the result
    const image = await original.toImage(300, slicer);
    const parts = await encodeSnapshot(
      {
        coversBytes: 1234,
        coversSha256: 'ab'.repeat(32),
        nextId: 300,
        offsets: Float64Array.from([5, -1, 7]),
        lengths: Float64Array.from([1, -1, 2]),
        index: image,
      },
      slicer,
    );
    const decoded = await decodeSnapshot(Buffer.concat(parts), slicer);
    expect(decoded).toMatchObject({ coversBytes: 1234, coversSha256: 'ab'.repeat(32), nextId: 300 });
    expect(Array.from(decoded.offsets)).toEqual([5, -1, 7]);
    expect(Array.from(decoded.lengths)).toEqual([1, -1, 2]);
    const restored = await TfIdfIndex.fromImage(decoded.index, 300, slicer);
    for (let i = 300; i < 400; i++) {
      original.add(i, docs[i] as string[]);
      restored.add(i, docs[i] as string[]);
    }
    await restored.finishInSlices(slicer);
    expect(restored.size).toBe(400);
    for (const q of queries) expect(restored.search(q, 10)).toEqual(original.search(q, 10));
  });

  it('indexes a document in slices during a bulk load exactly as in one go', async () => {
    const docs = randomDocs(200, 11);
    const whole = new TfIdfIndex();
    const sliced = new TfIdfIndex();
    whole.beginBulk();
    sliced.beginBulk();
    const slicer = new Slicer(0);
    for (let i = 0; i < docs.length; i++) {
      // A long document of many terms too, so that the slices cut inside it.
      const doc = i === 100 ? Array.from({ length: 20_000 }, (_, k) => `long${k % 7000}`) : (docs[i] as string[]);
      whole.add(i, doc);
      await sliced.addInSlices(i, doc, slicer);
    }
    whole.finish();
    await sliced.finishInSlices(slicer);
    expect(slicer.pauses).toBeGreaterThan(0);
    for (const q of [...queries, ['long5', 'w1']]) expect(sliced.search(q, 10)).toEqual(whole.search(q, 10));
  });

  it('leaves out documents added while the image is taken', async () => {
    const index = new TfIdfIndex();
    index.add(0, ['a', 'b']);
    index.add(1, ['a']);
    let added = false;
    // A slicer whose first pause adds a document (and a new term), as a store would.
    const slicer = new Slicer(0);
    const pause = slicer.pause.bind(slicer);
    slicer.pause = async () => {
      if (!added) {
        added = true;
        index.add(2, ['a', 'c']);
      }
      await pause();
    };
    const image = await index.toImage(2, slicer);
    expect(added).toBe(true);
    expect(image).toMatchObject({ count: 2, terms: ['a', 'b'] });
    expect(Array.from(image.dfs)).toEqual([2, 1]);
    expect(Array.from(image.docs)).toEqual([0, 1, 0]);
  });

  it('rejects a snapshot whose bytes do not add up', async () => {
    const slicer = new Slicer();
    const index = new TfIdfIndex();
    index.add(0, ['a']);
    const parts = await encodeSnapshot(
      {
        coversBytes: 1,
        coversSha256: '00'.repeat(32),
        nextId: 1,
        offsets: new Float64Array(1),
        lengths: new Float64Array(1),
        index: await index.toImage(1, slicer),
      },
      slicer,
    );
    const good = Buffer.concat(parts);
    await expect(decodeSnapshot(good.subarray(0, good.length - 1), slicer)).rejects.toThrow(SnapshotInvalid);
    const flipped = Buffer.from(good);
    flipped.writeUInt8(flipped.readUInt8(flipped.length - 40) ^ 1, flipped.length - 40);
    await expect(decodeSnapshot(flipped, slicer)).rejects.toThrow('checksum mismatch (corrupt)');
    await expect(decodeSnapshot(Buffer.from('ZINO-HIX\0\0\0\x02{}'.padEnd(80, ' ')), slicer)).rejects.toThrow('format undefined, not 1');
  });
});

describe('the background build', () => {
  function logWith(lines: object[]): { file: string; dir: string } {
    const { dir, cleanup } = tempDir('zsnap');
    cleanups.push(cleanup);
    const file = path.join(dir, 'hard_memories.jsonl');
    writeFileSync(file, lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
    return { file, dir };
  }
  const entry = (id: number, content: string): object => ({ id, messages: [{ role: 'user', content }], tag: null });

  it('makes a search wait for the index, and gives up when its caller does', async () => {
    const { file } = logWith(Array.from({ length: 50 }, (_, i) => entry(i, `word${i} common`)));
    const { log } = captureLogger();
    const store = await HardStore.open(file, log, { sliceMs: 0 });
    // open() returns before the build has read anything: the index cannot be ready yet.
    expect(store.indexStatus.state).toBe('building');
    const controller = new AbortController();
    const gone = store.search('word7', 1, controller.signal);
    const waiting = store.search('word7', 1);
    controller.abort(new Error('the client went away'));
    await expect(gone).rejects.toThrow('the client went away');
    expect((await waiting).map((r) => r.id)).toEqual([7]);
    expect(store.indexStatus).toMatchObject({ state: 'ready', entries: 50 });
    await store.close();
  });

  it('stops at close() in the middle of a build, and the next open builds it all', async () => {
    const { file } = logWith(Array.from({ length: 2000 }, (_, i) => entry(i, `word${i}`)));
    const { log, lines } = captureLogger();
    const store = await HardStore.open(file, log, { sliceMs: 0 });
    await store.close();
    expect(lines.some((l) => l.msg === 'hard memory index built')).toBe(false);
    const again = await HardStore.open(file, log);
    expect((await again.search('word1999', 1)).map((r) => r.id)).toEqual([1999]);
    await again.close();
  });

  it('gives stores during the build the ids after the last line, and skips an earlier line whose id is above it', async () => {
    // A hand-edited log: line 2 claims id 50, past the last line's 3. The next id follows the last line.
    const { file } = logWith([entry(0, 'alpha'), entry(1, 'beta'), entry(50, 'gamma'), entry(2, 'delta'), entry(3, 'epsilon')]);
    const { log, lines } = captureLogger();
    const store = await HardStore.open(file, log, { sliceMs: 0 });
    expect(await store.store([{ role: 'user', content: 'zeta gamma' }], null)).toBe(4);
    expect((await store.search('gamma', 5)).map((r) => r.id)).toEqual([4]);
    expect((await store.search('delta', 5)).map((r) => r.id)).toEqual([2]);
    expect(lines.find((l) => l.msg === 'corrupt hard memory line skipped')).toMatchObject({ reason: "id above the last line's" });
    await store.close();
    // The same after a restart: the rule depends on the file only.
    const again = await HardStore.open(file, log);
    expect((await again.search('gamma', 5)).map((r) => r.id)).toEqual([4]);
    expect(await again.store([{ role: 'user', content: 'eta' }], null)).toBe(5);
    await again.close();
  });

  it('forgets an entry indexed from a snapshot: the snapshot goes (it holds the terms), the next start rebuilds from the log without it', async () => {
    // ~1.3 MiB of entries, so that close() writes a snapshot.
    const pad = 'x'.repeat(1300);
    const { file, dir } = logWith(Array.from({ length: 1000 }, (_, i) => entry(i, `word${i} secret${i % 2 === 0 ? 'even' : 'odd'} ${pad}${i}`)));
    const { log, lines } = captureLogger();
    const first = await HardStore.open(file, log, { sliceMs: 0 });
    await first.whenReady();
    await first.close();
    expect(lines.some((l) => l.msg === 'hard memory index snapshot written')).toBe(true);
    expect(existsSync(path.join(dir, SNAPSHOT_FILE))).toBe(true);

    const second = await HardStore.open(file, log, { sliceMs: 0 });
    // A forget during the build waits for the index, then takes the entry out.
    expect(await second.forget(7)).toBe(true);
    expect(lines.some((l) => l.msg === 'hard memory index snapshot loaded')).toBe(true);
    expect(existsSync(path.join(dir, SNAPSHOT_FILE))).toBe(false);
    expect(await second.search('word7', 5)).toEqual([]);
    // A term whose only document went, then comes back with a new one.
    expect(await second.store([{ role: 'user', content: 'word7 again' }], null)).toBe(1000);
    expect((await second.search('word7', 5)).map((r) => r.id)).toEqual([1000]);
    expect((await second.search('secretodd word9', 1)).map((r) => r.id)).toEqual([9]);
    await second.close();
    // No snapshot after a forget: it would cover bytes that changed under it.
    expect(existsSync(path.join(dir, SNAPSHOT_FILE))).toBe(false);
    expect(readFileSync(file, 'utf8')).not.toContain(`word7 secretodd`);

    const third = await HardStore.open(file, log, { sliceMs: 0 });
    expect((await third.search('word7', 5)).map((r) => r.id)).toEqual([1000]);
    expect(await third.forget(7)).toBe(false);
    expect(await third.store([{ role: 'user', content: 'next' }], null)).toBe(1001);
    await third.close();
    // Rebuilt from the log, and snapshotted again.
    expect(existsSync(path.join(dir, SNAPSHOT_FILE))).toBe(true);
  });
});
