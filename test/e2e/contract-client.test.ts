/**
 * A client that is not ours: test/fixtures/contract-client.py was written from the
 * service contract alone (Python 3, standard library, as the original zino_common did
 * it). It runs against the whole suite under `zino up`, with the mock LLM scripted by
 * the client's own `--mock-script`, and must find every reply as the contract promises.
 */
import { execFile, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { request } from '../../src/runtime/index.js';
import { detectSandbox } from '../../src/services/exc/sandbox.js';
import { parseScript } from '../../src/testing/mock-llm/script.js';
import { PACKAGE_ROOT, writeTestConfig, type ConfigOverrides } from '../../src/testing/suite.js';
import { startSuite, type RunningSuite } from '../../src/testing/up.js';
import { mockOverrides, useMockLlm } from '../helpers/mock.js';
import { tempDir } from '../helpers/util.js';

const CLIENT = path.join(PACKAGE_ROOT, 'test', 'fixtures', 'contract-client.py');
const SANDBOX = process.env.CI === 'true' || detectSandbox('auto').active;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Clients still running, killed when the file's tests end (a timed-out test must not leave one behind). */
const running = new Set<ChildProcess>();

/**
 * Runs the client asynchronously: the mock LLM it reaches lives in this process and must keep serving.
 * Bounded below the test's own timeout, so a client stuck on a service ends with its output shown.
 */
function python(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const options = { maxBuffer: 16 * 1024 * 1024, timeout: 220_000, killSignal: 'SIGKILL' as const, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } };
    const child = execFile('python3', [CLIENT, ...args], options, (err, stdout, stderr) => {
      running.delete(child);
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : null;
      resolve({ code, stdout, stderr: err !== null && typeof err.code !== 'number' ? `${stderr}\n${err.message}` : stderr });
    });
    running.add(child);
  });
}

const llm = useMockLlm();
let suite: RunningSuite;
let dir: string;
let cleanup: () => void;

beforeAll(async () => {
  ({ dir, cleanup } = tempDir('zcc'));
  // exc as shipped (sandbox "auto", approval "ask"): a contract client cannot answer approvals, so its
  // runs must be sandboxed to run at all (docs/protocol.md, "Stability"). Where no sandbox can be set up
  // (not in CI, which installs bubblewrap), its host runs are let through instead.
  const exc: ConfigOverrides = SANDBOX ? { exc: { sandbox: 'auto' }, approval: { mode: 'ask' } } : { approval: { unattended: 'allow' } };
  const { file } = writeTestConfig(dir, mockOverrides(llm.mock, exc));
  suite = await startSuite(file);
});

afterAll(async () => {
  for (const child of running) child.kill('SIGKILL');
  const exit = await suite.interrupt();
  expect(exit).toEqual({ code: 0, signal: null });
  cleanup();
});

it('a client written from the contract alone finds every service as the contract describes it', { timeout: 240_000 }, async () => {
  // The client's runs are sandboxed where a sandbox works (and so never wait for an approval).
  const caps = await request(path.join(dir, 'run', 'exc.sock'), { type: 'capabilities' });
  expect(caps.sandbox, JSON.stringify(caps)).toMatchObject({ active: SANDBOX });

  const printed = await python(['--mock-script']);
  expect(printed.code, printed.stderr).toBe(0);
  llm.script(parseScript(JSON.parse(printed.stdout)));

  const run = await python([path.join(dir, 'run')]);
  const report = `${run.stdout}\n${run.stderr}`;
  const lines = run.stdout.split('\n');
  // The summary and the tolerated differences, in the test log.
  console.log(lines.filter((l) => l.startsWith('#') || l.startsWith('known ')).join('\n'));
  // Every failed check, by name and reason, in the assertion message.
  expect(
    lines.filter((l) => l.startsWith('FAIL')),
    report,
  ).toEqual([]);
  expect(run.code, report).toBe(0);
  // It really exercised every service (a client that checked nothing would exit 0 too).
  for (const service of ['daemon', 'rtr', 'agr', 'sys', 'exc', 'mem', 'ctx']) {
    expect(lines.filter((l) => l.startsWith(`ok ${service} `)).length, `${service}\n${report}`).toBeGreaterThan(3);
  }
  expect(run.stdout).toMatch(/^# \d+ ok, 0 failed, \d+ known differences/m);
  // A known difference is a bound ZINO adds on purpose (docs/protocol.md, "Stability"): refused
  // with a clear INVALID_REQUEST, never anything else.
  for (const line of lines.filter((l) => l.startsWith('known '))) expect(line).toContain('"code": "INVALID_REQUEST"');
  // Where the validators are installed (CI installs shellcheck), broken code must fail validation, not pass.
  if (process.env.CI === 'true') {
    expect(lines, report).toContain('ok exc validate broken bash: ok false with errors (its validator is available)');
    expect(lines, report).toContain('ok exc validate broken python3: ok false with errors (its validator is available)');
  }
  // The LLM checks went through the mock (scripted, so deterministic).
  expect(llm.mock.stats.requests).toBeGreaterThan(10);

  // What only this side sees: the daemon's prompt as the LLM got it (contract lines 45-59):
  // [system, ...context, user], with the default temperature 0.7 and top_p 1.0.
  const body = llm.mock.stats.bodies.find((b) => lastContent(b) === 'hello from the contract client');
  expect(body, 'the daemon request reached the LLM').toBeDefined();
  const messages = body?.messages as { role: string; content: string }[];
  expect(messages[0]?.role).toBe('system');
  expect(messages.at(-1)).toEqual({ role: 'user', content: 'hello from the contract client' });
  expect(messages.length, 'skill examples from ctx between system and user').toBeGreaterThan(2);
  expect(body?.temperature).toBe(0.7);
  expect(body?.top_p).toBe(1);
});

function lastContent(body: Record<string, unknown>): unknown {
  const messages = body.messages;
  return Array.isArray(messages) ? (messages.at(-1) as { content?: unknown } | undefined)?.content : undefined;
}
