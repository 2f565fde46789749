/**
 * The hard memory index takes the head of a long memory or query only
 * (MAX_INDEXED_CHARS), so one multi-megabyte store or search cannot hold mem's
 * thread for seconds (issue 13, point 2). Pure: a HardStore on a temp file.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HardStore } from '../../src/services/mem/hard.js';
import { Slicer } from '../../src/services/mem/slices.js';
import { MAX_INDEXED_CHARS, MAX_STEMMED_CHARS, indexedTerms, indexedTermsInSlices, terms } from '../../src/services/mem/tokenize.js';
import { rng } from '../helpers/random.js';
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

  it('stems words up to MAX_STEMMED_CHARS and keeps longer tokens whole (stemming a long one took seconds)', () => {
    expect(terms('running restarts')).toEqual(['run', 'restart']);
    const long = `${'x'.repeat(MAX_STEMMED_CHARS)}running`;
    expect(terms(`${long} running`)).toEqual([long, 'run']);
    // A memory that is one 200,000-letter word is indexed (at once) and found by that word.
    const huge = `${'ab'.repeat(100_000)}ing`;
    expect(indexedTerms(huge.toUpperCase())).toEqual([huge]);
  });

  it('gives the same terms tokenised in pieces (the background build) as in one go, whatever the text', async () => {
    const random = rng(5);
    // Words that change when lower-cased by context (a final sigma), punctuation that lower-casing looks through,
    // stop words, digits, long runs without a space.
    const pieces = ['ΟΔΟΣ', "A'Σ", 'Σ.', 'İstanbul', 'the', 'Running', 'x'.repeat(20_000), '日本語', 'co-op', '42', '\n', '\t', ' ', ' ', ' ', '', '.'];
    const slicer = new Slicer(0);
    for (let run = 0; run < 20; run++) {
      const parts: string[] = [];
      let length = 0;
      while (length < MAX_INDEXED_CHARS + 40_000) {
        const piece = pieces[Math.floor(random() * pieces.length)] as string;
        parts.push(piece);
        length += piece.length;
      }
      const text = parts.join(random() < 0.5 ? ' ' : '');
      expect(await indexedTermsInSlices(text, slicer)).toEqual(indexedTerms(text));
    }
    expect(slicer.pauses).toBeGreaterThan(20);
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
