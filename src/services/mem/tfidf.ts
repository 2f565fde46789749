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
 */

interface Postings {
  docs: number[];
  tfs: number[];
}

/** One hit of {@link TfIdfIndex.search}. */
export interface ScoredDoc {
  id: number;
  /** Cosine similarity rounded to 4 decimal places. */
  score: number;
}

const INITIAL_CAPACITY = 1024;

/** See the module comment. Document ids are non-negative integers, each added once. */
export class TfIdfIndex {
  private readonly vocab = new Map<string, number>();
  private readonly postings: Postings[] = [];
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

  /** Ends a bulk load by recomputing every document's S1/S2 in one pass over the postings. */
  finish(): void {
    this.bulk = false;
    this.s1.fill(0);
    this.s2.fill(0);
    for (const list of this.postings) {
      const b = Math.log(1 + list.docs.length);
      for (let i = 0; i < list.docs.length; i++) {
        const d = list.docs[i] as number;
        const tf = list.tfs[i] as number;
        const w = tf * tf * b;
        this.s1[d] = (this.s1[d] as number) + w;
        this.s2[d] = (this.s2[d] as number) + w * b;
      }
    }
  }

  /** Adds document `id` with its terms (repeats count as term frequency). */
  add(id: number, docTerms: readonly string[]): void {
    if (!Number.isInteger(id) || id < 0) throw new RangeError(`document id must be a non-negative integer, got ${id}`);
    this.ensureCapacity(id + 1);
    const counts = new Map<string, number>();
    for (const t of docTerms) counts.set(t, (counts.get(t) ?? 0) + 1);
    let s0 = 0;
    let s1 = 0;
    let s2 = 0;
    for (const [term, tf] of counts) {
      let termId = this.vocab.get(term);
      if (termId === undefined) {
        termId = this.postings.length;
        this.vocab.set(term, termId);
        this.postings.push({ docs: [], tfs: [] });
      }
      const list = this.postings[termId] as Postings;
      if (!this.bulk) {
        // df(t) goes from n to n+1: shift S1/S2 of every document already holding t.
        const n = list.docs.length;
        const bOld = Math.log(1 + n);
        const bNew = Math.log(2 + n);
        const d1 = bNew - bOld;
        const d2 = bNew * bNew - bOld * bOld;
        for (let i = 0; i < n; i++) {
          const d = list.docs[i] as number;
          const tf2 = (list.tfs[i] as number) ** 2;
          this.s1[d] = (this.s1[d] as number) + tf2 * d1;
          this.s2[d] = (this.s2[d] as number) + tf2 * d2;
        }
        s1 += tf * tf * bNew;
        s2 += tf * tf * bNew * bNew;
      }
      list.docs.push(id);
      list.tfs.push(tf);
      s0 += tf * tf;
    }
    this.s0[id] = s0;
    this.s1[id] = s1;
    this.s2[id] = s2;
    this.count++;
  }

  /**
   * Removes document `id`, added with `docTerms` (the same terms, so that its
   * postings are found): the inverse of {@link add}, S1/S2 of the documents sharing a
   * term adjusted for df(t) going from n+1 to n. Returns false when `id` held none of them.
   */
  remove(id: number, docTerms: readonly string[]): boolean {
    const counts = new Map<string, number>();
    for (const t of docTerms) counts.set(t, (counts.get(t) ?? 0) + 1);
    let found = false;
    for (const term of counts.keys()) {
      const termId = this.vocab.get(term);
      if (termId === undefined) continue;
      const list = this.postings[termId] as Postings;
      const at = list.docs.indexOf(id);
      if (at < 0) continue;
      found = true;
      list.docs.splice(at, 1);
      list.tfs.splice(at, 1);
      if (this.bulk) continue;
      const n = list.docs.length;
      const bOld = Math.log(2 + n);
      const bNew = Math.log(1 + n);
      const d1 = bNew - bOld;
      const d2 = bNew * bNew - bOld * bOld;
      for (let i = 0; i < n; i++) {
        const d = list.docs[i] as number;
        const tf2 = (list.tfs[i] as number) ** 2;
        this.s1[d] = (this.s1[d] as number) + tf2 * d1;
        this.s2[d] = (this.s2[d] as number) + tf2 * d2;
      }
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
      if (termId !== undefined && (this.postings[termId] as Postings).docs.length > 0) qtf.set(termId, (qtf.get(termId) ?? 0) + 1);
    }
    let qNorm2 = 0;
    let touchedCount = 0;
    const { acc, touched } = this;
    for (const [termId, tf] of qtf) {
      const list = this.postings[termId] as Postings;
      const idf = A - Math.log(1 + list.docs.length);
      const wq = tf * idf;
      qNorm2 += wq * wq;
      const w = wq * idf;
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

  private ensureCapacity(n: number): void {
    if (n <= this.s0.length) return;
    let cap = this.s0.length;
    while (cap < n) cap *= 2;
    const grow = (a: Float64Array<ArrayBuffer>): Float64Array<ArrayBuffer> => {
      const b = new Float64Array(cap);
      b.set(a);
      return b;
    };
    this.s0 = grow(this.s0);
    this.s1 = grow(this.s1);
    this.s2 = grow(this.s2);
    this.acc = new Float64Array(cap);
    this.touched = new Int32Array(cap);
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
