/**
 * A channel's tail: its newest history records kept parsed (history.ts), at most
 * {@link TAIL_CACHE_CHARS} characters and {@link TAIL_CACHE_MESSAGES} messages. ctx asks
 * mem for the same last messages of a channel with every request; reading the file's end
 * and parsing it again each time was about a fifth of mem's samples in a profile, and
 * keeping the records took 10.5-14.4 % off mem's CPU per request (docs/benchmarks.md,
 * round 15). And the page a read answers, from the tail or from the file.
 */
import { contentChars, messageBytes, type ChatMessage } from '../../runtime/index.js';

/**
 * Characters of content a channel's tail holds at most: 4 Mi characters over history.ts's 64
 * open channels (8 MiB as two-byte strings), a few channels more while busy ...
 */
export const TAIL_CACHE_CHARS = 64 * 1024;
/** ... and messages: ten times `[ctx] history_limit`'s default. */
export const TAIL_CACHE_MESSAGES = 500;

/** Messages read, and how many of those asked for were left out to stay within the byte bound. */
export interface HistoryPage {
  /** Oldest first. */
  messages: ChatMessage[];
  omitted: number;
  /** {@link messageBytes} of `messages`, added up. */
  bytes: number;
}

/** One history line, parsed: its messages and their encoded sizes once measured. */
interface TailRecord {
  readonly messages: readonly ChatMessage[];
  /** {@link messageBytes} of each message, measured when a read first needs it. */
  readonly sizes: (number | undefined)[];
  readonly chars: number;
}

/** A channel's newest records, oldest first: every record of the file after the last one left out. */
export interface Tail {
  records: TailRecord[];
  /** True when no record of the file is left out: the tail is the whole history. */
  whole: boolean;
  chars: number;
  messages: number;
}

function tailRecord(messages: readonly ChatMessage[]): TailRecord {
  return { messages, sizes: new Array<number | undefined>(messages.length), chars: contentChars(messages) };
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
export class PageBuilder {
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

/** A tail with nothing in it: of an empty history, until {@link endRead} says otherwise. */
export function newTail(): Tail {
  return { records: [], whole: true, chars: 0, messages: 0 };
}

/** The page from the tail alone; undefined when it does not hold every message asked for. */
export function answerFromTail(tail: Tail, limit: number, maxBytes: number): HistoryPage | undefined {
  const page = new PageBuilder(limit, maxBytes);
  const { records } = tail;
  for (let r = records.length - 1; r >= 0 && !page.done; r--) {
    const record = records[r] as TailRecord;
    page.take(record.messages, record.sizes);
  }
  return page.done || tail.whole ? page.page() : undefined;
}

/** Adds the records just written to the file, oldest first, and drops the oldest beyond the bounds. */
export function extendTail(tail: Tail, batches: readonly (readonly ChatMessage[])[]): void {
  for (const batch of batches) {
    // As the line stores them (role and content only), so that the tail holds what a read of the file would return.
    const record = tailRecord(batch.map(({ role, content }) => ({ role, content })));
    tail.records.push(record);
    tail.chars += record.chars;
    tail.messages += record.messages.length;
  }
  trimTail(tail);
}

/**
 * During a read from the end of the file, newest first: keeps the record while the tail stays
 * within its bounds, and returns the array its sizes are to be kept in; from the first record
 * that does not fit on, keeps nothing (a long read keeps no more than the tail holds).
 */
export function keepOlder(tail: Tail, messages: readonly ChatMessage[]): (number | undefined)[] | undefined {
  if (!tail.whole) return undefined;
  const record = tailRecord(messages);
  if (tail.chars + record.chars > TAIL_CACHE_CHARS || tail.messages + messages.length > TAIL_CACHE_MESSAGES) {
    tail.whole = false;
    return undefined;
  }
  tail.records.push(record);
  tail.chars += record.chars;
  tail.messages += messages.length;
  return record.sizes;
}

/** Ends a read: the records kept in file order; `stoppedEarly`, the read ended before the start of the file. */
export function endRead(tail: Tail, stoppedEarly: boolean): void {
  tail.records.reverse();
  if (stoppedEarly) tail.whole = false;
}
