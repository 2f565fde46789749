/**
 * Copying the package into the prefix so that the prefix is never half old,
 * half new: the new tree is built beside it (`<prefix>.new-<pid>`), then the two
 * are swapped by renaming, and the old tree removed. Running services keep the
 * files they have open; `systemctl try-restart` then moves them to the new code.
 */
import { chmodSync, cpSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { MANIFEST } from './layout.js';

/** Copies `entries` of `source` into `prefix` (a path on this machine) and writes the manifest. */
export function installPackage(source: string, prefix: string, entries: readonly string[], manifest: string): void {
  const staging = `${prefix}.new-${process.pid}`;
  const old = `${prefix}.old-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true, mode: 0o755 });
  try {
    chmodSync(staging, 0o755);
    for (const entry of entries) {
      const target = path.join(staging, entry);
      mkdirSync(path.dirname(target), { recursive: true, mode: 0o755 });
      cpSync(path.join(source, entry), target, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
    }
    writeFileSync(path.join(staging, MANIFEST), manifest, { mode: 0o644 });
    if (existsSync(prefix)) moveAside(prefix, old);
    try {
      renameSync(staging, prefix);
    } catch (err) {
      if (existsSync(old)) renameSync(old, prefix);
      throw err;
    }
  } catch (err) {
    rmSync(staging, { recursive: true, force: true });
    throw err;
  }
  rmSync(old, { recursive: true, force: true });
}

/**
 * Renames the old tree out of the way. overlayfs (containers) cannot rename a
 * directory of its lower layer (EXDEV): the old tree is then removed instead, and
 * for a moment there is no prefix at all.
 */
function moveAside(prefix: string, old: string): void {
  try {
    renameSync(prefix, old);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
    rmSync(prefix, { recursive: true, force: true });
  }
}
