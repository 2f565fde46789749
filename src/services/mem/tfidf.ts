/**
 * An incremental TF-IDF index with exact cosine similarity.
 *
 * Weights: `tf(t,d)` is the raw count of term t in document d; `idf(t) =
 * ln((1+N)/(1+df(t))) + 1` (scikit-learn's smoothed idf), N the number of
 * documents, df(t) the number containing t. A document's vector is `tf·idf`, the
 * query's likewise (terms no document contains are ignored); the score is their
 * cosine.
 *
 * The catch of an incremental index is that idf moves with every added document,
 * so a document norm computed at insertion goes stale. Write `idf(t) = A − b(t)`
 * with `A = ln(1+N) + 1` (one number for the whole index) and `b(t) = ln(1+df(t))`.
 * Then
 *
 *   |d|² = Σ tf²·(A − b)² = A²·S0(d) − 2A·S1(d) + S2(d)
 *   with S0 = Σ tf², S1 = Σ tf²·b, S2 = Σ tf²·b²  (sums over d's terms).
 *
 * S0 never changes; S1 and S2 change only when df(t) changes for one of d's
 * terms, i.e. when a new document contains t. {@link add} therefore walks the
 * posting lists of the new document's terms and adjusts S1/S2 of the documents
 * there (cost: the sum of those terms' df), and a query computes every norm
 * exactly from the current A in O(1). Exact up to floating-point rounding (the
 * incremental sums drift by ~1e-12 relative, far below the 4-decimal rounding of
 * scores); {@link finish} recomputes them from scratch after a bulk load.
 *
 * Document ids must be added in ascending order (the snapshot of {@link toImage}
 * relies on each posting list being sorted).
 */
import type { Slicer } from './slices.js';

interface Postings {
  /** Document ids, ascending (documents are added in id order). */
  docs: number[];
  tfs: number[];
}

/**
 * An index as plain arrays (a snapshot's content): term `t` (in order of first
 * appearance) has `dfs[t]` postings, stored one term after another in `docs` (ids,
 * ascending) and `tfs` (raw counts). The norms are not stored: they follow from these.
 */
export interface IndexImage {
  /** Number of documents, including those without any term. */
  count: number;
  terms: string[];
  dfs: Uint32Array;
  docs: Uint32Array;
  tfs: Uint32Array;
}

/** One hit of {@link TfIdfIndex.search}. */
export interface ScoredDoc {
  id: number;
  /** Cosine similarity rounded to 4 decimal places. */
  score: number;
}

const INITIAL_CAPACITY = 1024;

/**
 * See the module comment. Document ids are non-negative integers, each added once.
 *
 * A term found in one document only keeps that posting in two typed arrays
 * (`soloDoc`, `soloTf`); its list object is made when a second document has it. Most
 * terms of a vocabulary occur once, and a store of distinct words (issue 13) made
 * millions of small list objects: gigabytes of heap, and garbage collections that
 * held mem's thread for seconds.
 */
export class TfIdfIndex {
  private readonly vocab = new Map<string, number>();
  /** Posting lists of terms in two or more documents; `undefined` for a term in one. */
  private readonly lists: (Postings | undefined)[] = [];
  private soloDoc = new Int32Array(INITIAL_CAPACITY);
  private soloTf = new Int32Array(INITIAL_CAPACITY);
  private s0 = new Float64Array(INITIAL_CAPACITY);
  private s1 = new Float64Array(INITIAL_CAPACITY);
  private s2 = new Float64Array(INITIAL_CAPACITY);
  private acc = new Float64Array(INITIAL_CAPACITY);
  private touched = new Int32Array(INITIAL_CAPACITY);
  private count = 0;
  private bulk = false;

  /** Number of documents (including those without any term). */
  get size(): number {
    return this.count;
  }

  /** Number of distinct terms. */
  get vocabularySize(): number {
    return this.vocab.size;
  }

  /** Starts a bulk load: {@link add} skips the norm upkeep until {@link finish}. */
  beginBulk(): void {
    this.bulk = true;
  }

  /** Ends a bulk load by recomputing every document's S0/S1/S2 in one pass over the postings. */
  finish(): void {
    this.beginFinish();
    for (let termId = 0; termId < this.lists.length; termId++) this.finishTerm(termId);
  }

  /** {@link finish} in slices that yield to the event loop (no add may run until it returns). */
  async finishInSlices(slicer: Slicer): Promise<void> {
    this.beginFinish();
    for (let termId = 0; termId < this.lists.length; termId++) {
      this.finishTerm(termId);
      if (slicer.due) await slicer.pause();
    }
  }

  /**
   * The index as plain arrays, for a snapshot on disk: the documents with id below
   * `idLimit` (every document at the time of the call; ids added while it runs are
   * above it and left out). Runs in slices; adds may happen meanwhile, since they only
   * append ids above the limit to posting lists and new terms after the captured ones.
   */
  async toImage(idLimit: number, slicer: Slicer): Promise<IndexImage> {
    const count = this.count;
    const vocabSize = this.vocab.size;
    const terms: string[] = [];
    const dfs = new Uint32Array(vocabSize);
    let total = 0;
    let termId = 0;
    // A Map iterator is live: terms added while we pause come after the captured ones.
    for (const term of this.vocab.keys()) {
      if (termId === vocabSize) break;
      terms.push(term);
      const list = this.lists[termId];
      let n = this.df(termId);
      if (list) {
        n = list.docs.length;
        while (n > 0 && (list.docs[n - 1] as number) >= idLimit) n--;
      }
      dfs[termId] = n;
      total += n;
      termId++;
      if (slicer.due) await slicer.pause();
    }
    const docsOut = new Uint32Array(total);
    const tfsOut = new Uint32Array(total);
    let p = 0;
    for (termId = 0; termId < vocabSize; termId++) {
      // A term that was solo at capture may have a list by now: its first posting is the solo one.
      const list = this.lists[termId];
      const n = dfs[termId] as number;
      if (list) {
        for (let i = 0; i < n; i++, p++) {
          docsOut[p] = list.docs[i] as number;
          tfsOut[p] = list.tfs[i] as number;
        }
      } else if (n === 1) {
        docsOut[p] = this.soloDoc[termId] as number;
        tfsOut[p++] = this.soloTf[termId] as number;
      }
      if (slicer.due) await slicer.pause();
    }
    return { count, terms, dfs, docs: docsOut, tfs: tfsOut };
  }

  /**
   * An index holding `image` (from {@link toImage}), built in slices, in bulk mode:
   * add the documents after it, then call {@link finishInSlices} or {@link finish}.
   * `idLimit` is one more than the largest document id it may hold.
   */
  static async fromImage(image: IndexImage, idLimit: number, slicer: Slicer): Promise<TfIdfIndex> {
    const index = new TfIdfIndex();
    index.bulk = true;
    index.ensureCapacity(Math.max(1, idLimit));
    index.ensureTermCapacity(image.terms.length);
    let p = 0;
    for (let termId = 0; termId < image.terms.length; termId++) {
      const n = image.dfs[termId] as number;
      index.vocab.set(image.terms[termId] as string, termId);
      if (n <= 1) {
        // n = 0: a term all of whose documents were removed.
        index.soloDoc[termId] = n === 1 ? (image.docs[p] as number) : -1;
        index.soloTf[termId] = n === 1 ? (image.tfs[p] as number) : 0;
        index.lists.push(undefined);
      } else {
        index.lists.push({ docs: Array.from(image.docs.subarray(p, p + n)), tfs: Array.from(image.tfs.subarray(p, p + n)) });
      }
      p += n;
      if (slicer.due) await slicer.pause();
    }
    index.count = image.count;
    return index;
  }

  /** Adds document `id` with its terms (repeats count as term frequency). */
  add(id: number, docTerms: readonly string[]): void {
    this.checkId(id);
    const counts = new Map<string, number>();
    for (const t of docTerms) counts.set(t, (counts.get(t) ?? 0) + 1);
    let s0 = 0;
    let s1 = 0;
    let s2 = 0;
    for (const [term, tf] of counts) {
      const b = this.post(term, id, tf);
      s0 += tf * tf;
      s1 += tf * tf * b;
      s2 += tf * tf * b * b;
    }
    this.s0[id] = s0;
    this.s1[id] = this.bulk ? 0 : s1;
    this.s2[id] = this.bulk ? 0 : s2;
    this.count++;
  }

  /**
   * {@link add} for a bulk load, in slices that yield to the event loop: a document
   * of tens of thousands of distinct terms took tens of milliseconds in one go. No
   * other change may be made to the index until it returns. Outside a bulk load it
   * is {@link add}.
   */
  async addInSlices(id: number, docTerms: readonly string[], slicer: Slicer): Promise<void> {
    if (!this.bulk) {
      this.add(id, docTerms);
      return;
    }
    this.checkId(id);
    const counts = new Map<string, number>();
    for (let i = 0; i < docTerms.length; i++) {
      const t = docTerms[i] as string;
      counts.set(t, (counts.get(t) ?? 0) + 1);
      if ((i & 4095) === 4095 && slicer.due) await slicer.pause();
    }
    let s0 = 0;
    let i = 0;
    for (const [term, tf] of counts) {
      this.post(term, id, tf);
      s0 += tf * tf;
      if ((++i & 1023) === 0 && slicer.due) await slicer.pause();
    }
    this.s0[id] = s0;
    this.s1[id] = 0;
    this.s2[id] = 0;
    this.count++;
  }

  /**
   * Removes document `id`, added with `docTerms` (the same terms, so that its
   * postings are found): the inverse of {@link add}, S1/S2 of the documents sharing a
   * term adjusted for df(t) going from n+1 to n. A term left with no document stays
   * in the vocabulary with df 0 (a solo term's document becomes -1, a list empties)
   * and counts as unknown. Returns false when `id` held none of them.
   */
  remove(id: number, docTerms: readonly string[]): boolean {
    const counts = new Map<string, number>();
    for (const t of docTerms) counts.set(t, (counts.get(t) ?? 0) + 1);
    let found = false;
    for (const term of counts.keys()) {
      const termId = this.vocab.get(term);
      if (termId === undefined) continue;
      const list = this.lists[termId];
      if (!list) {
        if (this.soloDoc[termId] !== id) continue;
        found = true;
        this.soloDoc[termId] = -1;
        this.soloTf[termId] = 0;
        continue;
      }
      const at = list.docs.indexOf(id);
      if (at < 0) continue;
      found = true;
      list.docs.splice(at, 1);
      list.tfs.splice(at, 1);
      if (this.bulk) continue;
      const n = list.docs.length;
      this.reweight(list, Math.log(2 + n), Math.log(1 + n));
    }
    if (!found && counts.size > 0) return false;
    this.s0[id] = 0;
    this.s1[id] = 0;
    this.s2[id] = 0;
    this.count--;
    return true;
  }

  /** The `topK` documents most similar to the query terms: best first, equal scores by ascending id; score 0 never. */
  search(queryTerms: readonly string[], topK: number): ScoredDoc[] {
    if (this.count === 0 || topK <= 0) return [];
    const A = Math.log(1 + this.count) + 1;
    const qtf = new Map<number, number>();
    for (const t of queryTerms) {
      const termId = this.vocab.get(t);
      // A term whose documents were all removed is one no document contains: ignored, as an unknown term is.
      if (termId !== undefined && this.df(termId) > 0) qtf.set(termId, (qtf.get(termId) ?? 0) + 1);
    }
    let qNorm2 = 0;
    let touchedCount = 0;
    const { acc, touched } = this;
    for (const [termId, tf] of qtf) {
      const list = this.lists[termId];
      const idf = A - Math.log(1 + (list ? list.docs.length : 1));
      const wq = tf * idf;
      qNorm2 += wq * wq;
      const w = wq * idf;
      if (!list) {
        const d = this.soloDoc[termId] as number;
        if (acc[d] === 0) touched[touchedCount++] = d;
        acc[d] = (acc[d] as number) + (this.soloTf[termId] as number) * w;
        continue;
      }
      const { docs, tfs } = list;
      for (let i = 0; i < docs.length; i++) {
        const d = docs[i] as number;
        if (acc[d] === 0) touched[touchedCount++] = d;
        acc[d] = (acc[d] as number) + (tfs[i] as number) * w;
      }
    }
    if (touchedCount === 0) return [];
    const qNorm = Math.sqrt(qNorm2);
    const top = new TopK(topK);
    for (let i = 0; i < touchedCount; i++) {
      const d = touched[i] as number;
      const dNorm2 = A * A * (this.s0[d] as number) - 2 * A * (this.s1[d] as number) + (this.s2[d] as number);
      const cosine = (acc[d] as number) / (qNorm * Math.sqrt(Math.max(dNorm2, Number.MIN_VALUE)));
      acc[d] = 0;
      top.offer(d, Math.round(Math.min(cosine, 1) * 10_000) / 10_000);
    }
    return top.sorted();
  }

  /** Number of documents holding term `termId`. */
  private df(termId: number): number {
    const list = this.lists[termId];
    return list ? list.docs.length : (this.soloDoc[termId] as number) < 0 ? 0 : 1;
  }

  private checkId(id: number): void {
    if (!Number.isInteger(id) || id < 0) throw new RangeError(`document id must be a non-negative integer, got ${id}`);
    this.ensureCapacity(id + 1);
  }

  /**
   * Records that document `id` holds `term` `tf` times and returns the term's new
   * `b = ln(1 + df)`. Outside a bulk load, df going from n to n+1 shifts S1/S2 of
   * every document already holding the term.
   */
  private post(term: string, id: number, tf: number): number {
    const termId = this.vocab.get(term);
    if (termId === undefined) {
      // A new term: df goes from 0 to 1, no other document to adjust.
      const newId = this.lists.length;
      this.ensureTermCapacity(newId + 1);
      this.vocab.set(term, newId);
      this.lists.push(undefined);
      this.soloDoc[newId] = id;
      this.soloTf[newId] = tf;
      return Math.LN2;
    }
    let list = this.lists[termId];
    if (!list && (this.soloDoc[termId] as number) < 0) {
      // A term whose only document was removed: df goes from 0 to 1 again.
      this.soloDoc[termId] = id;
      this.soloTf[termId] = tf;
      return Math.LN2;
    }
    if (!list) {
      list = { docs: [this.soloDoc[termId] as number], tfs: [this.soloTf[termId] as number] };
      this.lists[termId] = list;
    }
    const n = list.docs.length;
    const bNew = Math.log(2 + n);
    if (!this.bulk) this.reweight(list, Math.log(1 + n), bNew);
    list.docs.push(id);
    list.tfs.push(tf);
    return bNew;
  }

  private beginFinish(): void {
    this.bulk = false;
    this.s0.fill(0);
    this.s1.fill(0);
    this.s2.fill(0);
  }

  private finishTerm(termId: number): void {
    const list = this.lists[termId];
    if (!list) {
      const d = this.soloDoc[termId] as number;
      if (d < 0) return;
      const w = (this.soloTf[termId] as number) ** 2;
      this.s0[d] = (this.s0[d] as number) + w;
      this.s1[d] = (this.s1[d] as number) + w * Math.LN2;
      this.s2[d] = (this.s2[d] as number) + w * Math.LN2 * Math.LN2;
      return;
    }
    const b = Math.log(1 + list.docs.length);
    for (let i = 0; i < list.docs.length; i++) {
      const d = list.docs[i] as number;
      const tf = list.tfs[i] as number;
      const w = tf * tf;
      this.s0[d] = (this.s0[d] as number) + w;
      this.s1[d] = (this.s1[d] as number) + w * b;
      this.s2[d] = (this.s2[d] as number) + w * b * b;
    }
  }

  /** A term's document count changed, so its idf base went from `bOld` to `bNew`: moves the sums of the documents still in `list`. */
  private reweight(list: Postings, bOld: number, bNew: number): void {
    const d1 = bNew - bOld;
    const d2 = bNew * bNew - bOld * bOld;
    for (let i = 0; i < list.docs.length; i++) {
      const d = list.docs[i] as number;
      const tf2 = (list.tfs[i] as number) ** 2;
      this.s1[d] = (this.s1[d] as number) + tf2 * d1;
      this.s2[d] = (this.s2[d] as number) + tf2 * d2;
    }
  }

  private ensureCapacity(n: number): void {
    if (n <= this.s0.length) return;
    const cap = doubledTo(this.s0.length, n);
    this.s0 = grown(this.s0, new Float64Array(cap));
    this.s1 = grown(this.s1, new Float64Array(cap));
    this.s2 = grown(this.s2, new Float64Array(cap));
    this.acc = new Float64Array(cap);
    this.touched = new Int32Array(cap);
  }

  private ensureTermCapacity(n: number): void {
    if (n <= this.soloDoc.length) return;
    const cap = doubledTo(this.soloDoc.length, n);
    this.soloDoc = grown(this.soloDoc, new Int32Array(cap));
    this.soloTf = grown(this.soloTf, new Int32Array(cap));
  }
}

/** Above this k, collecting everything and sorting once beats insertion. */
const INSERTION_MAX_K = 64;

/** Keeps the best `k` (score desc, id asc) of what it is offered, without sorting everything. */
class TopK {
  private readonly ids: number[] = [];
  private readonly scores: number[] = [];
  private readonly collectAll: boolean;
  constructor(private readonly k: number) {
    this.collectAll = k > INSERTION_MAX_K;
  }

  offer(id: number, score: number): void {
    if (score <= 0) return;
    if (this.collectAll) {
      this.ids.push(id);
      this.scores.push(score);
      return;
    }
    const n = this.ids.length;
    if (n === this.k && !better(id, score, this.ids[n - 1] as number, this.scores[n - 1] as number)) return;
    // Insertion into a short sorted list; k is small (a handful) in practice.
    let i = n === this.k ? n - 1 : n;
    while (i > 0 && better(id, score, this.ids[i - 1] as number, this.scores[i - 1] as number)) {
      this.ids[i] = this.ids[i - 1] as number;
      this.scores[i] = this.scores[i - 1] as number;
      i--;
    }
    this.ids[i] = id;
    this.scores[i] = score;
  }

  sorted(): ScoredDoc[] {
    const out = this.ids.map((id, i) => ({ id, score: this.scores[i] as number }));
    if (!this.collectAll) return out;
    return out.sort((a, b) => b.score - a.score || a.id - b.id).slice(0, this.k);
  }
}

function better(idA: number, scoreA: number, idB: number, scoreB: number): boolean {
  return scoreA > scoreB || (scoreA === scoreB && idA < idB);
}

/** `cap` doubled until it holds `n`. */
function doubledTo(cap: number, n: number): number {
  let out = Math.max(cap, 1);
  while (out < n) out *= 2;
  return out;
}

/** `into` (a larger array of the same kind) with `from` copied to its start. */
function grown<A extends Float64Array<ArrayBuffer> | Int32Array<ArrayBuffer>>(from: A, into: A): A {
  into.set(from);
  return into;
}
