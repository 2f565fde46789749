/**
 * The hard memory index takes the head of a long memory or query only
 * (MAX_INDEXED_CHARS), so one multi-megabyte store or search cannot hold mem's
 * thread for seconds (issue 13, point 2). Pure: a HardStore on a temp file.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HardStore } from '../../src/services/mem/hard.js';
import { MAX_INDEXED_CHARS, indexedTerms, terms } from '../../src/services/mem/tokenize.js';
import { captureLogger, tempDir } from '../helpers/util.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** Distinct filler words (no stop words, nothing that stems to the probes). */
function filler(chars: number, prefix = 'qz'): string {
  const out: string[] = [];
  let length = 0;
  for (let i = 0; length < chars; i++) {
    const word = `${prefix}${i.toString(36)}`;
    out.push(word);
    length += word.length + 1;
  }
  return out.join(' ');
}

describe('the hard memory index bound', () => {
  it('tokenises at most MAX_INDEXED_CHARS of a text', () => {
    const long = `${filler(MAX_INDEXED_CHARS)} zebra`;
    expect(long.length).toBeGreaterThan(MAX_INDEXED_CHARS);
    expect(terms(long)).toContain('zebra');
    expect(indexedTerms(long)).not.toContain('zebra');
    expect(indexedTerms('short text about a zebra')).toEqual(terms('short text about a zebra'));
  });

  it('finds a long memory by its head, not by words past the bound, and the same after a restart', async () => {
    const { dir, cleanup } = tempDir('zidx');
    cleanups.push(cleanup);
    const file = path.join(dir, 'hard.jsonl');
    const { log } = captureLogger();
    const text = `giraffe ${filler(2 * MAX_INDEXED_CHARS)} pelican`;
    let store = await HardStore.open(file, log);
    const id = await store.store([{ role: 'user', content: text }], null);
    for (let round = 0; round < 2; round++) {
      expect((await store.search('giraffe', 1)).map((r) => r.id)).toEqual([id]);
      expect(await store.search('pelican', 1)).toEqual([]);
      // A query is bounded the same way: the probe past its head is not searched.
      expect(await store.search(`${filler(MAX_INDEXED_CHARS, 'vx')} giraffe`, 1)).toEqual([]);
      await store.close();
      store = await HardStore.open(file, log);
    }
    await store.close();
  });
});
