/**
 * What a command loads before it does its work, when that is on the cold start's path:
 * `zino serve NAME` as the services run it starts without commander (src/cli/serve-argv.ts),
 * and `zino up` loads the client library only after it has spawned the services.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI_PATH } from '../../src/testing/paths.js';
import { waitForPing } from '../../src/testing/process.js';
import { writeTestConfig } from '../../src/testing/suite.js';
import { runCli } from '../helpers/cli.js';
import { IMPORT_HOOK, importedSources, staticSources } from '../helpers/imports.js';
import { tempDir } from '../helpers/util.js';

describe('zino serve', () => {
  it('starts a service without loading commander or the rest of the command line', async () => {
    const { dir, cleanup } = tempDir('zserveargv');
    try {
      const { file, config } = writeTestConfig(dir);
      const log = path.join(dir, 'imports.log');
      const child = spawn(process.execPath, ['--import', IMPORT_HOOK, CLI_PATH, 'serve', 'sys', '--config', file], {
        env: { ...process.env, ZINO_IMPORT_LOG: log },
        stdio: 'ignore',
      });
      const exited = new Promise((resolve) => child.once('exit', resolve));
      try {
        await waitForPing(config.sys.socket);
      } finally {
        child.kill('SIGTERM');
        await exited;
      }
      const sources = importedSources(log);
      expect(sources).toContain('src/cli/commands/serve.ts');
      expect(sources.filter((source) => source.includes('node_modules/commander/') || source === 'src/cli/program.ts')).toEqual([]);
    } finally {
      cleanup();
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
