/**
 * Chat histories: one append-only JSON Lines file per channel,
 * `history/<name>.jsonl` (name from naming.ts), one line per `append_history`
 * request: `{"m":[{"role","content"},…]}`. A request's messages are therefore
 * stored together or not at all.
 *
 * Appends never read or rewrite the file (O(1) in the history length); concurrent
 * appends to one channel are group-committed in arrival order (queue.ts) and
 * acknowledged after fdatasync. `get_history` reads the file backwards from the end
 * until it has enough messages, or as many as one reply can hold (the rest are only
 * counted). `clear_history` unlinks the file and
 * fsyncs the directory: atomic, so a crash leaves the whole history or none.
 *
 * Open files are bounded: at most {@link MAX_OPEN_CHANNELS} idle channels keep their
 * handle; the least recently used are closed.
 *
 * A channel also keeps its newest records parsed (its tail, tail.ts), filled by a read
 * from disk and extended by every append once on disk; a read the tail cannot answer
 * (more messages than it holds) reads the file as before and refills it. mem is the only
 * writer of its files, so what the tail holds is what the file holds.
 */
import { open, rm, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { ZinoError, castToError, chatMessages, isChatMessage, messageBytes, type ChatMessage, type Logger } from '../../runtime/index.js';
import { fsyncDir, isNotFound, writeAll } from './files.js';
import { linesBackward, parseLine, repairTail, type ReadStats } from './lines.js';
import { channelFileName } from './naming.js';
import { OpQueue } from './queue.js';
import { answerFromTail, endRead, extendTail, keepOlder, newTail, PageBuilder, type HistoryPage, type Tail } from './tail.js';

/** Channels whose file handle stays open while idle. */
export const MAX_OPEN_CHANNELS = 64;

/** The messages of one history line, or `undefined` when it is not a valid record. */
export function historyRecord(text: Buffer): ChatMessage[] | undefined {
  const record = parseLine(text);
  const m = record?.m;
  if (!Array.isArray(m) || !m.every(isChatMessage)) return undefined;
  return chatMessages(m);
}

/** Serialises one history line. */
export function historyLine(messages: readonly ChatMessage[], extra: Record<string, unknown> = {}): string {
  const record: Record<string, unknown> = Object.assign({}, extra);
  record.m = messages.map(({ role, content }) => ({ role, content }));
  return `${JSON.stringify(record)}\n`;
}

/** What {@link HistoryStore.get} returns. */
export interface HistoryRead extends HistoryPage {
  /** Bytes read from disk to answer (0: answered from the channel's cached tail). */
  bytesRead: number;
}

class Channel {
  handle: FileHandle | undefined;
  size = 0;
  /** The newest records, parsed; undefined until a read fills it, and again whenever the file is closed. */
  private tail: Tail | undefined;
  /** Appends, reads and clears of this channel, in arrival order. */
  readonly queue: OpQueue<ChatMessage[], void> = new OpQueue((items) => this.commit(items));
  constructor(
    readonly file: string,
    readonly log: Logger,
  ) {}

  /** Opens the file (creating it when `create`), dropping a torn tail first. False when it does not exist. */
  async ensureOpen(create: boolean): Promise<boolean> {
    if (this.handle) return true;
    if (!create) {
      try {
        await stat(this.file);
      } catch (err) {
        if (isNotFound(err)) return false;
        throw err;
      }
    }
    // Always O_APPEND: every write lands at the end whatever the handle's position.
    const handle = await open(this.file, 'a+', 0o600);
    try {
      const { size } = await handle.stat();
      this.size = await repairTail(handle, size, this.log, this.file, (l) => historyRecord(l) !== undefined);
      if (create && size === 0) await fsyncDir(path.dirname(this.file));
    } catch (err) {
      await handle.close().catch(() => undefined);
      throw err;
    }
    this.handle = handle;
    return true;
  }

  async commit(batches: ChatMessage[][]): Promise<void[]> {
    const data = Buffer.from(batches.map((m) => historyLine(m)).join(''), 'utf8');
    await this.ensureOpen(true);
    const handle = this.handle as FileHandle;
    try {
      await writeAll(handle, data);
      await handle.datasync();
    } catch (err) {
      // Cut back whatever part of the batch reached the file; none of it is acknowledged.
      this.log.error({ err: castToError(err), file: this.file }, 'history write failed');
      await handle.truncate(this.size).catch(() => undefined);
      await this.closeHandle();
      throw new ZinoError('INTERNAL', 'could not store the history (see the mem log)', { cause: err });
    }
    this.size += data.length;
    if (this.tail) extendTail(this.tail, batches);
    return batches.map(() => undefined);
  }

  /**
   * The last `limit` messages (all when 0), oldest first, keeping only the most recent
   * ones whose encoded size stays within `maxBytes`; past that bound the rest asked for
   * are only counted. From the cached tail when it holds them all, else read backwards
   * from the end of the file, which refills the tail.
   */
  async read(limit: number, maxBytes: number, stats: ReadStats): Promise<HistoryPage> {
    if (!(await this.ensureOpen(false))) return { messages: [], omitted: 0, bytes: 0 };
    const cached = this.tail && answerFromTail(this.tail, limit, maxBytes);
    if (cached) return cached;
    const handle = this.handle as FileHandle;
    const page = new PageBuilder(limit, maxBytes);
    const tail = newTail();
    for await (const line of linesBackward(handle, this.size, stats)) {
      if (line.text.length === 0) continue;
      const messages = historyRecord(line.text);
      if (!messages) {
        this.log.error({ file: this.file, offset: line.start }, 'corrupt history line skipped');
        continue;
      }
      page.take(messages, keepOlder(tail, messages));
      if (page.done) break;
    }
    // Done before the start of the file: older records were not read.
    endRead(tail, page.done);
    this.tail = tail;
    return page.page();
  }

  async clear(): Promise<void> {
    await this.closeHandle();
    await rm(this.file, { force: true });
    await fsyncDir(path.dirname(this.file));
    this.size = 0;
    this.tail = newTail();
  }

  /** Closes the file; the tail goes with it (a failed write, a clear, an eviction). */
  async closeHandle(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    this.tail = undefined;
    await handle?.close().catch(() => undefined);
  }
}

/** All channels' histories under one directory. */
export class HistoryStore {
  /** Channels by id, least recently used first. */
  private readonly channels = new Map<string, Channel>();

  constructor(
    private readonly dir: string,
    private readonly log: Logger,
  ) {}

  /** Appends `messages` as one record; resolves once it is on disk. */
  async append(channelId: string, messages: ChatMessage[]): Promise<void> {
    if (messages.length === 0) return;
    await this.channel(channelId).queue.append(messages);
  }

  /**
   * The last `limit` messages (all when 0), oldest first: the most recent of them
   * whose encoded sizes ({@link messageBytes}) add up to at most `maxBytes`; `omitted`
   * counts the older ones asked for but left out.
   */
  async get(channelId: string, limit: number, maxBytes = Number.MAX_SAFE_INTEGER): Promise<HistoryRead> {
    const stats: ReadStats = { bytesRead: 0 };
    const channel = this.channel(channelId);
    const page = await channel.queue.exclusive(() => channel.read(limit, maxBytes, stats));
    return { messages: page.messages, omitted: page.omitted, bytes: page.bytes, bytesRead: stats.bytesRead };
  }

  /** Deletes the channel's history. */
  async clear(channelId: string): Promise<void> {
    const channel = this.channel(channelId);
    await channel.queue.exclusive(() => channel.clear());
  }

  /** Waits for queued operations and closes every file. */
  async close(): Promise<void> {
    const all = [...this.channels.values()];
    this.channels.clear();
    await Promise.all(
      all.map(async (c) => {
        await c.queue.drained();
        await c.closeHandle();
      }),
    );
  }

  private channel(id: string): Channel {
    let channel = this.channels.get(id);
    if (channel) {
      this.channels.delete(id);
    } else {
      channel = new Channel(path.join(this.dir, channelFileName(id)), this.log);
    }
    this.channels.set(id, channel);
    if (this.channels.size > MAX_OPEN_CHANNELS) this.evict(id);
    return channel;
  }

  /**
   * Forgets idle channels, oldest first, until the bound holds. Busy ones are
   * skipped, and so is `keep` (about to be used): two live objects for one file
   * would break the one-queue-per-file ordering.
   */
  private evict(keep: string): void {
    for (const [id, channel] of this.channels) {
      if (this.channels.size <= MAX_OPEN_CHANNELS) break;
      if (id === keep || !channel.queue.idle) continue;
      this.channels.delete(id);
      void channel.closeHandle(); // swallows close errors itself
    }
  }
}
