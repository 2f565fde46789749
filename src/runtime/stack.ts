/**
 * Stack traces of the bundled code (dist/bundle/, scripts/bundle.mjs) mapped back to the
 * sources: a frame at `file:///…/dist/bundle/chunks/main-X.js:120:7` becomes
 * `/…/src/services/rtr/infer.ts:88:5`, from the source map beside the file. Done when a stack is
 * logged, not at start: `--enable-source-maps` would read and parse every map as its file loads,
 * about 5–10 ms more per process start (docs/benchmarks.md), for stacks that are rarely logged.
 * A frame without a map (dist/src/, node:internal, a dependency outside the bundle) stays as it is.
 */
import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** `file:///…/dist/bundle/….js:LINE:COLUMN` in a stack frame. */
const FRAME = /(file:\/\/\/[^\s()]*\/dist\/bundle\/[^\s()]*\.js):(\d+):(\d+)/g;

/** Each bundled file's source map, once read (`null`: none or unreadable). */
const maps = new Map<string, { map: SourceMap; dir: string } | null>();

function mapOf(url: string): { map: SourceMap; dir: string } | null {
  let entry = maps.get(url);
  if (entry !== undefined) return entry;
  try {
    const file = fileURLToPath(url);
    const payload: unknown = JSON.parse(readFileSync(`${file}.map`, 'utf8'));
    entry = { map: new SourceMap(payload as ConstructorParameters<typeof SourceMap>[0]), dir: path.dirname(file) };
  } catch {
    entry = null;
  }
  maps.set(url, entry);
  return entry;
}

/** `stack` with every frame in a bundled file replaced by its place in the sources. */
export function mapStack(stack: string): string {
  return stack.replace(FRAME, (frame, url: string, line: string, column: string) => {
    const found = mapOf(url);
    if (!found) return frame;
    const entry: Partial<{ originalSource: string; originalLine: number; originalColumn: number }> = found.map.findEntry(Number(line) - 1, Number(column) - 1);
    if (entry.originalSource === undefined || entry.originalLine === undefined || entry.originalColumn === undefined) return frame;
    const source = entry.originalSource.startsWith('file://') ? fileURLToPath(entry.originalSource) : path.resolve(found.dir, entry.originalSource);
    return `${source}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
  });
}
