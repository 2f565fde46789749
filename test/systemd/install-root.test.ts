/**
 * `zino install-systemd --root DIR` with the real package: everything the units
 * and the configuration refer to exists in DIR, `systemd-analyze verify --root`
 * accepts the installed units, a second run keeps configuration and data, and
 * uninstall keeps them unless --purge.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'smol-toml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_UNITS, SERVICE_UNITS } from '../../src/deploy/layout.js';
import { resolveConfig } from '../../src/runtime/index.js';
import { CLI_PATH, PACKAGE_ROOT } from '../../src/testing/paths.js';
import { tempDir } from '../helpers/util.js';
import { RUN_ANALYZE, analyze, provideSystemPieces, readUnit, words } from './helpers.js';

const PREFIX = '/opt/zino';

/** Runs the zino CLI; returns its exit status and output. */
function zino(...args: string[]): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, [CLI_PATH, ...args], { encoding: 'utf8', env: { ...process.env, ZINO_CONFIG: '', ZINO_DIR: '' } });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/** Absolute paths a unit refers to, with whether each must exist ("-" prefix: optional). */
function referencedPaths(unitFile: string): { path: string; optional: boolean }[] {
  const u = readUnit(unitFile);
  const out: { path: string; optional: boolean }[] = [];
  for (const key of ['ExecStart', 'ExecStartPost', 'ExecReload', 'EnvironmentFile', 'InaccessiblePaths', 'Documentation']) {
    for (const word of words(u, key)) {
      const optional = word.startsWith('-');
      const value = word.replace(/^-/, '').replace(/^file:/, '');
      if (value.startsWith('/')) out.push({ path: value, optional });
    }
  }
  return out;
}

// A whole install (the package and its node_modules copied, systemd-analyze verify) took
// 11 s alone and 70 s on a loaded 2-core machine: a generous bound, not a speed check.
describe('install-systemd into a temp root', { timeout: 300_000 }, () => {
  let root: string;
  let cleanup: () => void;
  let first: { status: number | null; output: string };
  beforeAll(() => {
    ({ dir: root, cleanup } = tempDir('zir'));
    first = zino('install-systemd', '--root', root, '--prefix', PREFIX, '--node', process.execPath);
  }, 300_000);
  afterAll(() => cleanup());

  it('installs and says which commands are left for the target system', () => {
    expect(first.output).toContain('on the target system, run: systemctl enable zino.target');
    expect(first.output).toContain('on the target system, run: systemd-sysusers /etc/sysusers.d/zino.conf');
    expect(first.status, first.output).toBe(0);
  });

  it('puts every path the units refer to in the root (node and kill are the host system)', () => {
    const system = new Set([process.execPath, '/bin/kill']);
    for (const unit of ALL_UNITS) {
      for (const { path: p, optional } of referencedPaths(path.join(root, 'etc/systemd/system', unit))) {
        if (system.has(p)) expect(existsSync(p), `${unit}: ${p}`).toBe(true);
        else if (!optional || p.startsWith('/etc/zino')) expect(existsSync(path.join(root, p)), `${unit}: ${p}`).toBe(true);
      }
    }
    for (const file of ['etc/tmpfiles.d/zino.conf', 'etc/sysusers.d/zino.conf', 'usr/local/bin/zino', 'etc/zino/zino.env']) {
      expect(existsSync(path.join(root, file)), file).toBe(true);
    }
  });

  it('writes a configuration whose paths exist under the prefix, with sockets in /run/zino and data in /var/lib/zino', () => {
    const file = path.join(root, 'etc/zino/ZINO.toml');
    const { config } = resolveConfig(parse(readFileSync(file, 'utf8')), { file, baseDir: '/etc/zino', env: {} });
    for (const p of [config.tools.dir, config.skills.dir, config.sys.template]) {
      expect(p.startsWith(`${PREFIX}/`), p).toBe(true);
      expect(existsSync(path.join(root, p)), p).toBe(true);
    }
    expect(config.mem.data_dir).toBe('/var/lib/zino');
    for (const service of ['daemon', 'rtr', 'agr', 'sys', 'exc', 'mem', 'ctx'] as const) expect(config[service].socket).toBe(`/run/zino/${service}.sock`);
    expect(config.api.base_url).toBe('demo');
  });

  it('installs the production dependencies and none of the development ones', () => {
    const modules = readdirSync(path.join(root, PREFIX, 'node_modules'));
    expect(modules).toEqual(expect.arrayContaining(['@modelcontextprotocol', 'ajv', 'commander', 'natural', 'openai', 'pino', 'smol-toml']));
    // The MCP SDK, not the MCP servers the tests use.
    expect(readdirSync(path.join(root, PREFIX, 'node_modules', '@modelcontextprotocol'))).toEqual(['sdk']);
    expect(modules).not.toContain('vitest');
    expect(modules).not.toContain('typescript');
    const version = spawnSync(process.execPath, [path.join(root, PREFIX, 'dist/bundle/zino.js'), '--version'], { encoding: 'utf8' });
    expect(version.status, version.stderr).toBe(0);
  });

  it("installs what the compiled code reads beside itself: the landlock view's launcher", () => {
    const launcher = path.join(root, PREFIX, 'dist/src/services/exc/landlock/zino-sandbox.py');
    expect(readFileSync(launcher, 'utf8')).toBe(readFileSync(path.join(PACKAGE_ROOT, 'src/services/exc/landlock/zino-sandbox.py'), 'utf8'));
  });

  it.runIf(RUN_ANALYZE)('passes systemd-analyze verify --root with the installed paths', () => {
    provideSystemPieces(root, [process.execPath, '/bin/kill']);
    const { status, output } = analyze(['verify', `--root=${root}`, '--no-pager', ...ALL_UNITS]);
    expect(output.trim()).toBe('');
    expect(status).toBe(0);
    expect(words(readUnit(path.join(root, 'etc/systemd/system/zino-daemon.service')), 'ExecStart')[0]).toBe(process.execPath);
  });

  it('keeps an edited configuration, the env file and the data on a second install', () => {
    const config = path.join(root, 'etc/zino/ZINO.toml');
    const env = path.join(root, 'etc/zino/zino.env');
    const data = path.join(root, 'var/lib/zino/history');
    writeFileSync(config, `${readFileSync(config, 'utf8')}\n# edited by the operator\n`);
    writeFileSync(env, 'LLM_API_KEY=sk-test\n');
    mkdirSync(data, { recursive: true });
    writeFileSync(path.join(data, 'c.jsonl'), '{"messages":[]}\n');
    const before = [config, env, path.join(data, 'c.jsonl')].map((f) => readFileSync(f, 'utf8'));

    const second = zino('install-systemd', '--root', root, '--prefix', PREFIX, '--node', process.execPath);
    expect(second.status, second.output).toBe(0);
    expect(second.output).toContain('keep /etc/zino/ZINO.toml: an existing configuration is never changed');
    expect(second.output).toContain('keep /etc/zino/zino.env');
    expect(second.output).toContain("keep /var/lib/zino: mem's data is never touched by install");
    expect(second.output).toContain('zino-daemon.service (0644 root:root): unit (updated)');
    expect([config, env, path.join(data, 'c.jsonl')].map((f) => readFileSync(f, 'utf8'))).toEqual(before);
  });

  it('writes [http] token_file under /var/lib/zino-http and leaves the HTTP endpoint off', () => {
    const file = path.join(root, 'etc/zino/ZINO.toml');
    const { config } = resolveConfig(parse(readFileSync(file, 'utf8')), { file, baseDir: '/etc/zino', env: {} });
    expect(config.http).toMatchObject({ enabled: false, token_file: '/var/lib/zino-http/http.token' });
    expect(existsSync(path.join(root, 'etc/systemd/system/zino-http.service'))).toBe(false);
    expect(first.output).toContain('zino-http.service (the OpenAI-compatible endpoint) not installed');
  });

  it('installs zino-http.service once the configuration enables it, and verify accepts it', () => {
    const file = path.join(root, 'etc/zino/ZINO.toml');
    const original = readFileSync(file, 'utf8');
    writeFileSync(file, original.replace(/^# enabled = false$/m, 'enabled = true'));
    try {
      const again = zino('install-systemd', '--root', root, '--prefix', PREFIX, '--node', process.execPath);
      expect(again.status, again.output).toBe(0);
      expect(again.output).toContain('on the target system, run: systemctl enable zino-http.service');
      const unit = path.join(root, 'etc/systemd/system/zino-http.service');
      for (const { path: p, optional } of referencedPaths(unit)) {
        if (p === process.execPath || p === '/bin/kill') continue;
        if (!optional) expect(existsSync(path.join(root, p)), p).toBe(true);
      }
      if (RUN_ANALYZE) {
        provideSystemPieces(root, [process.execPath, '/bin/kill']);
        const { status, output } = analyze(['verify', `--root=${root}`, '--no-pager', 'zino-http.service']);
        expect(output.trim()).toBe('');
        expect(status).toBe(0);
      }
    } finally {
      writeFileSync(file, original);
    }
    // Back to off: the next install takes the unit away again.
    const off = zino('install-systemd', '--root', root, '--prefix', PREFIX, '--node', process.execPath);
    expect(off.status, off.output).toBe(0);
    expect(existsSync(path.join(root, 'etc/systemd/system/zino-http.service'))).toBe(false);
  });

  it('uninstall removes units, entries, command and prefix, and keeps configuration and data', () => {
    const result = zino('uninstall-systemd', '--root', root);
    expect(result.status, result.output).toBe(0);
    for (const unit of ALL_UNITS) expect(existsSync(path.join(root, 'etc/systemd/system', unit)), unit).toBe(false);
    for (const gone of ['etc/tmpfiles.d/zino.conf', 'etc/sysusers.d/zino.conf', 'usr/local/bin/zino', PREFIX.slice(1)]) {
      expect(existsSync(path.join(root, gone)), gone).toBe(false);
    }
    expect(readFileSync(path.join(root, 'etc/zino/zino.env'), 'utf8')).toBe('LLM_API_KEY=sk-test\n');
    expect(existsSync(path.join(root, 'var/lib/zino/history/c.jsonl'))).toBe(true);
    expect(result.output).toContain('on the target system, run: systemctl stop zino.target');
  });

  it('uninstall --purge then removes the configuration and the data', () => {
    const result = zino('uninstall-systemd', '--root', root, '--purge');
    expect(result.status, result.output).toBe(0);
    expect(existsSync(path.join(root, 'etc/zino'))).toBe(false);
    expect(existsSync(path.join(root, 'var/lib/zino'))).toBe(false);
  });
});

describe('install-systemd --dry-run', () => {
  it('prints every action and changes nothing', () => {
    const { dir: root, cleanup } = tempDir('zid');
    try {
      const result = zino('install-systemd', '--root', root, '--dry-run');
      expect(result.status, result.output).toBe(0);
      expect(result.output).toContain('would install the package into /opt/zino');
      expect(result.output).toContain('would write /etc/zino/ZINO.toml');
      for (const unit of SERVICE_UNITS) expect(result.output).toContain(`would write /etc/systemd/system/${unit}`);
      expect(result.output).toContain('would run: systemctl enable zino.target');
      expect(readdirSync(root)).toEqual([]);
    } finally {
      cleanup();
    }
  });
});

describe('install-systemd on this system without root', () => {
  // The user runs an installed copy in a temp root that everyone may enter: the
  // checkout itself may sit in a directory only root can read.
  let root: string;
  let cleanup: () => void;
  let cli: string;
  beforeAll(() => {
    ({ dir: root, cleanup } = tempDir('zin'));
    chmodSync(root, 0o755);
    const install = zino('install-systemd', '--root', root, '--prefix', PREFIX, '--node', process.execPath);
    if (install.status !== 0) throw new Error(install.output);
    cli = path.join(root, PREFIX, 'dist/bundle/zino.js');
  });
  afterAll(() => cleanup());

  /** Runs the installed CLI as an ordinary user: `nobody` when the tests run as root. */
  function asUser(...args: string[]): { status: number | null; output: string } {
    const argv = process.geteuid?.() === 0 ? ['runuser', '-u', 'nobody', '--', process.execPath, cli, ...args] : [process.execPath, cli, ...args];
    const result = spawnSync(argv[0] ?? 'false', argv.slice(1), { encoding: 'utf8', cwd: '/', env: { ...process.env, ZINO_CONFIG: '', ZINO_DIR: '' } });
    return { status: result.status, output: `${result.stdout}${result.stderr}` };
  }

  it('refuses to change anything, says why and what to do', () => {
    for (const command of ['install-systemd', 'uninstall-systemd']) {
      const result = asUser(command, '--prefix', '/opt/zino-never-installed');
      expect(result.output, command).toContain(`zino ${command} changes the system (users, /etc, units): it must run as root.`);
      expect(result.output).toContain('Nothing was changed. Run it with sudo, see what it would do with --dry-run, or prepare a tree with --root DIR.');
      expect(result.status).toBe(1);
    }
  });

  it('still shows what it would do with --dry-run', () => {
    const result = asUser('install-systemd', '--prefix', '/opt/zino-never-installed', '--dry-run');
    expect(result.output).toContain('not running as root: a real run would refuse (use sudo)');
    expect(result.output).toContain('would install the package into /opt/zino-never-installed');
    expect(result.status).toBe(0);
  });
});
