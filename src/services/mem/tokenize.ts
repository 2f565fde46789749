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

const tokenizer = new RegexpTokenizer({ pattern: /[^\p{L}\p{N}]+/u });
const stopWords: ReadonlySet<string> = new Set(STOP_WORDS);

/** Stemming is the costly step and vocabularies are small: remember recent stems. */
const STEM_CACHE_MAX = 100_000;
const stems = new Map<string, string>();

function stem(token: string): string {
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
