/**
 * What a command loads before it does its work, when that is on the cold start's path:
 * `zino serve NAME` as the services run it starts without commander (src/cli/serve-argv.ts)
 * and without the Node built-ins it does not need, and `zino up` loads the client library
 * only after it has spawned the services.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SERVICE_NAMES } from '../../src/runtime/index.js';
import { CLI_PATH, PACKAGE_ROOT } from '../../src/testing/paths.js';
import { waitForPing } from '../../src/testing/process.js';
import { writeTestConfig } from '../../src/testing/suite.js';
import { runCli } from '../helpers/cli.js';
import { IMPORT_HOOK, builtinsOfService, bundleFilesOfService, importedSources, importsOfService, staticSources } from '../helpers/imports.js';
import { tempDir } from '../helpers/util.js';

describe('zino serve', () => {
  it('starts each service from its own file of the bundle, without commander or the other services', async () => {
    for (const service of SERVICE_NAMES) {
      // zino.js, esbuild's helpers shared by every file, and the service's own file (and, for rtr and exc,
      // the chunk their lazily imported SDK shares with it): not the command line's chunks (scripts/bundle.mjs).
      const files = await bundleFilesOfService(service);
      expect(files).toContain('zino.js');
      expect(files).toContain(`serve/${service}/serve.js`);
      const others = files.filter((file) => file !== 'zino.js' && !file.startsWith(`serve/${service}/`));
      expect({ service, others: others.filter((file) => !isHelpersChunk(file)) }).toEqual({ service, others: [] });
      expect(others.length).toBeLessThanOrEqual(1);
    }
    const sources = await importsOfService('sys');
    expect(sources).toContain('src/cli/serve-run.ts');
    expect(sources).toContain('src/services/sys/main.ts');
    const unwanted = (source: string): boolean =>
      source.includes('node_modules/commander/') ||
      source === 'src/cli/program.ts' ||
      source === 'src/cli/commands/serve.ts' ||
      (source.startsWith('src/services/') && !source.startsWith('src/services/sys/'));
    expect(sources.filter(unwanted)).toEqual([]);
  });

  it("serves a name without a file of its own (runner) through the command line's chunks", () => {
    const { dir, cleanup } = tempDir('zrunner');
    try {
      const { file } = writeTestConfig(dir);
      const log = path.join(dir, 'imports.log');
      const runner = spawnSync(process.execPath, ['--import', IMPORT_HOOK, CLI_PATH, 'serve', 'runner', '--config', file], {
        env: { ...process.env, ZINO_IMPORT_LOG: log },
        encoding: 'utf8',
        timeout: 30_000,
      });
      // No [approval] host_user: the runner has nothing to do and says so (exit 0).
      expect(runner.status).toBe(0);
      expect(runner.stderr).toContain('no [approval] host_user');
      const sources = importedSources(log);
      expect(sources).toContain('src/cli/commands/serve.ts');
      expect(sources).toContain('src/services/exc/runner/main.ts');
      expect(readFileSync(log, 'utf8')).not.toContain('/dist/bundle/serve/');
    } finally {
      cleanup();
    }
  });

  it('loads node:crypto only where it is used, and node:worker_threads and node:vm in no service', async () => {
    // About 6 ms of CPU for node:crypto (a made-up request id no longer needs it: src/runtime/request-id.ts),
    // 2 ms for pino's worker_threads (scripts/bundle.mjs) and 1 ms for vm (reclaim.ts) in each of the seven,
    // which start at once (docs/benchmarks.md, round 13). mem hashes its files and exc its runs; rtr's openai
    // SDK, imported once rtr listens, takes globalThis.crypto for the idempotency key of each request.
    const usesCrypto = new Set(['mem', 'exc', 'rtr']);
    const isCrypto = (name: string): boolean => name === 'node:crypto' || name.startsWith('node:internal/crypto/');
    for (const service of SERVICE_NAMES) {
      const builtins = await builtinsOfService(service);
      expect(builtins).toContain('node:net');
      const unwanted = builtins.filter((name) => name === 'node:worker_threads' || name === 'node:vm' || (!usesCrypto.has(service) && isCrypto(name)));
      expect({ service, loaded: unwanted }).toEqual({ service, loaded: [] });
    }
  });

  it('leaves help and malformed command lines to commander', async () => {
    const help = await runCli(['serve', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: zino serve [options] <service>');
    const missing = await runCli(['serve', 'sys', '--config']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain("option '-c, --config <file>' argument missing");
    const unknown = await runCli(['serve', 'sys', '--verbose']);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain("unknown option '--verbose'");
  });
});

describe('zino up', () => {
  it('loads the client library only after it has spawned the services', () => {
    // Everything that runs before upCommand: the entry and up's own chunk (a plain `zino up` skips commander).
    const sources = ['src/cli/main.ts', 'src/cli/commands/up.ts'].flatMap(staticSources);
    expect(sources).toContain('src/cli/up/supervisor.ts');
    expect(sources).toContain('src/cli/config.ts');
    expect(sources.filter((source) => source.startsWith('src/client/') || source.startsWith('src/protocol/'))).toEqual([]);
  });

  it('starts the suite without loading commander or the rest of the command line', async () => {
    const { dir, cleanup } = tempDir('zupimports');
    try {
      const { file, config } = writeTestConfig(dir, { exc: { sandbox: 'none' } });
      const log = path.join(dir, 'imports.log');
      const up = spawn(process.execPath, ['--import', IMPORT_HOOK, CLI_PATH, 'up', '--config', file], {
        env: { ...process.env, ZINO_IMPORT_LOG: log },
        stdio: 'ignore',
      });
      const exited = new Promise((resolve) => up.once('exit', resolve));
      try {
        for (const service of SERVICE_NAMES) await waitForPing(config[service].socket);
      } finally {
        up.kill('SIGINT');
        await exited;
      }
      // Only zino up's own imports are logged: its children run without the hook.
      const sources = importedSources(log);
      expect(sources).toContain('src/cli/commands/up.ts');
      expect(sources.filter((source) => source.includes('node_modules/commander/') || source === 'src/cli/program.ts')).toEqual([]);
    } finally {
      cleanup();
    }
  });
});

/** esbuild's helpers (`__commonJS`, `__require` …), a chunk with no sources of its own that every entry of a build imports. */
function isHelpersChunk(file: string): boolean {
  const { outputs } = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'dist', 'bundle', 'meta.json'), 'utf8')) as {
    outputs: Record<string, { inputs: Record<string, unknown> }>;
  };
  return Object.keys(outputs[`dist/bundle/${file}`]?.inputs ?? { none: true }).length === 0;
}
