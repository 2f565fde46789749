/**
 * The first hour of a new user (issue 15), end to end in a directory laid out like
 * a checkout (a ZINO.toml that selects the demo model, no sockets set): the first
 * `zino up --dir .zino` writes the local configuration, the CLI finds the running
 * suite in ./.zino by itself, a real endpoint is configured in the local file only,
 * and `status`/`ask` say what is wrong when that endpoint is not there.
 */
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/testing/suite.js';
import { startSuiteWith, type RunningSuite } from '../../src/testing/up.js';
import { runCli } from '../helpers/cli.js';
import { useMockLlm } from '../helpers/mock.js';
import { closedPort, tempDir } from '../helpers/util.js';

const llm = useMockLlm();
let home: string;
let cleanup: () => void;
let shared: string;
let local: string;
// No inherited ZINO_CONFIG / ZINO_DIR: the user has set nothing.
const env = { ZINO_CONFIG: '', ZINO_DIR: '', ZINO_LOG_LEVEL: 'info', LLM_API_KEY: '' };
const SHARED = [
  '[api]',
  'base_url = "demo"',
  '[tools]',
  `dir = ${JSON.stringify(path.join(PACKAGE_ROOT, 'tools'))}`,
  '[skills]',
  `dir = ${JSON.stringify(path.join(PACKAGE_ROOT, 'skills'))}`,
  '[sys]',
  `template = ${JSON.stringify(path.join(PACKAGE_ROOT, 'SYSTEM.md'))}`,
  '[exc]',
  'sandbox = "none"',
  // No sandbox makes every run a host run: allowed here, as in the other suites without one (test/helpers/mock.ts).
  '[approval]',
  'mode = "allow"',
  '[limits]',
  'shutdown_grace_ms = 3000',
  '',
].join('\n');

beforeAll(() => {
  ({ dir: home, cleanup } = tempDir('zfh'));
  shared = path.join(home, 'ZINO.toml');
  local = path.join(home, '.zino', 'ZINO.toml');
  writeFileSync(shared, SHARED);
});
afterAll(() => cleanup());

const up = (): Promise<RunningSuite> => startSuiteWith(['--dir', '.zino'], { cwd: home, env });
const cli = (args: string[]) => runCli(args, { cwd: home, env });

/** The local file with `[api] base_url` (and a model) set, the rest as zino init wrote it. */
function setEndpoint(baseUrl: string, model: string, extra = ''): void {
  const text = written.replace(/^\[api\]\n/m, `[api]\nbase_url = ${JSON.stringify(baseUrl)}\n`);
  writeFileSync(local, text.replace(/^\[service\]\n/m, `[service]\nmodel = ${JSON.stringify(model)}\n`) + extra);
}
/** The local configuration as the first start wrote it. */
let written = '';

describe('the first start (point 1)', () => {
  let suite: RunningSuite;
  afterAll(async () => {
    expect(await suite.interrupt()).toEqual({ code: 0, signal: null });
  });

  it('writes the local configuration .zino/ZINO.toml, private, and says so', async () => {
    suite = await up();
    expect(suite.stdout()).toContain('  config:  ZINO.toml + .zino/ZINO.toml (.zino/ZINO.toml written now: your settings go there)');
    expect(suite.stdout()).toContain('  LLM:     the built-in demo model');
    expect(statSync(local).mode & 0o777).toBe(0o600);
    written = readFileSync(local, 'utf8');
    expect(written).toMatch(/^# ZINO local configuration \(written by `zino init`\)/);
    expect(readFileSync(shared, 'utf8')).toBe(SHARED);
  });

  it('is found by the CLI without --dir, which says which suite it uses (point 8)', async () => {
    const status = await cli(['status']);
    expect(status.stderr).toBe('zino: using the suite running in ./.zino (as with --dir .zino; pass --dir or --config for another)\n');
    expect(status.stdout).toContain(`suite at ${path.join(home, '.zino', 'run')}`);
    expect(status.code).toBe(0);
    const ask = await cli(['ask', 'how much disk space is free?']);
    expect(ask.code).toBe(0);
    expect(ask.stdout).toContain('It ran successfully');
  });

  it('zino init leaves the existing local configuration alone', async () => {
    const before = readFileSync(local, 'utf8');
    const init = await cli(['init']);
    expect(init).toMatchObject({ code: 0, stderr: '.zino/ZINO.toml exists already; left as it is. Edit it to change your settings.\n' });
    expect(readFileSync(local, 'utf8')).toBe(before);
  });
});

describe('a real endpoint in the local configuration', () => {
  it('is used after a restart, with ./ZINO.toml untouched, and a typo in it warned about once (points 1, 3, 10)', async () => {
    llm.script({ models: ['local-model'], rules: [{ reply: 'from the configured endpoint' }] });
    setEndpoint(llm.mock.baseUrl, '', '\n[servce]\nmodel = "typo"\n\n[approval]\nhost_user = "nobody"\n');
    const suite = await up();
    try {
      expect(suite.stdout()).toContain('  config:  ZINO.toml + .zino/ZINO.toml\n');
      expect(suite.stdout()).toContain(`  LLM:     ${llm.mock.baseUrl}, model local-model; reachable, serves local-model\n`);
      const ask = await cli(['ask', 'hello']);
      expect(ask).toMatchObject({ code: 0, stdout: 'from the configured endpoint\n' });
      expect(llm.mock.stats.bodies[0]?.model).toBe('local-model');
      const status = await cli(['status']);
      expect(status.stdout).toContain(`LLM:     ${llm.mock.baseUrl}, model local-model; reachable, serves local-model`);
      expect(status.stdout).toContain('key:     no key');
      expect(readFileSync(shared, 'utf8')).toBe(SHARED);
    } finally {
      expect(await suite.interrupt()).toEqual({ code: 0, signal: null });
    }
    const raw = suite.logs.map((l) => (typeof l.raw === 'string' ? l.raw : JSON.stringify(l)));
    const typo = raw.filter((line) => line.includes('unknown section [servce]'));
    expect(typo).toEqual([`zino up: configuration warning: ${local}: unknown section [servce] ignored (did you mean service?)`]);
    // zino up starts no privileged runner: a host_user there is said to refuse host runs, once.
    expect(raw.filter((line) => line.startsWith('zino up:') && line.includes('host_user'))).toEqual([
      expect.stringMatching(/^zino up: configuration warning: \[approval\] host_user = "nobody" .*which zino up does not start/),
    ]);
  });

  it('that nobody serves is reported as such by up, status and ask, before any advice about the model (points 3, 4, 8)', async () => {
    const port = await closedPort();
    const url = `http://127.0.0.1:${port}/v1`;
    setEndpoint(url, '');
    const suite = await up();
    try {
      expect(suite.stdout()).toContain(
        `  LLM:     ${url}, model (not set: the only one the endpoint serves); NOT REACHABLE: cannot reach the LLM API at ${url}: ECONNREFUSED`,
      );
      const status = await cli(['status']);
      expect(status.code).toBe(69);
      expect(status.stdout).toContain(`NOT REACHABLE: cannot reach the LLM API at ${url}: ECONNREFUSED`);
      const ask = await cli(['ask', 'hello']);
      expect(ask.code).toBe(69);
      expect(ask.stderr).toContain(`\nzino: cannot reach the LLM API at ${url}: ECONNREFUSED (after 3 attempts)\n`);
      expect(ask.stderr).not.toContain('[service] model');
    } finally {
      expect(await suite.interrupt()).toEqual({ code: 0, signal: null });
    }
  });
});

describe('one exit status for one cause (point 8)', () => {
  it('points at a ./.zino that is not running only when the command looked at the system sockets, not when a suite was named', async () => {
    const { dir: checkout, cleanup: done } = tempDir('zfh');
    try {
      mkdirSync(path.join(checkout, '.zino'));
      const unnamed = await runCli(['ask', 'hi'], { cwd: checkout, env });
      expect(unnamed.code).toBe(69);
      expect(unnamed.stderr).toContain('./.zino holds a suite that is not running: start it with "npm start"');
      const named = await runCli(['ask', 'hi', '--dir', path.join(checkout, 'elsewhere')], { cwd: checkout, env });
      expect(named.code).toBe(69);
      expect(named.stderr).toMatch(/^zino: cannot reach the ZINO daemon at .*elsewhere\/run\/daemon\.sock \(ENOENT\)\.\nStart the suite/);
    } finally {
      done();
    }
  });

  it('is 69 for every command when the suite is not running, with the advice once and no doubled path', async () => {
    const { dir: empty, cleanup: done } = tempDir('zfe');
    try {
      const run = (args: string[]) => runCli([...args, '--dir', empty], { cwd: empty, env });
      const results = await Promise.all([run(['ask', 'hi']), run(['status']), run(['mem', 'history', 'c']), run(['mem', 'soft'])]);
      expect(results.map((r) => r.code)).toEqual([69, 69, 69, 69]);
      const status = results[1]?.stdout ?? '';
      const socket = path.join(empty, 'run', 'daemon.sock');
      expect(status).toContain(`  daemon  DOWN              ${socket}  not running (no socket file)\n`);
      expect(status.split(socket).length - 1).toBe(2);
      expect(results[2]?.stderr).toMatch(/^zino: cannot reach mem at .*mem\.sock \(ENOENT\)\.\nStart the suite/);
      // A message over the daemon's bound is refused before sending, with the bound: even one over the frame limit.
      for (const size of [2 * 1024 * 1024, 20 * 1024 * 1024]) {
        const big = await runCli(['ask', '--dir', empty], { cwd: empty, env, input: 'a'.repeat(size) });
        expect(big).toMatchObject({
          code: 1,
          stderr: `zino: the message is ${size} bytes, over the bound of 1048576 bytes ([daemon] max_message_bytes, and at most a quarter of [limits] max_frame_bytes); it was not sent\n`,
        });
      }
    } finally {
      done();
    }
  });
});
