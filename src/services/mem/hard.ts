/**
 * Hard memories: one append-only JSON Lines file, `hard_memories.jsonl`, one line
 * per entry: `{"id":N,"messages":[…],"tag":"…"|null}`. `id` is the entry's 0-based
 * index, written into the record so that a skipped corrupt line never renumbers
 * the entries after it.
 *
 * At start the file is read once to build the TF-IDF index (tfidf.ts) and a table
 * of each entry's byte offset; the entries themselves stay on disk and a search
 * reads only its hits. `store_hard` is group-committed (queue.ts): the id is
 * assigned in arrival order, the line is fdatasynced, then the entry joins the
 * index and the caller gets its id.
 *
 * `forget_hard` removes an entry: out of the index at once, then its line is
 * overwritten in place, same length, with a tombstone `{"id":N,"forgotten":true}`
 * padded with spaces, and fdatasynced. The one write that is not an append: the
 * memory's text must leave the disk, not only the index, and a rewrite of the whole
 * file per forget would cost its size. A crash mid-write leaves the old line, the
 * tombstone, or a line that does not parse, which the load skips: in no case does
 * a forgotten memory come back half-written, and ids never move.
 */
import { open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { ZinoError, castToError, chatMessages, isChatMessage, type ChatMessage, type Logger } from '../../runtime/index.js';
import type { HardMemoryResult } from '../../protocol/mem.js';
import { fsyncDir, readAt, writeAll } from './files.js';
import { linesForward, parseLine, repairTail } from './lines.js';
import { OpQueue } from './queue.js';
import { TfIdfIndex } from './tfidf.js';
import { indexedTerms } from './tokenize.js';

/** File name of the hard memory store inside `data_dir`. */
export const HARD_FILE = 'hard_memories.jsonl';

/** One stored entry. */
export interface HardEntry {
  id: number;
  messages: ChatMessage[];
  tag: string | null;
}

/** Parses one line of the store, or `undefined` when it is not a valid entry (a tombstone is not one either). */
export function hardRecord(text: Buffer): HardEntry | undefined {
  const record = parseLine(text);
  if (!record || record.forgotten !== undefined) return undefined;
  const { id, messages, tag } = record;
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0) return undefined;
  if (tag !== null && tag !== undefined && typeof tag !== 'string') return undefined;
  if (!Array.isArray(messages) || !messages.every(isChatMessage)) return undefined;
  return { id, messages: chatMessages(messages), tag: tag ?? null };
}

/** The id of a tombstone line (a forgotten entry), or `undefined` when the line is not one. */
export function forgottenId(text: Buffer): number | undefined {
  const record = parseLine(text);
  if (record?.forgotten !== true) return undefined;
  const { id } = record;
  return typeof id === 'number' && Number.isSafeInteger(id) && id >= 0 ? id : undefined;
}

/** Serialises one entry as a line; `extra` fields (the import marker) go first. */
export function hardLine(entry: HardEntry, extra: Record<string, unknown> = {}): string {
  return `${JSON.stringify({ ...extra, id: entry.id, messages: entry.messages, tag: entry.tag })}\n`;
}

/** The searchable text of an entry: its messages' contents and its tag. */
export function entryText(messages: readonly ChatMessage[], tag: string | null): string {
  return [...messages.map((m) => m.content), tag ?? ''].join('\n');
}

/** Figures of a load, for the start-up log. */
export interface HardLoadStats {
  entries: number;
  terms: number;
  bytes: number;
  ms: number;
}

/** See the module comment. */
export class HardStore {
  private readonly index = new TfIdfIndex();
  /** Byte offset and length of each entry's line, by id; -1 for an id with no entry. */
  private readonly offsets: number[] = [];
  private readonly lengths: number[] = [];
  private readonly queue = new OpQueue<{ messages: ChatMessage[]; tag: string | null }, number>((items) => this.commit(items));
  private nextId = 0;
  /** The forget in progress, if any: they run one at a time. */
  private forgetting: Promise<void> = Promise.resolve();
  /** Bytes of a failed write are still at the end of the file (see dropPartialWrite). */
  private strayTail = false;

  private constructor(
    private readonly file: string,
    private handle: FileHandle,
    private size: number,
    private readonly log: Logger,
  ) {}

  /** Opens (creating) the store, drops a torn tail, and builds the index. */
  static async open(file: string, log: Logger): Promise<{ store: HardStore; stats: HardLoadStats }> {
    const started = performance.now();
    const handle = await open(file, 'a+', 0o600);
    try {
      const { size: rawSize } = await handle.stat();
      if (rawSize === 0) await fsyncDir(path.dirname(file));
      const size = await repairTail(handle, rawSize, log, file, (l) => hardRecord(l) !== undefined || forgottenId(l) !== undefined);
      const store = new HardStore(file, handle, size, log);
      await store.load();
      const stats = { entries: store.index.size, terms: store.index.vocabularySize, bytes: size, ms: Math.round(performance.now() - started) };
      return { store, stats };
    } catch (err) {
      await handle.close().catch(() => undefined);
      throw err;
    }
  }

  /** Number of entries. */
  get count(): number {
    return this.index.size;
  }

  /** Stores an entry; resolves with its id once it is on disk and searchable. */
  store(messages: ChatMessage[], tag: string | null): Promise<number> {
    return this.queue.append({ messages, tag });
  }

  /** The `topK` entries most similar to `query`; none for a query without indexable words. */
  async search(query: string, topK: number): Promise<HardMemoryResult[]> {
    const hits = this.index.search(indexedTerms(query), topK);
    const found = await Promise.all(
      hits.map(async ({ id, score }) => {
        const entry = hardRecord(await readAt(this.handle, this.offsets[id] as number, this.lengths[id] as number));
        // Forgotten while this search read it: it is gone, as it would have been a moment later.
        if (!entry && this.offsets[id] === -1) return undefined;
        if (!entry) throw new ZinoError('INTERNAL', `hard memory ${id} could not be read back`);
        return { messages: entry.messages, score, id, tag: entry.tag };
      }),
    );
    return found.filter((r) => r !== undefined);
  }

  /**
   * Forgets entry `id` (see the module comment); resolves false when there is no
   * such entry (never stored, or already forgotten). Forgets run one at a time.
   */
  forget(id: number): Promise<boolean> {
    const run = this.forgetting.then(() => this.forgetNow(id));
    this.forgetting = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  private async forgetNow(id: number): Promise<boolean> {
    const offset = this.offsets[id];
    const length = this.lengths[id];
    if (offset === undefined || length === undefined || offset < 0) return false;
    const entry = hardRecord(await readAt(this.handle, offset, length));
    if (!entry) throw new ZinoError('INTERNAL', `hard memory ${id} could not be read back`);
    const terms = indexedTerms(entryText(entry.messages, entry.tag));
    // Out of the index first: from now on no search finds it.
    this.index.remove(id, terms);
    this.offsets[id] = -1;
    this.lengths[id] = -1;
    // Always shorter than the entry it replaces: `"forgotten":true` against at least `"messages":[],"tag":null`.
    const tombstone = Buffer.from(JSON.stringify({ id, forgotten: true }).padEnd(length, ' '), 'utf8');
    let writer: FileHandle | undefined;
    try {
      // Not the store's own handle: it appends (O_APPEND), and a positional write there would append too.
      writer = await open(this.file, 'r+');
      for (let done = 0; done < tombstone.length;) {
        const { bytesWritten } = await writer.write(tombstone, done, tombstone.length - done, offset + done);
        done += bytesWritten;
      }
      await writer.datasync();
    } catch (err) {
      this.log.error({ err: castToError(err), file: this.file, id }, 'hard memory could not be forgotten on disk');
      this.offsets[id] = offset;
      this.lengths[id] = length;
      this.index.add(id, terms);
      throw new ZinoError('INTERNAL', `could not forget hard memory ${id} (see the mem log)`, { cause: err });
    } finally {
      await writer?.close();
    }
    return true;
  }

  /** Waits for queued stores and closes the file. */
  async close(): Promise<void> {
    await this.queue.drained();
    await this.handle.close();
  }

  /**
   * Cuts off what a failed write left behind. When even that fails, the bytes stay:
   * the known size moves past them (so offsets stay right) and the next write starts
   * on a new line; the stray line is skipped, with an error, at the next load.
   */
  private async dropPartialWrite(): Promise<void> {
    try {
      await this.handle.truncate(this.size);
    } catch {
      const size = await this.handle.stat().then(
        (s) => s.size,
        () => this.size,
      );
      if (size > this.size) {
        this.size = size;
        this.strayTail = true;
      }
    }
  }

  private async load(): Promise<void> {
    this.index.beginBulk();
    for await (const line of linesForward(this.handle, 0, this.size)) {
      if (line.text.length === 0) continue;
      const forgotten = forgottenId(line.text);
      if (forgotten !== undefined && forgotten >= this.nextId) {
        this.skip(forgotten);
        continue;
      }
      const entry = hardRecord(line.text);
      if (!entry || entry.id < this.nextId) {
        this.log.error({ file: this.file, offset: line.start, reason: entry ? 'id out of order' : 'not a valid entry' }, 'corrupt hard memory line skipped');
        continue;
      }
      this.register(entry, line.start, line.text.length);
    }
    this.index.finish();
  }

  /** A forgotten id: no entry, but its number stays taken. */
  private skip(id: number): void {
    for (let each = this.offsets.length; each <= id; each++) {
      this.offsets.push(-1);
      this.lengths.push(-1);
    }
    this.nextId = id + 1;
  }

  private register(entry: HardEntry, offset: number, length: number): void {
    for (let id = this.offsets.length; id < entry.id; id++) {
      this.offsets.push(-1);
      this.lengths.push(-1);
    }
    this.offsets.push(offset);
    this.lengths.push(length);
    this.index.add(entry.id, indexedTerms(entryText(entry.messages, entry.tag)));
    this.nextId = entry.id + 1;
  }

  private async commit(items: { messages: ChatMessage[]; tag: string | null }[]): Promise<number[]> {
    const entries = items.map((item, i) => ({ id: this.nextId + i, ...item }));
    const lines = entries.map((e) => Buffer.from(hardLine(e), 'utf8'));
    // After a failed write whose partial bytes could not be cut off, start on a fresh line.
    const lead = this.strayTail ? Buffer.from('\n') : Buffer.alloc(0);
    try {
      await writeAll(this.handle, Buffer.concat([lead, ...lines]));
      await this.handle.datasync();
    } catch (err) {
      this.log.error({ err: castToError(err), file: this.file }, 'hard memory write failed');
      await this.dropPartialWrite();
      throw new ZinoError('INTERNAL', 'could not store the hard memory (see the mem log)', { cause: err });
    }
    this.size += lead.length;
    this.strayTail = false;
    let offset = this.size;
    entries.forEach((entry, i) => {
      const length = (lines[i] as Buffer).length;
      this.register(entry, offset, length - 1);
      offset += length;
    });
    this.size = offset;
    return entries.map((e) => e.id);
  }
}
