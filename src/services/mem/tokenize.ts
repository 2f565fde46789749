/**
 * Text → index terms for the hard memory search: split on anything that is not a
 * Unicode letter or digit (natural's RegexpTokenizer with a Unicode pattern, so
 * "ünïcode" and "日本語" stay whole; natural's AggressiveTokenizer would drop
 * non-ASCII letters), lower-case, drop English stop words, Porter-stem.
 *
 * natural is imported by deep path only: its package root loads every submodule.
 */
import { RegexpTokenizer } from 'natural/lib/natural/tokenizers/regexp_tokenizer.js';
import PorterStemmer from 'natural/lib/natural/stemmers/porter_stemmer.js';
import { words as STOP_WORDS } from 'natural/lib/natural/util/stopwords.js';
import type { Slicer } from './slices.js';

const tokenizer = new RegexpTokenizer({ pattern: /[^\p{L}\p{N}]+/u });
const stopWords: ReadonlySet<string> = new Set(STOP_WORDS);

/** Stemming is the costly step and vocabularies are small: remember recent stems. */
const STEM_CACHE_MAX = 100_000;
const stems = new Map<string, string>();

/**
 * Longer tokens are indexed as they are, not stemmed. natural's Porter stemmer takes
 * time that grows much faster than the token: 1 s for 20,000 letters, 6.5 s for
 * 40,000, so one memory or query of a single long "word" held mem's thread for
 * minutes. No English word comes near this length.
 */
export const MAX_STEMMED_CHARS = 64;

function stem(token: string): string {
  if (token.length > MAX_STEMMED_CHARS) return token;
  let out = stems.get(token);
  if (out === undefined) {
    if (stems.size >= STEM_CACHE_MAX) stems.clear();
    out = PorterStemmer.stem(token);
    stems.set(token, out);
  }
  return out;
}

/** The index terms of `text`, in order, with repeats (term frequency counts them). */
export function terms(text: string): string[] {
  const out: string[] = [];
  for (const token of tokenizer.tokenize(text.toLowerCase())) {
    if (token === '' || stopWords.has(token)) continue;
    out.push(stem(token));
  }
  return out;
}

/**
 * Characters of one memory or one query that are indexed or searched: the head of a
 * longer text. Tokenising and stemming run on mem's only thread (about 0.25 s per MiB
 * here); without a bound, one multi-megabyte store or query held every other client
 * for seconds. Words past the head of a very long memory are not searchable.
 */
export const MAX_INDEXED_CHARS = 256 * 1024;

/** {@link terms} of the first {@link MAX_INDEXED_CHARS} characters of `text`. */
export function indexedTerms(text: string): string[] {
  return terms(text.length > MAX_INDEXED_CHARS ? text.slice(0, MAX_INDEXED_CHARS) : text);
}

/** Characters tokenised between two checks of the slice clock, in {@link indexedTermsInSlices}. */
const PIECE_CHARS = 16 * 1024;

function isBreak(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x09 || code === 0x0d;
}

/**
 * Where a piece of `text` from `start` may end near `end`: just after a space, tab or
 * line break. No word spans such a cut, and lower-casing sees the same neighbours
 * either side (whitespace is neither cased nor case-ignorable, which the final-sigma
 * rule looks through), so the pieces' terms are the whole text's terms.
 */
function pieceEnd(text: string, start: number, end: number): number {
  if (end >= text.length) return text.length;
  for (let i = end - 1; i > start; i--) if (isBreak(text.charCodeAt(i))) return i + 1;
  for (let i = end; i < text.length; i++) if (isBreak(text.charCodeAt(i))) return i + 1;
  return text.length;
}

/**
 * Exactly {@link indexedTerms}, for the background index build: a long head is
 * tokenised in pieces with a check of the slice clock between them (256 KiB of
 * distinct words took about 100 ms in one go).
 */
export async function indexedTermsInSlices(text: string, slicer: Slicer): Promise<string[]> {
  const head = text.length > MAX_INDEXED_CHARS ? text.slice(0, MAX_INDEXED_CHARS) : text;
  if (head.length <= PIECE_CHARS) return terms(head);
  const out: string[] = [];
  for (let start = 0; start < head.length;) {
    const end = pieceEnd(head, start, start + PIECE_CHARS);
    for (const term of terms(head.slice(start, end))) out.push(term);
    start = end;
    if (slicer.due) await slicer.pause();
  }
  return out;
}
