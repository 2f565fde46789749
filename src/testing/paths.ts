/** Paths of the installed package, valid whether this code runs from src/ (vitest) or dist/. */
import path from 'node:path';
import { packageRoot } from '../runtime/package-root.js';

/** Root of the package (where package.json, tools/, skills/ and SYSTEM.md live). */
export const PACKAGE_ROOT = packageRoot();

/** The compiled CLI entry point. */
export const CLI_PATH = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli', 'main.js');
