/** Paths of the installed package, valid whether this code runs from src/ (vitest) or dist/. */
import path from 'node:path';
import { CLI_ENTRY, packageRoot } from '../runtime/package-root.js';

/** Root of the package (where package.json, tools/, skills/ and SYSTEM.md live). */
export const PACKAGE_ROOT = packageRoot();

/** The CLI as it ships: the bundle `npm run build` writes (what `zino up`, the units and the wrapper run). */
export const CLI_PATH = path.join(PACKAGE_ROOT, CLI_ENTRY);
