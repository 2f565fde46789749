/**
 * Creating a directory and its missing parents without Node's `mkdir({ recursive: true })`,
 * which loops forever (at full CPU, deaf to signals) when a parent refuses mkdir with
 * ENOENT while existing, as /proc and /sys do. Here every ancestor is visited once.
 */
import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';

/** errno codes that mean "this path cannot be used as configured", not "try again". */
const PATH_ERRORS = new Set(['ENOTDIR', 'EPERM', 'EACCES', 'EROFS', 'ENOENT', 'EEXIST', 'ELOOP', 'ENAMETOOLONG', 'EISDIR', 'EINVAL', 'ENOSYS']);

/** True when `err` is a filesystem error about the path itself (a configuration problem). */
export function isPathError(err: unknown): err is NodeJS.ErrnoException {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' && PATH_ERRORS.has(code);
}

/**
 * Makes `dir` and its missing parents with `mode`. Returns the first directory it
 * created (undefined when `dir` existed). Throws the errno error of the step that
 * failed; an existing non-directory anywhere on the way gives ENOTDIR.
 */
export async function makeDirectory(dir: string, mode: number): Promise<string | undefined> {
  const missing: string[] = [];
  let current = path.resolve(dir);
  for (;;) {
    try {
      const stats = await stat(current);
      if (!stats.isDirectory()) throw Object.assign(new Error(`ENOTDIR: not a directory, '${current}'`), { code: 'ENOTDIR', path: current });
      break;
    } catch (err) {
      const parent = path.dirname(current);
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || parent === current) throw err;
      missing.push(current);
      current = parent;
    }
  }
  let first: string | undefined;
  for (const each of missing.reverse()) {
    try {
      await mkdir(each, { mode });
      first ??= each;
    } catch (err) {
      // Made by someone else in the meantime: fine if it is a directory.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || !(await stat(each)).isDirectory()) throw err;
    }
  }
  return first;
}
