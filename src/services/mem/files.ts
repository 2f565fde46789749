/**
 * File-system primitives of mem's durability rules: fsync of a directory (so a
 * created, renamed or removed entry survives a power loss), whole-file replace by
 * write-temp-then-rename, positioned reads that do not stop short.
 */
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

/** Writes all of `data` at the handle's position (appends on an `a`/`a+` handle). */
export async function writeAll(handle: FileHandle, data: Buffer): Promise<void> {
  let offset = 0;
  while (offset < data.length) {
    const { bytesWritten } = await handle.write(data, offset, data.length - offset);
    offset += bytesWritten;
  }
}

/** Reads exactly `length` bytes at `position` (fewer only at end of file). */
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
