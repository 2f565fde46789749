/**
 * Soft memory: one string in `soft_memory.txt` (the contract's file name and
 * format: the raw UTF-8 text, so a contract-layout file is read as is). It is
 * small and replaced whole, so `set_soft` writes a temporary file, fsyncs it and
 * renames it over the old one: a crash leaves the old string or the new, never a
 * mix. The current value is kept in memory.
 */
import { readFile } from 'node:fs/promises';
import { isNotFound, replaceFile } from './files.js';
import { OpQueue } from './queue.js';

/** File name of the soft memory inside `data_dir`. */
export const SOFT_FILE = 'soft_memory.txt';

/** See the module comment. */
export class SoftMemory {
  /** Serialises replacements so that the last `set` to arrive is the one on disk. */
  private readonly queue = new OpQueue<never, never>(() => Promise.resolve([]));

  private constructor(
    private readonly file: string,
    private content: string,
  ) {}

  /** Reads the file (an absent file is the empty string). */
  static async open(file: string): Promise<SoftMemory> {
    try {
      return new SoftMemory(file, await readFile(file, 'utf8'));
    } catch (err) {
      if (isNotFound(err)) return new SoftMemory(file, '');
      throw err;
    }
  }

  /** The current string. */
  get(): string {
    return this.content;
  }

  /** Replaces the string durably. */
  set(content: string): Promise<void> {
    return this.queue.exclusive(async () => {
      await replaceFile(this.file, content);
      this.content = content;
    });
  }

  /** Waits for a replacement in progress. */
  close(): Promise<void> {
    return this.queue.drained();
  }
}
