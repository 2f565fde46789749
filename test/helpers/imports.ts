/**
 * What a process loads. The CLI runs bundled (dist/bundle/); the bundle's metafile tells which
 * sources each of its files holds. `node --import IMPORT_HOOK` (test/fixtures/import-log.mjs)
 * appends the URL of every module a process resolves to $ZINO_IMPORT_LOG.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ServiceName } from '../../src/runtime/index.js';
import { CLI_PATH, PACKAGE_ROOT } from '../../src/testing/paths.js';
import { waitForPing } from '../../src/testing/process.js';
import { writeTestConfig, type ConfigOverrides } from '../../src/testing/suite.js';
import { tempDir, waitFor } from './util.js';

/** The module hook to give node with `--import`. */
export const IMPORT_HOOK = path.join(PACKAGE_ROOT, 'test', 'fixtures', 'import-log.mjs');
/** The module to give node with `--import` to list the built-in modules a process loaded. */
const BUILTINS_LOG = path.join(PACKAGE_ROOT, 'test', 'fixtures', 'builtins-log.mjs');

interface Metafile {
  outputs: Record<string, { entryPoint?: string; inputs: Record<string, unknown>; imports: { path: string; kind: string; external?: boolean }[] }>;
}

function metafile(): Metafile {
  return JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'dist', 'bundle', 'meta.json'), 'utf8')) as Metafile;
}

/** The sources (`src/…ts`, `node_modules/…`) in the files a process imported, from the log its hook wrote. */
export function importedSources(logFile: string): string[] {
  const { outputs } = metafile();
  return readFileSync(logFile, 'utf8')
    .split('\n')
    .flatMap((url) => {
      if (!url.startsWith('file://')) return [url];
      const output = outputs[path.relative(PACKAGE_ROOT, fileURLToPath(url))];
      return output ? Object.keys(output.inputs) : [url];
    });
}

/**
 * The sources a bundled module loads before any of its code runs: those of the file whose
 * entry point is `entry` (e.g. `src/cli/commands/up.ts`) and of every file it imports
 * statically.
 */
export function staticSources(entry: string): string[] {
  const { outputs } = metafile();
  // The command line's build: the services' own builds (dist/bundle/serve/) have entry points of the same sources.
  const start = Object.keys(outputs).find((file) => outputs[file]?.entryPoint === entry && !file.startsWith('dist/bundle/serve/'));
  if (start === undefined) throw new Error(`no file of the bundle has the entry point ${entry}`);
  const seen = new Set<string>();
  const visit = (file: string): void => {
    const output = outputs[file];
    if (seen.has(file) || !output) return;
    seen.add(file);
    for (const imported of output.imports) if (imported.kind === 'import-statement' && !imported.external) visit(imported.path);
  };
  visit(start);
  return [...seen].flatMap((file) => Object.keys(outputs[file]?.inputs ?? {}));
}

/**
 * Runs `zino serve SERVICE` (bundled, with the hook) until it answers ping and `ready` holds,
 * stops it, and returns the sources it imported.
 */
export async function importsOfService(
  service: ServiceName,
  overrides: ConfigOverrides = {},
  ready: (socket: string) => boolean | Promise<boolean> = () => true,
): Promise<string[]> {
  return runService(service, ['--import', IMPORT_HOOK], 'ZINO_IMPORT_LOG', importedSources, overrides, ready);
}

/** Runs `zino serve SERVICE` (bundled, with the hook) until it answers ping, stops it, and returns the files of the bundle it loaded (`zino.js`, `serve/sys/serve.js` …). */
export async function bundleFilesOfService(service: ServiceName): Promise<string[]> {
  const bundle = path.join(PACKAGE_ROOT, 'dist', 'bundle');
  return runService(service, ['--import', IMPORT_HOOK], 'ZINO_IMPORT_LOG', (log) => [
    ...new Set(
      readFileSync(log, 'utf8')
        .split('\n')
        .filter((url) => url.startsWith('file://'))
        .map((url) => path.relative(bundle, fileURLToPath(url))),
    ),
  ]);
}

/** Runs `zino serve SERVICE` until it answers ping, stops it, and returns the Node built-ins it loaded (`node:crypto` …). */
export async function builtinsOfService(service: ServiceName): Promise<string[]> {
  return runService(service, ['--import', BUILTINS_LOG], 'ZINO_BUILTINS_LOG', (log) => readFileSync(log, 'utf8').split('\n').filter(Boolean));
}

/**
 * Runs `zino serve SERVICE` with `nodeArgs` until it answers ping and `ready` holds, stops it,
 * and reads the log file it wrote (named to it in the environment variable `logVar`).
 */
async function runService<T>(
  service: ServiceName,
  nodeArgs: string[],
  logVar: string,
  read: (logFile: string) => T,
  overrides: ConfigOverrides = {},
  ready: (socket: string) => boolean | Promise<boolean> = () => true,
): Promise<T> {
  const { dir, cleanup } = tempDir('zimports');
  try {
    const { file, config } = writeTestConfig(dir, overrides);
    const log = path.join(dir, 'imports.log');
    const child = spawn(process.execPath, [...nodeArgs, CLI_PATH, 'serve', service, '--config', file], {
      env: { ...process.env, [logVar]: log },
      stdio: 'ignore',
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      await waitForPing(config[service].socket);
      await waitFor(() => ready(config[service].socket), `${service} to be ready`);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
    return read(log);
  } finally {
    cleanup();
  }
}
