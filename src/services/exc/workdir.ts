/**
 * A fresh private working directory per run, removed afterwards whatever the code
 * did to it. Its name carries exc's pid (`zino-exc-<pid>-XXXXXX`) so that a later
 * exc can tell the directories of a killed exc from those of a live one.
 */
import { chmod, chown, mkdtemp, readdir, rm, writeFile, lstat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Logger } from '../../runtime/index.js';
import { isAlive } from './kill.js';

/** Prefix of every run directory under the system temp dir. */
export const WORKDIR_PREFIX = 'zino-exc-';

/**
 * Creates a 0700 directory under the system temp dir and writes `code` to `fileName`
 * in it, both owned by `owner` when given. `dirGroup`: the directory's group instead
 * of the owner's, with mode 0710 (it may enter, nothing more).
 */
export async function createWorkdir(fileName: string, code: string, owner?: { uid: number; gid: number }, dirGroup?: number): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), `${WORKDIR_PREFIX}${process.pid}-`));
  await chmod(dir, 0o700);
  const file = path.join(dir, fileName);
  await writeFile(file, code, { mode: 0o600 });
  if (owner) {
    await chown(file, owner.uid, owner.gid);
    await chown(dir, owner.uid, dirGroup ?? owner.gid);
    if (dirGroup !== undefined) await chmod(dir, 0o710);
  }
  return dir;
}

/** Removes `dir`, first restoring permissions the code may have taken away. */
export async function removeWorkdir(dir: string): Promise<void> {
  try {
    await rm(dir, { recursive: true, force: true, maxRetries: 2 });
  } catch {
    await makeWritable(dir);
    await rm(dir, { recursive: true, force: true, maxRetries: 2 });
  }
}

async function makeWritable(dir: string): Promise<void> {
  try {
    await chmod(dir, 0o700);
    for (const entry of await readdir(dir)) {
      const full = path.join(dir, entry);
      if ((await lstat(full)).isDirectory()) await makeWritable(full);
    }
  } catch {
    // best effort; rm reports what is left
  }
}

/** What {@link sweepStaleWorkdirs} needs to know. */
export interface SweepOptions {
  /** Whether a directory owned by `uid` is ours: exc's own, and when exc runs as root `nobody`'s and the run uids'. */
  owners: (uid: number) => boolean;
  /** When this exc started (ms since the epoch): nothing newer is touched. */
  startedAt: number;
  /**
   * How long a run directory can live (validation, timeout, kill grace): a directory
   * without a pid in its name (older versions) is stale only when older than this.
   */
  maxRunMs: number;
  log: Logger;
  /** @default os.tmpdir() */
  dir?: string;
}

/**
 * Removes run directories a killed exc left behind: named `zino-exc-…`, a real
 * directory owned by one of `owners`, older than this process, and either carrying
 * the pid of a process that is gone or (no pid in the name) older than a run can
 * last. Returns the directories removed; each is logged.
 */
export async function sweepStaleWorkdirs(options: SweepOptions): Promise<string[]> {
  const base = options.dir ?? tmpdir();
  let names: string[];
  try {
    names = await readdir(base);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!name.startsWith(WORKDIR_PREFIX)) continue;
    const dir = path.join(base, name);
    try {
      const stats = await lstat(dir);
      if (!stats.isDirectory() || !options.owners(stats.uid) || stats.mtimeMs >= options.startedAt) continue;
      const pid = /^(\d+)-/.exec(name.slice(WORKDIR_PREFIX.length))?.[1];
      const stale = pid !== undefined ? Number(pid) !== process.pid && !isAlive(Number(pid)) : stats.mtimeMs < options.startedAt - options.maxRunMs;
      if (!stale) continue;
      await removeWorkdir(dir);
      removed.push(dir);
      options.log.warn({ dir }, 'stale run directory removed (left by an exc that was killed)');
    } catch (err) {
      options.log.warn({ dir, reason: (err as Error).message }, 'cannot remove a stale run directory');
    }
  }
  return removed;
}
