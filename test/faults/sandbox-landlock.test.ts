/**
 * The landlock view tells the truth too, with no bubblewrap and no namespace: a
 * real exc's programs see the host's processes, addresses, routes, listening
 * sockets and file owners as the test sees them, and still write nowhere but their
 * working directory, connect nowhere (TCP or unix), read none of ZINO's files,
 * cannot signal or look into exc, and leave nothing running, on exit, timeout or
 * cancel. Run two ways: an exc as uid 65534 under `sandbox = "auto"` (an exc that
 * is not root, the case the view is for: the program has exc's own uid, so only
 * Landlock and seccomp keep it from exc), and a root exc under
 * `sandbox = "landlock"` (each run a uid of its own, from a directory in the
 * host's /tmp that the run's user could read but for Landlock).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from '../../src/runtime/index.js';
import { isRunUid } from '../../src/services/exc/run-users.js';
import { detectSandbox } from '../../src/services/exc/sandbox.js';
import { startService, writeTestConfig, type StartedService } from '../../src/testing/suite.js';
import { NOBODY, executeIn, startExc, type Exc } from '../helpers/exc-as.js';
import { processesMatching } from '../helpers/procs.js';
import { waitFor } from '../helpers/util.js';
import { countingListener, fields, lines, onHost } from '../helpers/views.js';

const ROOT = process.geteuid?.() === 0;
// Landlock ABI 6 (Linux 6.12) and python3; where the kernel is older the view is refused (checked below) and these skip.
const LANDLOCK = detectSandbox('landlock').active;
const SECRET = `zino-ll-secret-${process.pid}-${Date.now()}`;

/** Runs `code`; it must exit 0, sandboxed. Returns stdout. */
async function inside(exc: { socket: string }, code: string, executor = 'bash'): Promise<string> {
  const reply = await executeIn(exc, executor, code);
  expect(reply, JSON.stringify(reply)).toMatchObject({ type: 'result', exit_code: 0, sandboxed: true });
  return String(reply.stdout);
}

const attempt = (name: string, command: string): string => `if ${command} 2>/dev/null; then echo ${name}=ok; else echo ${name}=denied; fi`;

/** A unique `sleep` so that its processes can be found by their command line. */
const uniqueSleep = (): string => `7000.${Math.floor(Math.random() * 1e9)}`;

/** What both excs must show: the host as the test sees it. */
function sharedChecks(get: () => { socket: string; pid: () => number }): void {
  it("lists the host's processes: exc's and the test's own among them", async () => {
    const exc = get();
    const pids = lines(await inside(exc, 'ps -eo pid=')).map(Number);
    expect(pids).toContain(exc.pid());
    expect(pids).toContain(process.pid);
  });

  it("sees the host's addresses, routes and a socket the test listens on", async () => {
    const exc = get();
    const addrs = "ip -o addr show | awk '{print $2, $3, $4}'";
    expect(lines(await inside(exc, addrs))).toEqual(lines(onHost(addrs)));
    expect(lines(await inside(exc, 'ip route show'))).toEqual(lines(onHost('ip route show')));
    const server = net.createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as net.AddressInfo).port;
      expect(await inside(exc, 'ss -ltn')).toContain(`127.0.0.1:${port}`);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('shows file owners and modes as the host does', async () => {
    const exc = get();
    const command = "stat -c '%n %U %G %a' /etc/passwd /etc/shadow /usr/bin";
    expect(await inside(exc, command)).toBe(onHost(command));
  });

  it('cannot open a TCP connection to a listener on loopback, which sees nothing', async () => {
    const exc = get();
    const listener = await countingListener();
    try {
      const port = listener.port;
      const code = [
        'import socket',
        'try:',
        `    socket.create_connection(("127.0.0.1", ${port}), timeout=5)`,
        '    print("tcp=ok")',
        'except OSError as e:',
        '    print("tcp=denied", e.errno)',
      ].join('\n');
      expect(await inside(exc, code, 'python3')).toBe('tcp=denied 13\n');
      expect(listener.accepted()).toBe(0);
    } finally {
      await listener.close();
    }
  });

  it('runs ordinary programs: output to /dev/null and /dev/stderr, a socketpair, files in its working directory, TMPDIR there', async () => {
    const exc = get();
    const out = await inside(
      exc,
      [
        'echo quiet > /dev/null && echo devnull=ok',
        'echo warned > /dev/stderr',
        'mkdir d && echo x > d/a && mv d/a d/b && cat d/b',
        '[ "$TMPDIR" = "$PWD" ] && echo tmpdir=ok',
        'python3 -c "import socket, tempfile; a, b = socket.socketpair(); a.send(b\'pair\'); print(b.recv(4).decode()); tempfile.NamedTemporaryFile()"',
      ].join('\n'),
    );
    expect(out).toBe('devnull=ok\nx\ntmpdir=ok\npair\n');
  });
}

describe.runIf(LANDLOCK && ROOT)('the landlock view of an exc that is not root (uid 65534, sandbox = "auto")', () => {
  let exc: Exc;
  let timeoutExc: Exc;
  let audit: string;
  beforeAll(async () => {
    [exc, timeoutExc] = await Promise.all([
      startExc('nobody', { sandbox: 'auto', secret: SECRET }),
      startExc('nobody', { sandbox: 'auto', secret: SECRET, timeout: 2 }),
    ]);
    const caps = await request(exc.socket, { type: 'capabilities' });
    audit = String((caps.audit as { file: string }).file);
    // mem's data, as mem (the same user) would leave it.
    const mem = path.join(exc.dir, 'data', 'mem');
    mkdirSync(mem, { recursive: true });
    writeFileSync(path.join(mem, 'memories.jsonl'), SECRET, { mode: 0o600 });
    for (const p of [path.join(exc.dir, 'data'), mem, path.join(mem, 'memories.jsonl')]) chownSync(p, NOBODY, NOBODY);
  });
  afterAll(async () => {
    await exc?.stop();
    await timeoutExc?.stop();
  });
  const excPid = (): number => exc.child.pid as number;

  it('is chosen, and capabilities says what it cannot see or do', async () => {
    const caps = await request(exc.socket, { type: 'capabilities' });
    expect(caps).toMatchObject({ sandbox: { mode: 'auto', active: true, view: 'landlock' } });
    const reason = String((caps.sandbox as { reason: string }).reason);
    expect(reason).toMatch(/^landlock view \(Landlock ABI \d+, no bubblewrap\)/);
    expect(reason).toContain("as exc's own user");
    expect(reason).toContain('no unix socket, so D-Bus tools (systemctl status, loginctl, busctl) fail there: ask for a host run');
    expect(reason).toContain('files created after a run started next to them');
    expect(await inside(exc, 'id -u')).toBe(`${NOBODY}\n`);
  });

  sharedChecks(() => ({ socket: exc.socket, pid: excPid }));

  it("writes nowhere but its working directory, even where exc's own user may write", async () => {
    const mem = path.join(exc.dir, 'data', 'mem');
    const out = fields(
      await inside(
        exc,
        [
          attempt('etc', 'touch /etc/zino-ll-was-here'),
          attempt('tmp', `touch /tmp/zino-ll-was-here-${process.pid}`),
          attempt('vartmp', `touch /var/tmp/zino-ll-was-here-${process.pid}`),
          // exc's own directory stands for its user's home: the user may write there, the run may not.
          attempt('home', `touch ${exc.dir}/was-here`),
          attempt('data', `touch ${mem}/was-here`),
          attempt('audit', `echo forged >> ${audit}`),
          attempt('workdir', 'touch here && test -f here'),
        ].join('\n'),
      ),
    );
    expect(out).toEqual({ etc: 'denied', tmp: 'denied', vartmp: 'denied', home: 'denied', data: 'denied', audit: 'denied', workdir: 'ok' });
    expect(existsSync(path.join(exc.dir, 'was-here'))).toBe(false);
    expect(existsSync(`/tmp/zino-ll-was-here-${process.pid}`)).toBe(false);
    // Every line of the audit log is still exc's own (the program's text is in it, as a JSON string).
    expect(
      readFileSync(audit, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('forged')),
    ).toEqual([]);
  });

  it("reads none of ZINO's files though its uid owns them: config, mem's data, the audit log", async () => {
    const reply = await executeIn(exc, 'bash', `cat ${exc.file}; cat ${exc.dir}/data/mem/memories.jsonl; cat ${audit}; echo done`);
    expect(reply).toMatchObject({ exit_code: 0, stdout: 'done\n', sandboxed: true });
    expect(String(reply.stderr).match(/Permission denied/g)).toHaveLength(3);
    expect(`${String(reply.stdout)}${String(reply.stderr)}`).not.toContain(SECRET);
  });

  it("can neither connect to exc's socket nor signal exc nor read its environment, though they share a uid", async () => {
    const out = fields(
      await inside(
        exc,
        [
          attempt('signal', `kill -0 ${excPid()}`),
          attempt('environ', `head -c1 /proc/${excPid()}/environ >/dev/null`),
          attempt('cwd', `ls /proc/${excPid()}/cwd/`),
          `grep -q . /proc/${excPid()}/cmdline && echo cmdline=visible`,
          `python3 -c 'import socket; socket.socket(socket.AF_UNIX).connect(${JSON.stringify(exc.socket)})' 2>/dev/null && echo connect=ok || echo connect=denied`,
        ].join('\n'),
      ),
    );
    expect(out).toEqual({ signal: 'denied', environ: 'denied', cwd: 'denied', cmdline: 'visible', connect: 'denied' });
    // The same uid outside the sandbox could do all of it.
    const asNobody = spawnSync(
      'runuser',
      ['-u', 'nobody', '--', 'sh', '-c', `kill -0 ${excPid()} && head -c1 /proc/${excPid()}/environ >/dev/null && echo both`],
      {
        encoding: 'utf8',
      },
    );
    expect(asNobody.stdout).toBe('both\n');
  });

  it('leaves nothing running: not what left its group and cleared its environment, nor after a cancel', async () => {
    const [a, b] = [uniqueSleep(), uniqueSleep()];
    expect(await inside(exc, `setsid env -i sleep ${a} & ( setsid env -i sleep ${b} & ) ; echo started`)).toBe('started\n');
    expect(processesMatching(`sleep ${a}`)).toEqual([]);
    expect(processesMatching(`sleep ${b}`)).toEqual([]);
    const c = uniqueSleep();
    const abort = new AbortController();
    const run = executeIn(exc, 'bash', `setsid env -i sleep ${c} & sleep ${c}`, abort.signal).catch((err: unknown) => err);
    await waitFor(() => processesMatching(`sleep ${c}`).length === 2, 'both sleeps to start');
    abort.abort();
    await run;
    await waitFor(() => processesMatching(`sleep ${c}`).length === 0, 'the cancelled run to be gone');
  });

  it('a timeout ends the whole tree, what ignores SIGTERM and what left the group included', async () => {
    const [a, b] = [uniqueSleep(), uniqueSleep()];
    const code = `trap '' TERM; setsid env -i sh -c 'trap "" TERM; sleep ${a}' & sleep ${b}; echo never`;
    const reply = await executeIn(timeoutExc, 'bash', code);
    expect(reply).toMatchObject({ timed_out: true, exit_code: 124, stdout: '', sandboxed: true });
    expect(processesMatching(`sleep ${a}`)).toEqual([]);
    expect(processesMatching(`sleep ${b}`)).toEqual([]);
  });
});

describe.runIf(LANDLOCK && ROOT)('the landlock view of a root exc (sandbox = "landlock")', () => {
  let exc: StartedService;
  let dir: string;
  beforeAll(async () => {
    // In the host's /tmp, open to all, config readable by all: only the sandbox keeps the run out of it.
    dir = mkdtempSync(path.join(tmpdir(), 'zll-'));
    chmodSync(dir, 0o755);
    const { file } = writeTestConfig(dir, { exc: { sandbox: 'landlock', timeout: 30 }, api: { key: SECRET } });
    chmodSync(file, 0o644);
    exc = await startService('exc', file);
  });
  afterAll(async () => {
    await exc?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is used, each run as a uid of its own with no capabilities', async () => {
    const caps = await request(exc.socket, { type: 'capabilities' });
    expect(caps).toMatchObject({ sandbox: { mode: 'landlock', active: true, view: 'landlock' } });
    expect(String((caps.sandbox as { reason: string }).reason)).toContain('each run as a uid of its own with no capabilities');
    const out = fields(await inside(exc, 'echo "uid=$(id -u)"; echo "capeff=$(awk \'/^CapEff/ {print $2}\' /proc/self/status)"'));
    expect(isRunUid(Number(out.uid))).toBe(true);
    expect(out.capeff).toBe('0000000000000000');
  });

  sharedChecks(() => ({ socket: exc.socket, pid: () => exc.child.pid as number }));

  it("hides ZINO's files in the host's /tmp, and the other runs' working directories", async () => {
    const marker = uniqueSleep();
    const abort = new AbortController();
    const other = executeIn(exc, 'bash', `echo "${SECRET}" > mine.txt; sleep ${marker}`, abort.signal).catch((err: unknown) => err);
    await waitFor(() => processesMatching(`sleep ${marker}`).length > 0, 'the first run to sleep');
    const workdirs = readdirSync(tmpdir()).filter((n) => n.startsWith(`zino-exc-${exc.child.pid}-`));
    // The other run's directory is its uid's (0710, group root): make it readable by all, so that only Landlock stands in the way.
    for (const name of workdirs) chmodSync(path.join(tmpdir(), name), 0o755);
    for (const name of workdirs) if (existsSync(path.join(tmpdir(), name, 'mine.txt'))) chmodSync(path.join(tmpdir(), name, 'mine.txt'), 0o644);
    try {
      const reply = await executeIn(
        exc,
        'bash',
        [`cat ${path.join(dir, 'ZINO.toml')}`, ...workdirs.map((n) => `cat ${path.join(tmpdir(), n)}/mine.txt`), 'echo done'].join('\n'),
      );
      expect(reply).toMatchObject({ exit_code: 0, stdout: 'done\n', sandboxed: true });
      expect(`${String(reply.stdout)}${String(reply.stderr)}`).not.toContain(SECRET);
      expect(String(reply.stderr)).toContain('Permission denied');
      // The test itself reads them: they are there.
      expect(readFileSync(path.join(dir, 'ZINO.toml'), 'utf8')).toContain(SECRET);
    } finally {
      abort.abort();
      await other;
    }
  });
});

describe('when the landlock view cannot be had', () => {
  it('"landlock" refuses every sandboxed run, and says why', () => {
    const state = detectSandbox('landlock', { launcher: '/nonexistent/zino-sandbox.py' });
    expect(state).toMatchObject({
      active: false,
      refusal: '[exc] sandbox = "landlock" but the landlock view cannot be had: its launcher /nonexistent/zino-sandbox.py is missing',
    });
    expect(detectSandbox('landlock', { path: '/nonexistent' })).toMatchObject({
      active: false,
      refusal: expect.stringContaining('python3 is not installed') as unknown,
    });
    expect(detectSandbox('landlock', { arch: 'riscv64' }).refusal).toContain('no seccomp filter for the riscv64 architecture');
  });

  it.runIf(ROOT && detectSandbox('bwrap').active)(
    'a kernel older than Landlock ABI 6 (its launcher refuses): auto falls back to bubblewrap and says why',
    () => {
      // A launcher that answers as the real one does on such a kernel.
      // Outside /tmp and open: bwrap's probe (as nobody, with a /tmp of its own) runs sh from it.
      const fake = mkdtempSync('/var/tmp/zll-fake-');
      chmodSync(fake, 0o755);
      const launcher = path.join(fake, 'zino-sandbox.py');
      writeFileSync(
        launcher,
        'import sys\nsys.stderr.write("zino-sandbox: Landlock ABI 5 is older than 6: without its signal and abstract-socket scopes the run could reach exc\\n")\nsys.exit(125)\n',
      );
      try {
        // Without setpriv a root exc has no host view; python3 and bwrap are found.
        const bin = path.join(fake, 'bin');
        mkdirSync(bin);
        for (const tool of ['python3', 'bwrap', 'sh']) {
          const found = ['/usr/bin', '/bin'].map((d) => path.join(d, tool)).find((p) => existsSync(p));
          if (found) spawnSync('ln', ['-s', found, path.join(bin, tool)]);
        }
        const state = detectSandbox('auto', { launcher, path: bin });
        expect(state).toMatchObject({ active: true, view: 'private' });
        expect(state.reason).toContain('no host view: setpriv (util-linux) is not installed; no landlock view: Landlock ABI 5 is older than 6');
      } finally {
        rmSync(fake, { recursive: true, force: true });
      }
    },
  );
});
