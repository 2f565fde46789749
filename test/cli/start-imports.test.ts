/**
 * What a command loads before it does its work, when that is on the cold start's path:
 * `zino serve NAME` as the services run it starts without commander (src/cli/serve-argv.ts)
 * and without the Node built-ins it does not need, and `zino up` loads the client library
 * only after it has spawned the services.
 */
import { describe, expect, it } from 'vitest';
import { SERVICE_NAMES } from '../../src/runtime/index.js';
import { runCli } from '../helpers/cli.js';
import { builtinsOfService, importsOfService, staticSources } from '../helpers/imports.js';

describe('zino serve', () => {
  it('starts a service without loading commander or the rest of the command line', async () => {
    const sources = await importsOfService('sys');
    expect(sources).toContain('src/cli/commands/serve.ts');
    expect(sources.filter((source) => source.includes('node_modules/commander/') || source === 'src/cli/program.ts')).toEqual([]);
  });

  it('loads node:crypto only where it is used, and node:worker_threads and node:vm in no service', async () => {
    // About 6 ms of CPU for node:crypto (a made-up request id no longer needs it: src/runtime/request-id.ts),
    // 2 ms for pino's worker_threads (scripts/bundle.mjs) and 1 ms for vm (reclaim.ts) in each of the seven,
    // which start at once (docs/benchmarks.md, round 13). mem hashes its files and exc its runs; rtr's openai
    // SDK, imported once rtr listens, takes globalThis.crypto for the idempotency key of each request.
    const usesCrypto = new Set(['mem', 'exc', 'rtr']);
    for (const service of SERVICE_NAMES) {
      const builtins = await builtinsOfService(service);
      expect(builtins).toContain('node:net');
      const unwanted = ['node:worker_threads', 'node:vm', ...(usesCrypto.has(service) ? [] : ['node:crypto'])];
      expect({ service, loaded: builtins.filter((name) => unwanted.includes(name)) }).toEqual({ service, loaded: [] });
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
    // Everything that runs before upCommand: the entry, the command line, up's own chunk.
    const sources = ['src/cli/main.ts', 'src/cli/program.ts', 'src/cli/commands/up.ts'].flatMap(staticSources);
    expect(sources).toContain('src/cli/up/supervisor.ts');
    expect(sources).toContain('src/cli/config.ts');
    expect(sources.filter((source) => source.startsWith('src/client/') || source.startsWith('src/protocol/'))).toEqual([]);
  });
});
