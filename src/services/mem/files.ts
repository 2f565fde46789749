/**
 * File-system primitives of mem's durability rules: fsync of a directory (so a
 * created, renamed or removed entry survives a power loss), whole-file replace by
 * write-temp-then-rename, positioned reads that do not stop short.
 *
 * Small reads and writes run synchronously on the event loop ({@link SYNC_IO_BYTES}):
 * they hit the page cache and take microseconds, while each asynchronous one is a
 * round trip through libuv's thread pool (a worker woken by futex, an eventfd back,
 * an epoll wake-up) that cost more CPU than the read itself. Larger ones, and every
 * fsync (milliseconds on a real disk), still go through the pool.
 */
import { readSync, writeSync } from 'node:fs';
import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import path from 'node:path';

/** Suffix of temporary files; names of live files never contain a dot before it, see naming.ts. */
export const TMP_SUFFIX = '.tmp';

/** fsyncs a directory so that entries created, renamed or removed in it are durable. */
export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Most bytes one operation reads or writes synchronously on the event loop (a
 * history's tail block, an append, a search hit); past it, through the thread pool,
 * so that one large read or write does not hold up every other request.
 */
export const SYNC_IO_BYTES = 64 * 1024;

/**
 * Writes all of `data` at the handle's position (appends on an `a`/`a+` handle):
 * synchronously when it is at most {@link SYNC_IO_BYTES}. Never fsyncs.
 */
export async function writeAll(handle: FileHandle, data: Buffer): Promise<void> {
  let offset = 0;
  if (data.length <= SYNC_IO_BYTES) {
    // fd is -1 once the handle is closed: the write fails (EBADF) instead of reaching another file.
    while (offset < data.length) offset += writeSync(handle.fd, data, offset, data.length - offset);
    return;
  }
  while (offset < data.length) {
    const { bytesWritten } = await handle.write(data, offset, data.length - offset);
    offset += bytesWritten;
  }
}

/**
 * {@link readAt} done synchronously, for reads of at most {@link SYNC_IO_BYTES}
 * (callers bound what one operation reads this way).
 */
export function readAtSync(handle: FileHandle, position: number, length: number): Buffer {
  const buf = Buffer.allocUnsafe(length);
  let got = 0;
  while (got < length) {
    const bytesRead = readSync(handle.fd, buf, got, length - got, position + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return got === length ? buf : buf.subarray(0, got);
}

/** Reads exactly `length` bytes at `position` (fewer only at end of file), through the thread pool. */
export async function readAt(handle: FileHandle, position: number, length: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(length);
  let got = 0;
  while (got < length) {
    const { bytesRead } = await handle.read(buf, got, length - got, position + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return got === length ? buf : buf.subarray(0, got);
}

/**
 * Replaces `file` with `data` atomically: a reader (or a restart after SIGKILL or
 * power loss) sees the old content or the new, never a mix. Writes `file.tmp`,
 * fsyncs it, renames it over `file`, fsyncs the directory. `data` may come in parts
 * (written one after another, never joined in memory).
 */
export async function replaceFile(file: string, data: Buffer | string | readonly Buffer[]): Promise<void> {
  const tmp = `${file}${TMP_SUFFIX}`;
  const handle = await open(tmp, 'w', 0o600);
  try {
    const parts = typeof data === 'string' ? [Buffer.from(data, 'utf8')] : Buffer.isBuffer(data) ? [data] : data;
    for (const part of parts) await writeAll(handle, part);
    await handle.sync();
  } catch (err) {
    await handle.close().catch(() => undefined);
    await rm(tmp, { force: true });
    throw err;
  }
  await handle.close();
  await rename(tmp, file);
  await fsyncDir(path.dirname(file));
}

/** True when `err` is a missing-file error. */
export function isNotFound(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
}
