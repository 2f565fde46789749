/**
 * What a process imported: `node --import IMPORT_HOOK` (test/fixtures/import-log.mjs) appends
 * the URL of every module it resolves to $ZINO_IMPORT_LOG. The CLI runs bundled (dist/bundle/),
 * so each file it imported stands for the sources the bundle's metafile lists in it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PACKAGE_ROOT } from '../../src/testing/paths.js';

/** The module hook to give node with `--import`. */
export const IMPORT_HOOK = path.join(PACKAGE_ROOT, 'test', 'fixtures', 'import-log.mjs');

/** The sources (`src/…ts`, `node_modules/…`) in the files a process imported, from the log its hook wrote. */
export function importedSources(logFile: string): string[] {
  const meta = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'dist', 'bundle', 'meta.json'), 'utf8')) as {
    outputs: Record<string, { inputs: Record<string, unknown> }>;
  };
  return readFileSync(logFile, 'utf8')
    .split('\n')
    .flatMap((url) => {
      if (!url.startsWith('file://')) return [url];
      const output = meta.outputs[path.relative(PACKAGE_ROOT, fileURLToPath(url))];
      return output ? Object.keys(output.inputs) : [url];
    });
}
