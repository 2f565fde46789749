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
 * A channel also keeps its newest records parsed (its tail, at most
 * {@link TAIL_CACHE_CHARS} characters and {@link TAIL_CACHE_MESSAGES} messages), filled
 * by a read from disk and extended by every append once on disk: ctx asks for the same
 * last messages with every request, and reading and parsing them again was a fifth of
 * mem's CPU per request (docs/benchmarks.md, round 15). A read the tail cannot answer
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

/** Channels whose file handle stays open while idle. */
export const MAX_OPEN_CHANNELS = 64;
/** Characters of content a channel's cached tail holds at most (so {@link MAX_OPEN_CHANNELS} of them stay within a few MB) ... */
export const TAIL_CACHE_CHARS = 64 * 1024;
/** ... and messages: ten times `[ctx] history_limit`'s default. */
export const TAIL_CACHE_MESSAGES = 500;

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

/** Messages read, and how many of those asked for were left out to stay within the byte bound. */
export interface HistoryPage {
  /** Oldest first. */
  messages: ChatMessage[];
  omitted: number;
  /** {@link messageBytes} of `messages`, added up. */
  bytes: number;
}

/** What {@link HistoryStore.get} returns. */
export interface HistoryRead extends HistoryPage {
  /** Bytes read from disk to answer (0: answered from the channel's cached tail). */
  bytesRead: number;
}

/** One history line, parsed: its messages and their encoded sizes once measured. */
interface TailRecord {
  readonly messages: readonly ChatMessage[];
  /** {@link messageBytes} of each message, measured when a read first needs it. */
  readonly sizes: (number | undefined)[];
  readonly chars: number;
}

/** A channel's newest records, oldest first: every record of the file after the last one left out. */
interface Tail {
  records: TailRecord[];
  /** True when no record of the file is left out: the tail is the whole history. */
  whole: boolean;
  chars: number;
  messages: number;
}

function tailRecord(messages: readonly ChatMessage[]): TailRecord {
  let chars = 0;
  for (const m of messages) chars += m.content.length;
  return { messages, sizes: new Array<number | undefined>(messages.length), chars };
}

/** Drops the oldest records of the tail until it is within its bounds (all of them if the newest alone is not). */
function trimTail(tail: Tail): void {
  let drop = 0;
  while (drop < tail.records.length && (tail.chars > TAIL_CACHE_CHARS || tail.messages > TAIL_CACHE_MESSAGES)) {
    const record = tail.records[drop++] as TailRecord;
    tail.chars -= record.chars;
    tail.messages -= record.messages.length;
  }
  if (drop === 0) return;
  tail.records.splice(0, drop);
  tail.whole = false;
}

/**
 * Gathers a page from records given newest first: the last `limit` messages (all when
 * 0), keeping the most recent ones whose encoded size stays within `maxBytes` and
 * counting the older ones asked for as omitted.
 */
class PageBuilder {
  private readonly kept: ChatMessage[] = []; // newest first
  private bytes = 0;
  private full = false;
  private omitted = 0;
  constructor(
    private readonly limit: number,
    private readonly maxBytes: number,
  ) {}

  /** True once the page has every message it asked for. */
  get done(): boolean {
    return this.limit > 0 && this.kept.length + this.omitted >= this.limit;
  }

  /** Takes a record's messages, newest first, until the page is done; `sizes` keeps what it measures. */
  take(messages: readonly ChatMessage[], sizes?: (number | undefined)[]): void {
    for (let i = messages.length - 1; i >= 0 && !this.done; i--) {
      const m = messages[i] as ChatMessage;
      if (!this.full) {
        let size = sizes?.[i];
        if (size === undefined) {
          size = messageBytes(m);
          if (sizes) sizes[i] = size;
        }
        if (this.bytes + size <= this.maxBytes) {
          this.kept.push(m);
          this.bytes += size;
          continue;
        }
        this.full = true;
      }
      this.omitted++;
    }
  }

  page(): HistoryPage {
    return { messages: this.kept.reverse(), omitted: this.omitted, bytes: this.bytes };
  }
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
    const tail = this.tail;
    if (tail) {
      for (const batch of batches) {
        // As the line stores them (role and content only), so that the tail holds what a read of the file would return.
        const record = tailRecord(batch.map(({ role, content }) => ({ role, content })));
        tail.records.push(record);
        tail.chars += record.chars;
        tail.messages += record.messages.length;
      }
      trimTail(tail);
    }
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
    if (this.tail) {
      const page = new PageBuilder(limit, maxBytes);
      const { records } = this.tail;
      for (let r = records.length - 1; r >= 0 && !page.done; r--) {
        const record = records[r] as TailRecord;
        page.take(record.messages, record.sizes);
      }
      if (page.done || this.tail.whole) return page.page();
    }
    const handle = this.handle as FileHandle;
    const page = new PageBuilder(limit, maxBytes);
    // The new tail: the newest records read, as long as they stay within its bounds (a long read keeps no more).
    const tail: Tail = { records: [], whole: true, chars: 0, messages: 0 };
    for await (const line of linesBackward(handle, this.size, stats)) {
      if (line.text.length === 0) continue;
      const messages = historyRecord(line.text);
      if (!messages) {
        this.log.error({ file: this.file, offset: line.start }, 'corrupt history line skipped');
        continue;
      }
      if (tail.whole) {
        const record = tailRecord(messages);
        if (tail.chars + record.chars <= TAIL_CACHE_CHARS && tail.messages + messages.length <= TAIL_CACHE_MESSAGES) {
          tail.records.push(record);
          tail.chars += record.chars;
          tail.messages += messages.length;
          page.take(messages, record.sizes);
        } else {
          tail.whole = false;
          page.take(messages);
        }
      } else {
        page.take(messages);
      }
      if (page.done) break;
    }
    tail.records.reverse();
    // Done before the start of the file: older records were not read.
    if (page.done) tail.whole = false;
    this.tail = tail;
    return page.page();
  }

  async clear(): Promise<void> {
    await this.closeHandle();
    await rm(this.file, { force: true });
    await fsyncDir(path.dirname(this.file));
    this.size = 0;
    this.tail = { records: [], whole: true, chars: 0, messages: 0 };
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
