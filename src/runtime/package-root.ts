/**
 * The one way to find the zino package the running code belongs to: walk up from
 * this module to the directory whose package.json is named "zino". That is the
 * checkout or the installation prefix whether the code runs compiled
 * (dist/src/runtime/) or from source under vitest (src/runtime/).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The `zino` CLI every process of the suite runs, relative to the package root: the bundle of
 * `src/cli/main.ts` written by `npm run build` (scripts/bundle.mjs). `zino up` starts its
 * services with it, the systemd units and the `zino` wrapper run it, the tests spawn it.
 */
export const CLI_ENTRY = 'dist/bundle/zino.js';

/** The package name that marks the root. */
export const PACKAGE_NAME = 'zino';

/** The fields of a package.json that ZINO reads. */
export interface PackageManifest {
  name?: unknown;
  version?: unknown;
}

/** The package.json in `dir`, or `undefined` when it is missing or unreadable. */
export function readPackageManifest(dir: string): PackageManifest | undefined {
  try {
    const value: unknown = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
    return typeof value === 'object' && value !== null ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The nearest directory at or above `start` holding the package.json named "zino". Throws when there is none. */
export function findPackageRoot(start: string): string {
  let dir = path.resolve(start);
  for (;;) {
    if (readPackageManifest(dir)?.name === PACKAGE_NAME) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`cannot find the ${PACKAGE_NAME} package root above ${start}`);
    dir = parent;
  }
}

let cached: string | undefined;

/** Root of the running package (package.json, dist/, tools/, skills/, SYSTEM.md). Found once, then cached. Throws when there is none. */
export function packageRoot(): string {
  cached ??= findPackageRoot(path.dirname(fileURLToPath(import.meta.url)));
  return cached;
}
