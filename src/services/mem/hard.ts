/**
 * Hard memories: one append-only JSON Lines file, `hard_memories.jsonl`, one line
 * per entry: `{"id":N,"messages":[…],"tag":"…"|null}`. `id` is the entry's 0-based
 * index, written into the record so that a skipped corrupt line never renumbers
 * the entries after it.
 *
 * The TF-IDF index (tfidf.ts) and a table of each entry's byte offset live in
 * memory; the entries themselves stay on disk and a search reads only its hits.
 * `store_hard` is group-committed (queue.ts): the id is assigned in arrival order,
 * the line is fdatasynced, then the entry joins the index and the caller gets its id.
 *
 * Start-up does not wait for the index. {@link HardStore.open} repairs a torn tail,
 * reads the last line's id (the next id follows it) and returns; the index is built
 * in the background, in slices that yield to the event loop (slices.ts): from the
 * snapshot `hard_memories.index` when one matches the log (snapshot.ts), then from the
 * lines after it. Meanwhile stores are taken and acknowledged as usual (the builder
 * reads their lines from the file like any other), and a search waits for the index.
 * Once ready, a snapshot is written whenever the log has grown past the last one by
 * a sixteenth of its size (at least 1 MiB), and at close.
 *
 * `forget_hard` removes an entry: out of the index at once, then its line is
 * overwritten in place, same length, with a tombstone `{"id":N,"forgotten":true}`
 * padded with spaces, and fdatasynced. The one write that is not an append: the
 * memory's text must leave the disk, not only the index, and a rewrite of the whole
 * file per forget would cost its size. A crash mid-write leaves the old line, the
 * tombstone, or a line that does not parse, which the load skips: in no case does
 * a forgotten memory come back half-written, and ids never move. A forget waits for
 * the index, removes the snapshot (it holds the entry's terms, and its hash of the
 * log no longer matches) and stops snapshots until the next start, which rebuilds
 * the index from the log and snapshots again.
 */
import { createHash, type Hash } from 'node:crypto';
import { addAbortListener } from 'node:events';
import { open, readFile, rm, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { ZinoError, castToError, chatMessages, isChatMessage, type ChatMessage, type Logger } from '../../runtime/index.js';
import type { HardIndexStatus, HardMemoryResult } from '../../protocol/mem.js';
import { fsyncDir, isNotFound, readAt, readAtSync, replaceFile, SYNC_IO_BYTES, writeAll } from './files.js';
import { linesBackward, linesForward, parseLine, repairTail, type Line } from './lines.js';
import { OpQueue } from './queue.js';
import { Slicer, WorkStopped } from './slices.js';
import { SNAPSHOT_FILE, SnapshotInvalid, decodeSnapshot, encodeSnapshot } from './snapshot.js';
import { TfIdfIndex } from './tfidf.js';
import { indexedTerms, indexedTermsInSlices } from './tokenize.js';

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

/** The id a line takes: an entry's or a tombstone's; `undefined` for anything else. */
function lineId(text: Buffer): number | undefined {
  return hardRecord(text)?.id ?? forgottenId(text);
}

/** Serialises one entry as a line; `extra` fields (the import marker) go first. */
export function hardLine(entry: HardEntry, extra: Record<string, unknown> = {}): string {
  return `${JSON.stringify(Object.assign({}, extra, { id: entry.id, messages: entry.messages, tag: entry.tag }))}\n`;
}

/** The searchable text of an entry: its messages' contents and its tag. */
export function entryText(messages: readonly ChatMessage[], tag: string | null): string {
  return [...messages.map((m) => m.content), tag ?? ''].join('\n');
}

/** A snapshot is written once the log has grown past the last one by this many bytes (or a sixteenth of the log, when more). */
export const SNAPSHOT_MIN_TAIL_BYTES = 1024 * 1024;
const SNAPSHOT_TAIL_FRACTION = 16;
/** Block size of the hash check of the log under a snapshot. */
const HASH_BLOCK_BYTES = 1024 * 1024;
const NEWLINE = Buffer.from('\n');

/** Options of {@link HardStore.open}. */
export interface HardStoreOptions {
  /** Load and write index snapshots. @default true */
  snapshots?: boolean | undefined;
  /** Time one slice of background work may take, in milliseconds. @default SLICE_MS */
  sliceMs?: number | undefined;
}

/** The id of the last valid entry or tombstone in `[0, size)` (blank and invalid lines skipped), or -1. */
async function lastValidId(handle: FileHandle, size: number): Promise<number> {
  for await (const line of linesBackward(handle, size)) {
    if (line.text.length === 0) continue;
    const id = lineId(line.text);
    if (id !== undefined) return id;
  }
  return -1;
}

/** See the module comment. */
export class HardStore {
  private index = new TfIdfIndex();
  /** Byte offset and length of each entry's line, by id; -1 for an id with no entry. */
  private offsets: number[] = [];
  private lengths: number[] = [];
  private readonly queue = new OpQueue<{ messages: ChatMessage[]; tag: string | null }, number>((items) => this.commit(items));
  /** The id the next store gets. */
  private nextId: number;
  /** The builder's next acceptable id: a line with a smaller one is out of order. */
  private registerNext = 0;
  /** Bytes of a failed write are still at the end of the file (see dropPartialWrite). */
  private strayTail = false;
  private readonly snapshots: boolean;
  private readonly sliceMs: number | undefined;
  private readonly snapshotFile: string;

  private ready = false;
  private failure: ZinoError | undefined;
  private readonly readyPromise: Promise<void>;
  private resolveReady!: () => void;
  private rejectReady!: (err: ZinoError) => void;
  private building: Promise<void> = Promise.resolve();
  private stopping = false;
  /** SHA-256 of the log's bytes so far (of what the builder has read, until ready); undefined once unknown. */
  private hash: Hash | undefined = createHash('sha256');
  /** Bytes of the log the builder has read. */
  private scanned = 0;
  /** Bytes of the log covered by the snapshot the build started from. */
  private fromSnapshot = 0;
  /** Bytes of the log covered by the newest snapshot on disk. */
  private snapshotCovers = 0;
  private snapshotting: Promise<void> | undefined;
  private buildMs: number | undefined;
  /** The forget in progress, if any: they run one at a time. */
  private forgetting: Promise<void> = Promise.resolve();
  /** A forget rewrote the log in place: no snapshot until the next start. */
  private forgotSince = false;

  private constructor(
    private readonly file: string,
    private handle: FileHandle,
    private size: number,
    /** Size of the log when it was opened: lines before it are checked against lastId. */
    private readonly openSize: number,
    /** Id of the last valid line at open; no line before it may carry a larger one. */
    private readonly lastId: number,
    private readonly log: Logger,
    options: HardStoreOptions,
  ) {
    this.nextId = lastId + 1;
    this.snapshots = options.snapshots ?? true;
    this.sliceMs = options.sliceMs;
    this.snapshotFile = path.join(path.dirname(file), SNAPSHOT_FILE);
    this.readyPromise = new Promise<void>((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    // Nobody may be waiting when the build fails; whenReady reports the failure itself.
    this.readyPromise.catch(() => undefined);
  }

  /**
   * Opens (creating) the store and drops a torn tail; the index is built in the
   * background (see the module comment). Stores are taken at once.
   */
  static async open(file: string, log: Logger, options: HardStoreOptions = {}): Promise<HardStore> {
    const handle = await open(file, 'a+', 0o600);
    try {
      const { size: rawSize } = await handle.stat();
      if (rawSize === 0) await fsyncDir(path.dirname(file));
      const size = await repairTail(handle, rawSize, log, file, (l) => lineId(l) !== undefined);
      const store = new HardStore(file, handle, size, size, await lastValidId(handle, size), log, options);
      store.building = store.build();
      return store;
    } catch (err) {
      await handle.close().catch(() => undefined);
      throw err;
    }
  }

  /** Number of entries in the index. */
  get count(): number {
    return this.index.size;
  }

  /** True while the index is being built: a search would wait for it. */
  get indexing(): boolean {
    return !this.ready && !this.failure;
  }

  /** Where the index stands: building (with how far it got), ready, or failed. */
  get indexStatus(): HardIndexStatus {
    const state = this.ready ? 'ready' : this.failure ? 'failed' : 'building';
    return {
      state,
      entries: this.index.size,
      log_bytes: this.size,
      indexed_bytes: this.ready ? this.size : this.scanned,
      snapshot_bytes: this.fromSnapshot,
      ...(this.buildMs === undefined ? {} : { build_ms: this.buildMs }),
    };
  }

  /** Resolves once the index is ready; rejects when it could not be built or `signal` fires first. */
  async whenReady(signal?: AbortSignal): Promise<void> {
    if (this.ready) return;
    if (this.failure) throw this.failure;
    if (!signal) return this.readyPromise;
    signal.throwIfAborted();
    let disposable: Disposable | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        disposable = addAbortListener(signal, () => reject(signal.reason));
        this.readyPromise.then(resolve, reject);
      });
    } finally {
      disposable?.[Symbol.dispose]();
    }
  }

  /** Stores an entry; resolves with its id once it is on disk (and searchable once the index is ready). */
  store(messages: ChatMessage[], tag: string | null): Promise<number> {
    return this.queue.append({ messages, tag });
  }

  /** The `topK` entries most similar to `query`; none for a query without indexable words. Waits for the index. */
  async search(query: string, topK: number, signal?: AbortSignal): Promise<HardMemoryResult[]> {
    await this.whenReady(signal);
    const hits = this.index.search(indexedTerms(query), topK);
    // The best hits are read synchronously up to SYNC_IO_BYTES in all (files.ts), the rest through the thread pool.
    let syncBytes = 0;
    const found = await Promise.all(
      hits.map(async ({ id, score }) => {
        const offset = this.offsets[id] as number;
        const length = this.lengths[id] as number;
        const now = syncBytes + length <= SYNC_IO_BYTES;
        if (now) syncBytes += length;
        const entry = hardRecord(now ? readAtSync(this.handle, offset, length) : await readAt(this.handle, offset, length));
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
   * such entry (never stored, or already forgotten). Forgets run one at a time, once
   * the index is ready.
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
    await this.whenReady();
    const offset = this.offsets[id];
    const length = this.lengths[id];
    if (offset === undefined || length === undefined || offset < 0) return false;
    const entry = hardRecord(await readAt(this.handle, offset, length));
    if (!entry) throw new ZinoError('INTERNAL', `hard memory ${id} could not be read back`);
    const terms = indexedTerms(entryText(entry.messages, entry.tag));
    // No snapshot from now on (one being written finishes first, then goes): it would hold the entry's terms.
    this.forgotSince = true;
    await this.snapshotting;
    await rm(this.snapshotFile, { force: true });
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

  /** Stops the build, waits for queued stores and a snapshot being written, writes a last one when due, closes the file. */
  async close(): Promise<void> {
    this.stopping = true;
    await this.building;
    await this.queue.drained();
    await this.snapshotting;
    if (this.snapshotDue(SNAPSHOT_MIN_TAIL_BYTES)) await this.writeSnapshot();
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
        // Once ready, commits keep the hash; they do not know these bytes. (Before, the builder reads them.)
        if (this.ready) this.hash = undefined;
      }
    }
  }

  /** The background build; never rejects (a failure is kept for whenReady). */
  private async build(): Promise<void> {
    const started = performance.now();
    const slicer = new Slicer(this.sliceMs, () => this.stopping);
    this.log.info({ bytes: this.openSize }, 'hard memory index building');
    try {
      const covered = this.snapshots ? await this.loadSnapshot(slicer) : 0;
      this.fromSnapshot = covered;
      this.index.beginBulk();
      const end = await this.indexLines(covered, slicer, () => undefined);
      await this.index.finishInSlices(slicer);
      // Lines stored while the norms were computed join one by one; ready the moment the builder has caught up.
      await this.indexLines(end, slicer, () => this.becomeReady(started, slicer.pauses));
    } catch (err) {
      if (err instanceof WorkStopped) return;
      this.failure = new ZinoError('INTERNAL', 'the hard memory index could not be built (see the mem log)', { cause: err });
      this.log.error({ err: castToError(err), file: this.file }, 'hard memory index could not be built');
      this.rejectReady(this.failure);
    }
  }

  private becomeReady(started: number, pauses: number): void {
    this.ready = true;
    this.buildMs = Math.round(performance.now() - started);
    this.snapshotCovers = this.fromSnapshot;
    this.log.info(
      {
        entries: this.index.size,
        terms: this.index.vocabularySize,
        bytes: this.size,
        fromSnapshotBytes: this.fromSnapshot,
        buildMs: this.buildMs,
        pauses,
      },
      'hard memory index built',
    );
    this.resolveReady();
    this.maybeSnapshot();
  }

  /**
   * Reads and indexes the lines from `from` to the end of the file, including lines
   * stored while it runs, and calls `caughtUp` in the same turn of the event loop in
   * which it found nothing left to read (so no store can slip in between).
   */
  private async indexLines(from: number, slicer: Slicer, caughtUp: () => void): Promise<number> {
    let pos = from;
    for (;;) {
      if (pos >= this.size) {
        caughtUp();
        return pos;
      }
      const end = this.size;
      let trailing = 0;
      for await (const line of linesForward(this.handle, pos, end, (bytes) => (trailing = bytes))) {
        this.hash?.update(line.text).update(NEWLINE);
        await this.indexLine(line, slicer);
        this.scanned = line.start + line.text.length + 1;
        if (slicer.due) await slicer.pause();
      }
      pos = end - trailing;
      if (trailing > 0 && this.size === end) {
        // A failed write's bytes that could not be cut off, not yet ended by the next write's newline: skip them.
        pos = end;
        this.hash = undefined;
      }
    }
  }

  private async indexLine(line: Line, slicer: Slicer): Promise<void> {
    if (line.text.length === 0) return;
    const forgotten = forgottenId(line.text);
    if (forgotten !== undefined && forgotten >= this.registerNext && !(line.start < this.openSize && forgotten > this.lastId)) {
      this.skip(forgotten);
      return;
    }
    const entry = hardRecord(line.text);
    const reason = !entry
      ? 'not a valid entry'
      : entry.id < this.registerNext
        ? 'id out of order'
        : line.start < this.openSize && entry.id > this.lastId
          ? "id above the last line's"
          : undefined;
    if (!entry || reason) {
      this.log.error({ file: this.file, offset: line.start, reason }, 'corrupt hard memory line skipped');
      return;
    }
    this.place(entry, line.start, line.text.length);
    await this.index.addInSlices(entry.id, await indexedTermsInSlices(entryText(entry.messages, entry.tag), slicer), slicer);
  }

  /**
   * Loads the snapshot when there is one that matches the log; returns the log bytes
   * it covers (0 without one). A snapshot that does not match is removed.
   */
  private async loadSnapshot(slicer: Slicer): Promise<number> {
    const file = this.snapshotFile;
    let bytes: Buffer;
    try {
      bytes = await readFile(file);
    } catch (err) {
      if (!isNotFound(err)) this.log.warn({ err: castToError(err), file }, 'hard memory index snapshot unreadable; rebuilding from the log');
      return 0;
    }
    try {
      const data = await decodeSnapshot(bytes, slicer);
      if (data.coversBytes > this.openSize) {
        throw new SnapshotInvalid(`it covers ${data.coversBytes} bytes of the log, which has ${this.openSize} (stale)`);
      }
      if (data.nextId > this.lastId + 1) throw new SnapshotInvalid(`its next id ${data.nextId} is past the log's last id ${this.lastId} (stale)`);
      const hash = createHash('sha256');
      for (let pos = 0; pos < data.coversBytes; pos += HASH_BLOCK_BYTES) {
        hash.update(await readAt(this.handle, pos, Math.min(HASH_BLOCK_BYTES, data.coversBytes - pos)));
        this.scanned = Math.min(pos + HASH_BLOCK_BYTES, data.coversBytes);
        if (slicer.due) await slicer.pause();
      }
      if (hash.copy().digest('hex') !== data.coversSha256) {
        throw new SnapshotInvalid(`the log's first ${data.coversBytes} bytes are not the ones it was taken from (stale)`);
      }
      this.index = await TfIdfIndex.fromImage(data.index, data.nextId, slicer);
      this.offsets = Array.from(data.offsets);
      this.lengths = Array.from(data.lengths);
      this.registerNext = data.nextId;
      this.hash = hash;
      this.log.info({ file, coversBytes: data.coversBytes, entries: data.index.count }, 'hard memory index snapshot loaded');
      return data.coversBytes;
    } catch (err) {
      if (!(err instanceof SnapshotInvalid)) throw err;
      this.log.warn({ file, reason: err.message }, 'hard memory index snapshot ignored; rebuilding from the log');
      this.scanned = 0;
      await rm(file, { force: true });
      return 0;
    }
  }

  /** True when a snapshot could be written and the log has grown past the last one by at least `minBytes`. */
  private snapshotDue(minBytes: number): boolean {
    return (
      this.snapshots && this.ready && !this.forgotSince && this.hash !== undefined && this.nextId <= 0xffffffff && this.size - this.snapshotCovers >= minBytes
    );
  }

  private maybeSnapshot(): void {
    if (this.snapshotting || this.stopping || !this.snapshotDue(Math.max(SNAPSHOT_MIN_TAIL_BYTES, this.size / SNAPSHOT_TAIL_FRACTION))) return;
    this.snapshotting = this.writeSnapshot().finally(() => {
      this.snapshotting = undefined;
    });
  }

  /** Writes a snapshot of the index as it is now (in slices; stores go on meanwhile). Never rejects. */
  private async writeSnapshot(): Promise<void> {
    const started = performance.now();
    const hash = this.hash;
    if (!hash) return;
    // Captured in one turn: everything up to `coversBytes` is in the index, every id below `nextId` is settled.
    const coversBytes = this.size;
    const coversSha256 = hash.copy().digest('hex');
    const nextId = this.nextId;
    const offsets = Float64Array.from(this.offsets);
    const lengths = Float64Array.from(this.lengths);
    try {
      const slicer = new Slicer(this.sliceMs);
      const image = await this.index.toImage(nextId, slicer);
      const parts = await encodeSnapshot({ coversBytes, coversSha256, nextId, offsets, lengths, index: image }, slicer);
      await replaceFile(this.snapshotFile, parts);
      this.snapshotCovers = coversBytes;
      const snapshotBytes = parts.reduce((n, p) => n + p.length, 0);
      this.log.info({ entries: image.count, coversBytes, snapshotBytes, ms: Math.round(performance.now() - started) }, 'hard memory index snapshot written');
    } catch (err) {
      // Not fatal: the log is the truth; the next start indexes more of it. Try again after as much growth again.
      this.snapshotCovers = coversBytes;
      this.log.warn({ err: castToError(err), file: this.snapshotFile }, 'hard memory index snapshot not written');
    }
  }

  /** A forgotten id: no entry, but its number stays taken. */
  private skip(id: number): void {
    for (let each = this.offsets.length; each <= id; each++) {
      this.offsets.push(-1);
      this.lengths.push(-1);
    }
    this.registerNext = id + 1;
  }

  /** Records where an entry's line is (ids in between get none); the caller indexes it. */
  private place(entry: HardEntry, offset: number, length: number): void {
    for (let id = this.offsets.length; id < entry.id; id++) {
      this.offsets.push(-1);
      this.lengths.push(-1);
    }
    this.offsets.push(offset);
    this.lengths.push(length);
    this.registerNext = entry.id + 1;
  }

  private register(entry: HardEntry, offset: number, length: number): void {
    this.place(entry, offset, length);
    this.index.add(entry.id, indexedTerms(entryText(entry.messages, entry.tag)));
  }

  private async commit(items: { messages: ChatMessage[]; tag: string | null }[]): Promise<number[]> {
    const entries = items.map((item, i) => ({ id: this.nextId + i, ...item }));
    const lines = entries.map((e) => Buffer.from(hardLine(e), 'utf8'));
    // After a failed write whose partial bytes could not be cut off, start on a fresh line.
    const lead = this.strayTail ? NEWLINE : Buffer.alloc(0);
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
    // Before the index is ready the builder reads these lines from the file (and hashes them) like any other.
    if (this.ready) this.hash?.update(lead);
    let offset = this.size;
    entries.forEach((entry, i) => {
      const line = lines[i] as Buffer;
      if (this.ready) {
        this.hash?.update(line);
        this.register(entry, offset, line.length - 1);
      }
      offset += line.length;
    });
    this.size = offset;
    this.nextId += entries.length;
    this.maybeSnapshot();
    return entries.map((e) => e.id);
  }
}
