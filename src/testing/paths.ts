/** Paths of the installed package, valid whether this code runs from src/ (vitest) or dist/. */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findPackageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = path.join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'zino') return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('cannot find the zino package root');
    dir = parent;
  }
}

/** Root of the package (where package.json, tools/, skills/ and SYSTEM.md live). */
export const PACKAGE_ROOT = findPackageRoot();

/** The compiled CLI entry point. */
export const CLI_PATH = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli', 'main.js');
