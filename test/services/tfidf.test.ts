import { describe, expect, it } from 'vitest';
import { TfIdfIndex } from '../../src/services/mem/tfidf.js';
import { terms } from '../../src/services/mem/tokenize.js';
import { rng } from '../helpers/random.js';

/** Textbook TF-IDF cosine computed from scratch: the reference the incremental index must match. */
function bruteForce(docs: string[][], query: string[]): number[] {
  const n = docs.length;
  const df = new Map<string, number>();
  for (const d of docs) for (const t of new Set(d)) df.set(t, (df.get(t) ?? 0) + 1);
  const idf = (t: string): number => Math.log((1 + n) / (1 + (df.get(t) ?? 0))) + 1;
  const vec = (ts: string[], inVocab: boolean): Map<string, number> => {
    const v = new Map<string, number>();
    for (const t of ts) if (!inVocab || df.has(t)) v.set(t, (v.get(t) ?? 0) + 1);
    for (const [t, tf] of v) v.set(t, tf * idf(t));
    return v;
  };
  const norm = (v: Map<string, number>): number => Math.sqrt([...v.values()].reduce((s, x) => s + x * x, 0));
  const q = vec(query, true);
  return docs.map((d) => {
    const v = vec(d, false);
    let dot = 0;
    for (const [t, w] of q) dot += w * (v.get(t) ?? 0);
    const denom = norm(q) * norm(v);
    return denom === 0 ? 0 : dot / denom;
  });
}

function randomDocs(count: number, seed: number): string[][] {
  const rand = rng(seed);
  const vocab = Array.from({ length: 40 }, (_, i) => `w${i}`);
  return Array.from({ length: count }, () =>
    Array.from({ length: 1 + Math.floor(rand() * 8) }, () => vocab[Math.floor(rand() * rand() * vocab.length)] as string),
  );
}

describe('TF-IDF index', () => {
  it('matches a from-scratch TF-IDF cosine after every incremental add (idf moves, norms stay exact)', () => {
    const docs = randomDocs(300, 7);
    const index = new TfIdfIndex();
    const queries = [['w0'], ['w1', 'w2'], ['w3', 'w3', 'w17'], ['w39', 'w0', 'nope']];
    docs.forEach((d, i) => {
      index.add(i, d);
      if (i % 37 !== 0 && i !== docs.length - 1) return;
      const seen = docs.slice(0, i + 1);
      for (const q of queries) {
        const expected = bruteForce(seen, q)
          .map((score, id) => ({ id, score: Math.round(score * 10_000) / 10_000 }))
          .filter((r) => r.score > 0)
          .sort((a, b) => b.score - a.score || a.id - b.id)
          .slice(0, 5);
        expect(index.search(q, 5)).toEqual(expected);
      }
    });
  });

  it('after removals scores as an index that never held the removed documents (forget_hard)', () => {
    const docs = randomDocs(200, 23);
    const index = new TfIdfIndex();
    docs.forEach((d, i) => index.add(i, d));
    const removed = new Set([0, 3, 17, 50, 51, 52, 199]);
    for (const id of removed) expect(index.remove(id, docs[id] as string[])).toBe(true);
    expect(index.size).toBe(docs.length - removed.size);
    const kept = docs.map((d, id) => ({ d, id })).filter(({ id }) => !removed.has(id));
    for (const q of [['w0'], ['w1', 'w2'], ['w3', 'w3', 'w17'], ['w39', 'nope']]) {
      const scores = bruteForce(
        kept.map(({ d }) => d),
        q,
      );
      const expected = kept
        .map(({ id }, i) => ({ id, score: Math.round((scores[i] as number) * 10_000) / 10_000 }))
        .filter((r) => r.score > 0)
        .sort((a, b) => b.score - a.score || a.id - b.id)
        .slice(0, 8);
      expect(index.search(q, 8)).toEqual(expected);
    }
  });

  it('ignores a query term whose every document was removed', () => {
    const index = new TfIdfIndex();
    index.add(0, ['only']);
    index.add(1, ['shared', 'word']);
    index.add(2, ['shared']);
    const fresh = new TfIdfIndex();
    fresh.add(1, ['shared', 'word']);
    fresh.add(2, ['shared']);
    index.remove(0, ['only']);
    expect(index.search(['only', 'shared'], 3)).toEqual(fresh.search(['only', 'shared'], 3));
  });

  it('gives the same scores after a bulk load as after incremental adds', () => {
    const docs = randomDocs(200, 11);
    const incremental = new TfIdfIndex();
    const bulk = new TfIdfIndex();
    bulk.beginBulk();
    docs.forEach((d, i) => {
      incremental.add(i, d);
      bulk.add(i, d);
    });
    bulk.finish();
    for (const q of [['w0'], ['w5', 'w9'], ['w2', 'w2', 'w30']]) expect(bulk.search(q, 10)).toEqual(incremental.search(q, 10));
  });

  it('orders equal scores by ascending id and returns nothing for an empty or unknown query', () => {
    const index = new TfIdfIndex();
    index.add(0, ['beta']);
    index.add(1, ['alpha']);
    index.add(2, ['alpha']);
    index.add(3, ['alpha']);
    expect(index.search(['alpha'], 2)).toEqual([
      { id: 1, score: 1 },
      { id: 2, score: 1 },
    ]);
    expect(index.search([], 3)).toEqual([]);
    expect(index.search(['gamma'], 3)).toEqual([]);
  });

  it('handles a top_k above the insertion limit by sorting once', () => {
    const index = new TfIdfIndex();
    for (let i = 0; i < 200; i++) index.add(i, i % 2 ? ['a', 'b'] : ['a']);
    const hits = index.search(['a'], 100);
    expect(hits).toHaveLength(100);
    expect(hits.slice(0, 2).map((h) => h.id)).toEqual([0, 2]);
    expect(hits.every((h, i) => i === 0 || hits[i - 1]!.score > h.score || (hits[i - 1]!.score === h.score && hits[i - 1]!.id < h.id))).toBe(true);
  });

  it('skips ids that were never added (gaps left by corrupt lines)', () => {
    const index = new TfIdfIndex();
    index.add(0, ['x']);
    index.add(5, ['x', 'y']);
    expect(index.size).toBe(2);
    expect(index.search(['y'], 3).map((h) => h.id)).toEqual([5]);
  });
});

describe('tokenisation', () => {
  it('lower-cases, drops stop words and Porter-stems', () => {
    expect(terms('The Servers are RESTARTING')).toEqual(['server', 'restart']);
  });

  it('keeps non-English words whole so they stay searchable', () => {
    expect(terms('ünïcode wörld 日本語 naïve-café')).toEqual(['ünïcode', 'wörld', '日本語', 'naïv', 'café']);
  });

  it('yields no terms for punctuation or stop words only', () => {
    expect(terms('  ,.!? ')).toEqual([]);
    expect(terms('the and of')).toEqual([]);
  });
});
