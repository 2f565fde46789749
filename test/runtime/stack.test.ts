/**
 * A stack thrown in bundled code is logged with its frames in the sources (src/runtime/stack.ts):
 * a small module is bundled the way scripts/bundle.mjs bundles the CLI (esbuild, a linked map
 * without the sources), made to throw in a Node process of its own, and the error mapped and logged.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mapStack } from '../../src/runtime/stack.js';
import { captureLogger, tempDir } from '../helpers/util.js';

const { dir, cleanup } = tempDir('zstack');
const source = path.join(dir, 'src', 'thrower.ts');
const bundled = path.join(dir, 'dist', 'bundle', 'thrower.js');
let thrown: Error;

beforeAll(async () => {
  mkdirSync(path.dirname(source), { recursive: true });
  // The throw is on line 6, column 9 of the source; the bundle puts it elsewhere.
  writeFileSync(
    source,
    [
      '// a module in the sources',
      'export function deep(n: number): never {',
      '  if (n > 0) return deep(n - 1);',
      '  const what: string = "bad";',
      '  void what;',
      '  throw new Error(`from the bundle: ${what}`);',
      '}',
      '',
    ].join('\n'),
  );
  await build({
    entryPoints: [source],
    outfile: bundled,
    bundle: true,
    format: 'esm',
    platform: 'node',
    sourcemap: 'linked',
    sourcesContent: false,
    logLevel: 'silent',
  });
  // As a service runs it: in its own Node process, without Node's source maps (vitest maps its own).
  const run = spawnSync(
    process.execPath,
    ['--input-type=module', '-e', `try { (await import(${JSON.stringify(pathToFileURL(bundled).href)})).deep(2) } catch (e) { process.stdout.write(e.stack) }`],
    { encoding: 'utf8' },
  );
  thrown = Object.assign(new Error('from the bundle: bad'), { stack: run.stdout });
});

afterAll(cleanup);

describe('stack traces of the bundle', () => {
  it('map each frame in a bundled file to its place in the sources', () => {
    expect(thrown.stack).toContain('/dist/bundle/thrower.js:');
    const mapped = mapStack(thrown.stack ?? '');
    expect(mapped).toContain(`${source}:6:9`);
    expect(mapped).toContain(`${source}:3:21`);
    expect(mapped).not.toContain('/dist/bundle/thrower.js');
    expect(mapped.split('\n')[0]).toBe('Error: from the bundle: bad');
  });

  it('are logged mapped', () => {
    const { log, lines } = captureLogger();
    log.error({ err: thrown }, 'it failed');
    expect(lines[0]).toMatchObject({ msg: 'it failed', err: { type: 'Error', message: 'from the bundle: bad' } });
    expect((lines[0]?.err as { stack: string }).stack).toContain(`${source}:6:9`);
  });

  it('leave frames without a map as they are', () => {
    writeFileSync(path.join(dir, 'dist', 'bundle', 'nomap.js'), '');
    const stack = `Error: x\n    at f (${pathToFileURL(path.join(dir, 'dist', 'bundle', 'nomap.js')).href}:1:2)\n    at node:internal/x:3:4`;
    expect(mapStack(stack)).toBe(stack);
  });
});
