/**
 * What a command loads before it does its work, when that is on the cold start's path:
 * `zino serve NAME` as the services run it starts without commander (src/cli/serve-argv.ts),
 * and `zino up` loads the client library only after it has spawned the services.
 */
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { importsOfService, staticSources } from '../helpers/imports.js';

describe('zino serve', () => {
  it('starts a service without loading commander or the rest of the command line', async () => {
    const sources = await importsOfService('sys');
    expect(sources).toContain('src/cli/commands/serve.ts');
    expect(sources.filter((source) => source.includes('node_modules/commander/') || source === 'src/cli/program.ts')).toEqual([]);
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
