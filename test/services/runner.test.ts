/**
 * The privileged runner (`zino serve runner`) with a real exc in front of it: exc
 * with `[approval] host_user` hands every allowed host run to the runner, which runs
 * it as that account (here `nobody`, the tests running as root); a request to the
 * runner without a recorded decision, or replaying one, is refused; the socket is
 * 0660; with no runner, host runs are refused rather than run as exc's own user.
 */
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { request, type Frame } from '../../src/runtime/index.js';
import { CLI_PATH } from '../../src/testing/paths.js';
import { startProcess, waitForPing, type RunningProcess } from '../../src/testing/process.js';
import { startService, writeTestConfig, type StartedService } from '../../src/testing/suite.js';
import { tempDir, waitFor } from '../helpers/util.js';

const NOBODY = 65534;
const asRoot = process.geteuid?.() === 0;

const stops: (() => Promise<unknown>)[] = [];
const cleanups: (() => void)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
  for (const cleanup of cleanups.splice(0)) cleanup();
});

interface Setup {
  dir: string;
  out: string;
  runnerSocket: string;
  exc: StartedService;
  runner: RunningProcess;
  audit: () => Frame[];
}

async function setUp(options: { runner?: boolean } = {}): Promise<Setup> {
  const { dir, cleanup } = tempDir('zrun');
  cleanups.push(cleanup);
  // nobody must reach `out` to write there.
  chmodSync(dir, 0o755);
  const out = path.join(dir, 'out');
  mkdirSync(out, { mode: 0o777 });
  chmodSync(out, 0o777);
  const runnerSocket = path.join(dir, 'runner', 'runner.sock');
  mkdirSync(path.dirname(runnerSocket), { mode: 0o750 });
  const { file, config } = writeTestConfig(dir, {
    exc: { sandbox: 'none' },
    approval: { mode: 'allow', host_user: 'nobody' },
    runner: { socket: runnerSocket },
  });
  let runner: RunningProcess | undefined;
  if (options.runner !== false) {
    runner = startProcess(CLI_PATH, ['serve', 'runner', '--config', file], { env: { ...process.env, ZINO_LOG_LEVEL: 'debug' } });
    const started = runner;
    stops.push(() => started.stop());
    await waitForPing(runnerSocket, { proc: runner });
  }
  const exc = await startService('exc', file);
  stops.push(() => exc.stop());
  const audit = (): Frame[] =>
    existsSync(config.exc.audit_log)
      ? readFileSync(config.exc.audit_log, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Frame)
      : [];
  return { dir, out, runnerSocket, exc, runner: runner as RunningProcess, audit };
}

const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

describe('the privileged runner without [approval] host_user', () => {
  it('has nothing to do: says so and exits 0 without listening', async () => {
    const { dir, cleanup } = tempDir('zrun');
    cleanups.push(cleanup);
    const runnerSocket = path.join(dir, 'runner.sock');
    const { file } = writeTestConfig(dir, { runner: { socket: runnerSocket } });
    const runner = startProcess(CLI_PATH, ['serve', 'runner', '--config', file]);
    expect(await runner.exited).toEqual({ code: 0, signal: null });
    // 'exit' may come before the last of stderr is read.
    await waitFor(() => runner.logs.some((l) => String(l.msg).includes('no [approval] host_user')), 'the runner to say it has nothing to do');
    expect(existsSync(runnerSocket)).toBe(false);
  });
});

describe.skipIf(!asRoot)('the privileged runner', () => {
  it('runs an approved host run as [approval] host_user, and exc records that uid', async () => {
    const { out, exc, audit, runnerSocket } = await setUp();
    const proof = path.join(out, 'proof');
    const reply = await request(exc.socket, { type: 'execute', executor: 'bash', code: `id -u; echo written > ${proof}`, host: true, request_id: 'runner-1' });
    expect(reply).toMatchObject({ type: 'result', exit_code: 0, stdout: `${NOBODY}\n`, sandboxed: false, decision: 'policy:allow' });
    expect(reply).not.toHaveProperty('uid');
    expect(await request(exc.socket, { type: 'capabilities' })).toMatchObject({ approval: { host_user: 'nobody', runner: runnerSocket } });
    expect(statSync(proof).uid).toBe(NOBODY);
    expect(readFileSync(proof, 'utf8')).toBe('written\n');
    expect(audit().map((r) => [r.event, r.where, r.how, r.uid])).toEqual([
      ['decision', 'host', 'policy:allow', undefined],
      ['run', 'host', 'policy:allow', NOBODY],
    ]);
  });

  it('listens on a 0660 socket', async () => {
    const { runnerSocket } = await setUp();
    const stats = statSync(runnerSocket);
    expect(stats.isSocket()).toBe(true);
    expect(stats.mode & 0o777).toBe(0o660);
    expect(stats.gid).toBe(process.getegid?.());
  });

  it('refuses a run without a recorded decision, with a wrong SHA-256, or run a second time', async () => {
    const { out, exc, runnerSocket, audit } = await setUp();
    const proof = path.join(out, 'direct');
    const code = `touch ${proof}`;
    await expect(request(runnerSocket, { type: 'run', id: 'made-up', executor: 'bash', code, sha256: sha256(code) })).rejects.toMatchObject({
      code: 'RUN_NOT_RECORDED',
      message: expect.stringContaining('no decision with id "made-up"'),
    });
    await expect(request(runnerSocket, { type: 'run', id: 'x', executor: 'bash', code, sha256: 'f'.repeat(64) })).rejects.toMatchObject({
      code: 'RUN_NOT_RECORDED',
      message: expect.stringContaining('not the SHA-256 of code'),
    });
    // A real decision that exc has run: its id again, with other code or the same, is refused (other code against the record: runner-record.test.ts).
    await request(exc.socket, { type: 'execute', executor: 'bash', code: 'true', host: true });
    const id = String(audit()[0]?.id);
    await expect(request(runnerSocket, { type: 'run', id, executor: 'bash', code, sha256: sha256(code) })).rejects.toMatchObject({
      code: 'RUN_NOT_RECORDED',
      message: expect.stringContaining('already been run'),
    });
    await expect(request(runnerSocket, { type: 'run', id, executor: 'bash', code: 'true', sha256: sha256('true') })).rejects.toMatchObject({
      code: 'RUN_NOT_RECORDED',
      message: expect.stringContaining('already been run'),
    });
    await expect(request(runnerSocket, { type: 'nope' })).rejects.toMatchObject({ code: 'UNKNOWN_TYPE' });
    expect(existsSync(proof)).toBe(false);
  });

  it('kills the run when exc cancels it (the connection closes)', async () => {
    const { out, exc, audit } = await setUp();
    const pidFile = path.join(out, 'pid');
    const controller = new AbortController();
    const pending = request(
      exc.socket,
      { type: 'execute', executor: 'bash', code: `echo $$ > ${pidFile}; exec sleep 600`, host: true },
      { signal: controller.signal },
    );
    pending.catch(() => undefined);
    await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', 'the run to start');
    const pid = Number(readFileSync(pidFile, 'utf8'));
    controller.abort();
    await expect(pending).rejects.toMatchObject({ code: 'CANCELLED' });
    await waitFor(() => !alive(pid), 'the run to be killed');
    await waitFor(() => audit().some((r) => r.event === 'run' && r.error === 'cancelled'), 'the cancelled run in the audit log');
  });

  it('without a runner, exc refuses host runs instead of running them as its own user', async () => {
    const { out, exc, audit } = await setUp({ runner: false });
    const proof = path.join(out, 'none');
    await expect(request(exc.socket, { type: 'execute', executor: 'bash', code: `touch ${proof}`, host: true })).rejects.toMatchObject({
      code: 'UPSTREAM_UNAVAILABLE',
    });
    expect(existsSync(proof)).toBe(false);
    expect(audit().map((r) => [r.event, r.decision])).toEqual([
      ['decision', 'allow'],
      ['run', 'allow'],
    ]);
    expect(audit()[1]).toHaveProperty('error');
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
