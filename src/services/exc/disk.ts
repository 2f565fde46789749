/**
 * What a run writes to disk: its working directory's usage, summed from the blocks
 * of every file in it (sparse holes do not count, what the disk holds does).
 */
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';

/** How often a run's working directory is measured, in milliseconds. */
export const DISK_POLL_MS = 250;

/** Bytes `dir` occupies on disk; files that vanish while it counts are skipped. */
export async function diskUsage(dir: string): Promise<number> {
  let total = 0;
  const pending = [dir];
  for (let current = pending.pop(); current !== undefined; current = pending.pop()) {
    let entries: string[];
    try {
      entries = await readdir(current);
    } catch {
      continue;
    }
    for (const entry of entries) {
      const full = path.join(current, entry);
      try {
        const stats = await lstat(full);
        total += stats.blocks * 512;
        if (stats.isDirectory()) pending.push(full);
      } catch {
        // Removed meanwhile.
      }
    }
  }
  return total;
}
