/**
 * What an installation copies from the built package: the compiled code, what
 * the services read at run time (tools, skills, SYSTEM.md), the documentation the
 * units link to, and the production dependencies exactly as `package-lock.json`
 * pins them — copied from the tree that was built and tested, not downloaded
 * again (see docs/decisions.md, "systemd").
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { readPackageManifest } from '../runtime/index.js';
import { CLI_ENTRY } from '../runtime/package-root.js';

/** Package entries copied as they are (relative to the package root). */
export const PACKAGE_ENTRIES: readonly string[] = [
  'package.json',
  'package-lock.json',
  'dist/src',
  'dist/bundle',
  'tools',
  'skills',
  'SYSTEM.md',
  'ZINO.toml',
  'docs',
  'systemd',
  'README.md',
  'LICENSE',
];

/** Entries without which an installation cannot run. */
const REQUIRED: readonly string[] = ['package.json', 'package-lock.json', CLI_ENTRY, 'tools', 'skills', 'SYSTEM.md', 'ZINO.toml', 'systemd'];

/** `name` of a package.json, or `undefined` when unreadable. */
export function readPackageName(manifest: string): string | undefined {
  const name = readPackageManifest(path.dirname(manifest))?.name;
  return typeof name === 'string' ? name : undefined;
}

/** `version` of the package at `root`. */
export function readPackageVersion(root: string): string {
  const version = readPackageManifest(root)?.version;
  return typeof version === 'string' ? version : 'unknown';
}

/** The shape of package-lock.json (v2/v3) that matters here. */
interface LockFile {
  packages?: Record<string, { dev?: boolean; optional?: boolean } | undefined>;
}

/**
 * The top-level `node_modules/<name>` directories the production dependencies
 * need, from the lock file: every package not marked `dev`. Nested
 * `node_modules` come along with their parent.
 */
export function productionModules(lockText: string): string[] {
  return productionEntries(lockText).map(([key]) => key);
}

function productionEntries(lockText: string): [string, { optional?: boolean } | undefined][] {
  const lock = JSON.parse(lockText) as LockFile;
  if (!lock.packages) throw new Error('package-lock.json has no "packages" (lockfileVersion 2 or 3 is needed)');
  return Object.entries(lock.packages)
    .filter(([key, entry]) => key.startsWith('node_modules/') && entry?.dev !== true && !key.slice('node_modules/'.length).includes('/node_modules/'))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** What to copy from `source`, and what is missing for an installation to work. */
export interface PackageSelection {
  /** Paths relative to the package root, each copied to the same place under the prefix. */
  entries: string[];
  /** Problems that make the package unusable (e.g. not built). */
  missing: string[];
}

/** Selects the files of the package at `source` to install. */
export function selectPackageFiles(source: string): PackageSelection {
  const missing = REQUIRED.filter((entry) => !existsSync(path.join(source, entry)));
  if (missing.includes(CLI_ENTRY)) missing.push('(the package is not built: run "npm ci && npm run build" first)');
  const entries = PACKAGE_ENTRIES.filter((entry) => existsSync(path.join(source, entry)));
  if (existsSync(path.join(source, 'package-lock.json'))) {
    for (const [module, entry] of productionEntries(readFileSync(path.join(source, 'package-lock.json'), 'utf8'))) {
      // An optional dependency that does not apply to this platform is absent: fine.
      if (existsSync(path.join(source, module))) entries.push(module);
      else if (entry?.optional !== true) missing.push(`${module} (run "npm ci" first)`);
    }
  }
  return { entries, missing };
}
