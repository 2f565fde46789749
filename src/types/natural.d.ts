/**
 * Types of the natural modules ZINO imports by deep path. natural ships types only
 * for its package root, and `import 'natural'` loads every submodule (it prints
 * dotenv banners and loads database drivers), so mem imports single files.
 */
declare module 'natural/lib/natural/tokenizers/regexp_tokenizer.js' {
  /** Options of {@link RegexpTokenizer}. */
  export interface RegexpTokenizerOptions {
    /** Splits on matches (gaps) or returns the matches. */
    pattern?: RegExp;
    /** True: `pattern` matches the gaps between tokens. @default true */
    gaps?: boolean;
    discardEmpty?: boolean;
  }
  /** Splits text with a regular expression. */
  export class RegexpTokenizer {
    constructor(options?: RegexpTokenizerOptions);
    tokenize(text: string): string[];
  }
}

declare module 'natural/lib/natural/stemmers/porter_stemmer.js' {
  /** The Porter stemmer (English); lower-cases its input. */
  const PorterStemmer: { stem(token: string): string };
  export default PorterStemmer;
}

declare module 'natural/lib/natural/util/stopwords.js' {
  /** natural's English stop words, lower case. */
  export const words: string[];
}
