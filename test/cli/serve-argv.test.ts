/**
 * `zino serve NAME` as the services run it starts without commander (src/cli/serve-argv.ts);
 * every other `serve` command line is still commander's, with its help and its errors.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { plainServeArgv } from '../../src/cli/serve-argv.js';
import { CLI_PATH } from '../../src/testing/paths.js';
import { waitForPing } from '../../src/testing/process.js';
import { writeTestConfig } from '../../src/testing/suite.js';
import { runCli } from '../helpers/cli.js';
import { IMPORT_HOOK, importedSources } from '../helpers/imports.js';
import { tempDir } from '../helpers/util.js';

describe('plainServeArgv', () => {
  it.each([
    [['serve', 'sys'], { service: 'sys', options: {} }],
    [['serve', 'mem', '--config', '/etc/zino/ZINO.toml'], { service: 'mem', options: { config: '/etc/zino/ZINO.toml' } }],
    [['serve', 'mem', '-c', 'a.toml'], { service: 'mem', options: { config: 'a.toml' } }],
    [['serve', '--config=a.toml', 'ctx'], { service: 'ctx', options: { config: 'a.toml' } }],
    [['serve', 'daemon', '--dir', '/tmp/z', '--config', 'a.toml'], { service: 'daemon', options: { dir: '/tmp/z', config: 'a.toml' } }],
    [['serve', 'http', '--dir=.zino'], { service: 'http', options: { dir: '.zino' } }],
    // An unknown name is serveCommand's to refuse, as it was when commander handed it over.
    [['serve', 'nosuch'], { service: 'nosuch', options: {} }],
  ])('reads %j', (argv, expected) => {
    expect(plainServeArgv(argv)).toEqual(expected);
  });

  it.each([
    [[]],
    [['ask', 'serve']],
    [['serve']],
    [['serve', '--help']],
    [['serve', 'sys', '-h']],
    [['serve', 'sys', 'mem']],
    [['serve', 'sys', '--config']],
    [['serve', 'sys', '--config', '--dir', 'x']],
    [['serve', 'sys', '--config=']],
    [['serve', 'sys', '--config', 'a', '--config', 'b']],
    [['serve', 'sys', '--verbose']],
    [['serve', '--', 'sys']],
  ])('leaves %j to commander', (argv) => {
    expect(plainServeArgv(argv)).toBeUndefined();
  });
});

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
