/**
 * Reading JSON Lines files: forwards in blocks (whole-file loads), backwards in
 * blocks (the tail of a history without touching the rest), and the torn-tail
 * check run before a file is used.
 *
 * Every record is written as one `JSON + "\n"` in a single write, so after a crash
 * only the last line can be incomplete. {@link repairTail} finds such a line (no
 * trailing newline, or a last line that does not parse) and truncates it away; the
 * lines before it are untouched.
 */
import type { FileHandle } from 'node:fs/promises';
import type { Logger } from '../../runtime/index.js';
import { readAt, readAtSync, SYNC_IO_BYTES } from './files.js';

const NL = 0x0a;
/** Block size of the readers. */
export const BLOCK_BYTES = 64 * 1024;
/**
 * Size of the first block read backwards: a history's last few dozen messages (what
 * ctx asks for) usually fit, and a smaller block is a smaller copy and allocation.
 */
export const TAIL_BLOCK_BYTES = 16 * 1024;

/** One line of a file, without its newline. */
export interface Line {
  /** The line's bytes. Valid only until the generator resumes. */
  text: Buffer;
  /** Byte offset of the line's first byte. */
  start: number;
}

/** Counts bytes read, for the logs and tests ("reads only the tail"). */
export interface ReadStats {
  bytesRead: number;
}

/**
 * The lines of `[0, end)` from last to first. `end` must be 0 or follow a newline.
 * Blank lines are yielded too (as empty buffers); callers skip them. The last
 * {@link TAIL_BLOCK_BYTES} (most reads need no more) are read synchronously
 * (files.ts); the rest of the last `blockBytes`, and the blocks before, through the
 * thread pool, so a long scan gives the event loop its turns.
 */
export async function* linesBackward(handle: FileHandle, end: number, stats: ReadStats = { bytesRead: 0 }, blockBytes = BLOCK_BYTES): AsyncGenerator<Line> {
  if (end <= 0) return;
  let pos = end - 1; // the final newline is not part of any line
  let tail: Buffer[] = []; // bytes of the current line found in later blocks, in file order
  while (pos > 0) {
    const first = pos === end - 1;
    // After the tail block, the rest of the last `blockBytes`, then whole blocks: never more bytes than blocks alone.
    const len = Math.min(first ? Math.min(blockBytes, TAIL_BLOCK_BYTES) : blockBytes - ((end - 1 - pos) % blockBytes), pos);
    const start = pos - len;
    const buf = first && len <= SYNC_IO_BYTES ? readAtSync(handle, start, len) : await readAt(handle, start, len);
    stats.bytesRead += buf.length;
    let segEnd = buf.length;
    for (let i = buf.lastIndexOf(NL, segEnd - 1); i >= 0; i = segEnd > 0 ? buf.lastIndexOf(NL, segEnd - 1) : -1) {
      const piece = buf.subarray(i + 1, segEnd);
      yield { text: tail.length > 0 ? Buffer.concat([piece, ...tail]) : piece, start: start + i + 1 };
      tail = [];
      segEnd = i;
    }
    if (segEnd > 0) tail.unshift(buf.subarray(0, segEnd));
    pos = start;
  }
  yield { text: Buffer.concat(tail), start: 0 };
}

/**
 * The complete lines of `[start, end)` in order. Bytes after the last newline are
 * not a line: they are reported through `onTrailing` (a torn tail).
 */
export async function* linesForward(
  handle: FileHandle,
  start: number,
  end: number,
  onTrailing?: (bytes: number, offset: number) => void,
  blockBytes = 1024 * 1024,
): AsyncGenerator<Line> {
  let pos = start;
  let carry: Buffer[] = [];
  let carryStart = start;
  while (pos < end) {
    const buf = await readAt(handle, pos, Math.min(blockBytes, end - pos));
    if (buf.length === 0) break;
    let lineStart = 0;
    for (let nl = buf.indexOf(NL); nl >= 0; nl = buf.indexOf(NL, lineStart)) {
      const piece = buf.subarray(lineStart, nl);
      yield { text: carry.length > 0 ? Buffer.concat([...carry, piece]) : piece, start: carry.length > 0 ? carryStart : pos + lineStart };
      carry = [];
      lineStart = nl + 1;
    }
    if (lineStart < buf.length) {
      if (carry.length === 0) carryStart = pos + lineStart;
      carry.push(buf.subarray(lineStart));
    }
    pos += buf.length;
  }
  if (carry.length > 0)
    onTrailing?.(
      carry.reduce((n, b) => n + b.length, 0),
      carryStart,
    );
}

/** Parses one line as a JSON object; `undefined` when it is not one. */
export function parseLine(text: Buffer): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text.toString('utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Drops a torn last line: bytes after the last newline, or a last line that is not
 * a JSON object (`isRecord` decides). Truncates the file to the end of the last
 * good line, logs a warning, and returns the new size. Never touches earlier lines.
 */
export async function repairTail(
  handle: FileHandle,
  size: number,
  log: Logger,
  file: string,
  isRecord: (line: Buffer) => boolean = (l) => parseLine(l) !== undefined,
): Promise<number> {
  if (size === 0) return 0;
  const last = await readAt(handle, size - 1, 1);
  let goodEnd = size;
  let reason: string | undefined;
  if (last[0] !== NL) {
    goodEnd = await lastNewlineEnd(handle, size);
    reason = 'no trailing newline';
  }
  // The last complete line must parse too (a crash can leave garbage that ends in a newline).
  for await (const line of linesBackward(handle, goodEnd)) {
    if (line.text.length === 0 || isRecord(line.text)) break;
    goodEnd = line.start;
    reason ??= 'last line is not a valid record';
    break;
  }
  if (goodEnd === size) return size;
  await handle.truncate(goodEnd);
  await handle.sync();
  log.warn({ file, droppedBytes: size - goodEnd, keptBytes: goodEnd, reason }, 'torn last line dropped');
  return goodEnd;
}

/** Offset just past the last newline before `size` (0 when there is none). */
async function lastNewlineEnd(handle: FileHandle, size: number): Promise<number> {
  let pos = size;
  while (pos > 0) {
    const len = Math.min(BLOCK_BYTES, pos);
    const buf = await readAt(handle, pos - len, len);
    const i = buf.lastIndexOf(NL);
    if (i >= 0) return pos - len + i + 1;
    pos -= len;
  }
  return 0;
}
