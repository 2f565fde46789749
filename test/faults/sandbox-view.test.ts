/**
 * The sandbox tells the truth: with exc as root (how CI runs), a real exc's
 * sandboxed programs see the host as the host sees itself (network interfaces and
 * addresses, listening sockets, processes with their pids, file owners and modes, a
 * log the service may read), and still cannot connect anywhere, send a datagram,
 * signal or look into another process, or leave anything running. Each point is
 * checked against the host's own view, taken by this test outside the sandbox.
 * Where something the host view needs is missing, `auto` falls back to the
 * landlock view (else the private view) and says why.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import dgram from 'node:dgram';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, type Frame } from '../../src/runtime/index.js';
import { isRunUid } from '../../src/services/exc/run-users.js';
import { detectSandbox, logGroups } from '../../src/services/exc/sandbox.js';
import { startService, writeTestConfig, type StartedService } from '../../src/testing/suite.js';
import { processesMatching } from '../helpers/procs.js';
import { tempDir, waitFor } from '../helpers/util.js';
import { lines, onHost } from '../helpers/views.js';

const ROOT = process.geteuid?.() === 0;
// CI runs as root with bubblewrap installed (.ci/debian-packages); locally the test needs both.
const HOST_VIEW = ROOT && (detectSandbox('auto').view === 'host' || process.env.CI !== undefined);
const ID = `${process.pid}-${Math.floor(Math.random() * 1e9)}`;

function execute(exc: StartedService, executor: string, code: string, signal?: AbortSignal): Promise<Frame> {
  return request(exc.socket, { type: 'execute', executor, code }, { timeoutMs: 60_000, ...(signal ? { signal } : {}) });
}

/** Runs `code` in the sandbox; it must exit 0 sandboxed. Returns stdout. */
async function inside(exc: StartedService, code: string, executor = 'bash'): Promise<string> {
  const reply = await execute(exc, executor, code);
  expect(reply, JSON.stringify(reply)).toMatchObject({ type: 'result', exit_code: 0, sandboxed: true });
  return String(reply.stdout);
}

/** A unique `sleep` so that its processes can be found by their command line. */
function uniqueSleep(): string {
  return `7000.${Math.floor(Math.random() * 1e9)}`;
}

describe.runIf(HOST_VIEW)('the sandbox shows the host as it is (exc as root)', () => {
  let exc: StartedService;
  let cleanup: () => void;
  beforeAll(async () => {
    const dir = tempDir('zview');
    cleanup = dir.cleanup;
    const { file } = writeTestConfig(dir.dir, { exc: { sandbox: 'bwrap', timeout: 30 } });
    exc = await startService('exc', file);
  });
  afterAll(async () => {
    await exc?.stop();
    cleanup?.();
  });

  it('says so in capabilities', async () => {
    const caps = await request(exc.socket, { type: 'capabilities' });
    expect(caps).toMatchObject({ sandbox: { mode: 'bwrap', active: true, reason: expect.stringContaining('host view') as unknown } });
  });

  it("sees the host's network interfaces and addresses", async () => {
    // /proc/net/dev is the reader's network namespace: the interfaces by name.
    const names = (text: string): string[] => lines(text.split('\n').slice(2).join('\n')).map((l) => l.split(':')[0]!.trim());
    const hostNames = names(readFileSync('/proc/net/dev', 'utf8'));
    expect(names(await inside(exc, 'cat /proc/net/dev'))).toEqual(hostNames);
    expect(hostNames.length).toBeGreaterThan(0);
    if (spawnSync('ip', ['-V']).status === 0) {
      // Interface, family and address of every address (netlink, NETLINK_ROUTE).
      const addrs = "ip -o addr show | awk '{print $2, $3, $4}'";
      const host = lines(onHost(addrs));
      expect(lines(await inside(exc, addrs))).toEqual(host);
      expect(lines(await inside(exc, 'ip route show'))).toEqual(lines(onHost('ip route show')));
    }
  });

  it('sees a socket listening on the host but cannot connect to it, by TCP or UDP, from bash, python or curl', async () => {
    let accepted = 0;
    const server = net.createServer((s) => {
      accepted++;
      s.end('hello\n');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    let datagrams = 0;
    const udp = dgram.createSocket('udp4', () => datagrams++);
    await new Promise<void>((r) => udp.bind(0, '127.0.0.1', r));
    const udpPort = udp.address().port;
    try {
      // /proc/net/tcp: local address 0100007F:PORT in state 0A (LISTEN).
      const hex = port.toString(16).toUpperCase().padStart(4, '0');
      const tcp = await inside(exc, `grep -c ' 0100007F:${hex} 00000000:0000 0A ' /proc/net/tcp`);
      expect(tcp.trim()).toBe('1');
      if (spawnSync('ss', ['-V']).status === 0) expect(await inside(exc, 'ss -tln')).toContain(`127.0.0.1:${port}`);
      const bash = await execute(exc, 'bash', `exec 3<>/dev/tcp/127.0.0.1/${port} && echo reached`);
      expect(bash).toMatchObject({ sandboxed: true, stdout: '' });
      expect(String(bash.stderr)).toContain('Permission denied');
      const py = await inside(
        exc,
        [
          'import socket',
          'for label, make in [("tcp", lambda: socket.create_connection(("127.0.0.1", ' + port + '), timeout=5)),',
          '                    ("tcp6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM)),',
          '                    ("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", ' + udpPort + '))),',
          '                    ("raw", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW))]:',
          '    try:',
          '        make()',
          '        print(label, "reached")',
          '    except OSError as e:',
          '        print(label, "denied", e.errno)',
        ].join('\n'),
        'python3',
      );
      expect(lines(py)).toEqual(['raw denied 13', 'tcp denied 13', 'tcp6 denied 13', 'udp denied 13']);
      if (spawnSync('curl', ['--version']).status === 0) {
        const curl = await execute(exc, 'bash', `curl -sS --max-time 5 http://127.0.0.1:${port}/`);
        expect(curl).toMatchObject({ sandboxed: true, exit_code: 7, stdout: '' });
      }
      // From the host, the same listener answers: it was there to be reached.
      const reached = await new Promise<string>((resolve, reject) => {
        const s = net.connect(port, '127.0.0.1');
        let text = '';
        s.on('data', (d) => (text += d.toString()));
        s.on('end', () => resolve(text));
        s.on('error', reject);
      });
      expect(reached).toBe('hello\n');
      expect(accepted).toBe(1);
      expect(datagrams).toBe(0);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
      udp.close();
    }
  });

  describe('processes', () => {
    const sleepers: ChildProcess[] = [];
    afterAll(() => {
      for (const child of sleepers) child.kill('SIGKILL');
    });
    const sleeper = (uid?: number): { pid: number; marker: string } => {
      const marker = uniqueSleep();
      const child = spawn('sleep', [marker], { stdio: 'ignore', ...(uid !== undefined ? { uid, gid: uid } : {}) });
      sleepers.push(child);
      return { pid: child.pid as number, marker };
    };

    it("lists the host's processes with their real pids and owners, its own pid among them", async () => {
      const host = sleeper();
      const ps = await inside(exc, `ps -eo pid=,user=,args= | grep -F -- '${host.marker}' | grep -v grep; echo "self $$ $(tr '\\0' ' ' < /proc/$$/cmdline)"`);
      expect(ps).toMatch(new RegExp(`^\\s*${host.pid} root +sleep ${host.marker.replace('.', '\\.')}$`, 'm'));
      // $$ (getpid) and /proc agree: the host's PID namespace, not one of its own.
      expect(ps).toMatch(/^self \d+ bash --noprofile --norc zino_program\.sh $/m);
    });

    it('can neither signal nor look into a process outside its run, even one of a shared unprivileged user', async () => {
      const rootOwned = sleeper();
      const nobodyOwned = sleeper(65534); // as a host daemon running as nobody
      const probe = (pid: number): string =>
        [
          `kill -0 ${pid} 2>/dev/null && echo "${pid} signal=ok" || echo "${pid} signal=denied"`,
          `cat /proc/${pid}/environ >/dev/null 2>&1 && echo "${pid} environ=ok" || echo "${pid} environ=denied"`,
          `ls /proc/${pid}/root/ >/dev/null 2>&1 && echo "${pid} root=ok" || echo "${pid} root=denied"`,
          `ls /proc/${pid}/cwd/ >/dev/null 2>&1 && echo "${pid} cwd=ok" || echo "${pid} cwd=denied"`,
          `grep -q . /proc/${pid}/cmdline && echo "${pid} cmdline=visible"`,
        ].join('\n');
      const out = await inside(exc, `${probe(rootOwned.pid)}\n${probe(nobodyOwned.pid)}\n${probe(1)}`);
      for (const pid of [rootOwned.pid, nobodyOwned.pid, 1])
        for (const what of ['signal', 'environ', 'root', 'cwd']) expect(out).toContain(`${pid} ${what}=denied`);
      expect(out).toContain(`${nobodyOwned.pid} cmdline=visible`);
    });

    it('cannot reach into a concurrent run', async () => {
      const marker = uniqueSleep();
      const abort = new AbortController();
      const first = execute(exc, 'bash', `echo "secret-${ID}" > mine.txt; sleep ${marker}`, abort.signal).catch((err: unknown) => err);
      const [pid] = await waitFor(() => processesMatching(`sleep ${marker}`).length > 0 && processesMatching(`sleep ${marker}`), 'the first run to sleep');
      const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
      expect(isRunUid(uid)).toBe(true);
      const second = await execute(
        exc,
        'bash',
        [`kill -0 ${pid} 2>&1; cat /proc/${pid}/environ 2>&1; ls /proc/${pid}/cwd/ 2>&1; cat /proc/${pid}/cwd/mine.txt 2>&1`, `echo "uid $(id -u)"`].join('\n'),
      );
      expect(String(second.stdout)).not.toContain(`secret-${ID}`);
      expect(String(second.stdout)).not.toContain('ZINO_EXC_RUN');
      expect(String(second.stdout)).toMatch(/Operation not permitted[\s\S]*Permission denied/);
      // Each run has a uid of its own.
      expect(String(second.stdout)).not.toContain(`uid ${uid}\n`);
      abort.abort();
      await first;
      await waitFor(() => processesMatching(`sleep ${marker}`).length === 0, 'the cancelled run to be gone');
    });

    it('leaves nothing running: not what left its group, cleared its environment or was orphaned, nor after a cancel', async () => {
      const [a, b, c] = [uniqueSleep(), uniqueSleep(), uniqueSleep()];
      const code = `setsid env -i sleep ${a} & ( setsid sleep ${b} & ) ; nohup sleep ${c} >/dev/null 2>&1 & disown; echo started`;
      expect(await inside(exc, code)).toBe('started\n');
      await waitFor(() => [a, b, c].every((m) => processesMatching(`sleep ${m}`).length === 0), 'every leftover to be killed');
      // Cancelled mid-run (the client disconnects): the same.
      const d = uniqueSleep();
      const abort = new AbortController();
      const run = execute(exc, 'bash', `setsid env -i sleep ${d} & sleep ${d}`, abort.signal).catch((err: unknown) => err);
      await waitFor(() => processesMatching(`sleep ${d}`).length === 2, 'both sleeps to start');
      abort.abort();
      await run;
      await waitFor(() => processesMatching(`sleep ${d}`).length === 0, 'the cancelled run to be gone');
    });
  });

  describe('files', () => {
    let dir: string;
    beforeAll(() => {
      // Outside /tmp (the sandbox has its own) and open to all.
      dir = mkdtempSync('/var/tmp/zview-');
      chmodSync(dir, 0o755);
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it("shows owners and modes as the host does: root's files are root's, an unnamed owner keeps its number", async () => {
      const odd = path.join(dir, 'odd-owner');
      writeFileSync(odd, 'x');
      chownSync(odd, 12345, 54321);
      chmodSync(odd, 0o4751);
      const paths = ['/etc/passwd', '/etc', '/usr/bin', odd, ...['/etc/shadow', '/var/log', '/usr/bin/passwd'].filter((p) => existsSync(p))];
      const out = await inside(exc, paths.map((p) => `stat -c '%n %u %g %a' '${p}'`).join('\n'));
      const host = paths.map((p) => {
        const st = statSync(p);
        return `${p} ${st.uid} ${st.gid} ${(st.mode & 0o7777).toString(8)}`;
      });
      expect(lines(out)).toEqual(lines(host.join('\n')));
      expect(await inside(exc, 'stat -c %U /etc/passwd')).toBe('root\n');
    });

    it('reads a log the service may read (group adm), not a file only root may read', async () => {
      const adm = logGroups().find((g) => g.name === 'adm');
      if (!adm || !existsSync('/var/log')) return; // no adm group on this host: nothing grants log reading
      const log = `/var/log/zino-view-${ID}.log`;
      const rootOnly = `/var/log/zino-view-${ID}-root.log`;
      writeFileSync(log, `log line ${ID}\n`, { mode: 0o640 });
      chownSync(log, 0, adm.gid);
      writeFileSync(rootOnly, `secret ${ID}\n`, { mode: 0o600 });
      try {
        const out = await inside(exc, `cat ${log}; cat ${rootOnly} 2>&1 || true; echo "groups $(id -G)"`);
        expect(out).toContain(`log line ${ID}`);
        expect(out).toContain('Permission denied');
        expect(out).not.toContain(`secret ${ID}`);
        expect(out).toMatch(new RegExp(`^groups .*\\b${adm.gid}\\b`, 'm'));
      } finally {
        rmSync(log, { force: true });
        rmSync(rootOnly, { force: true });
      }
    });

    it('changes nothing: the host file system, /proc and /sys are read-only to it', async () => {
      const target = path.join(dir, 'written');
      const reply = await execute(
        exc,
        'bash',
        [
          `touch ${target} 2>&1`,
          'touch /var/tmp/zino-was-here 2>&1',
          'echo 0 > /proc/self/oom_score_adj 2>&1',
          'echo zino > /proc/sys/kernel/hostname 2>&1',
          'echo 1 > /sys/kernel/mm/ksm/run 2>&1',
          'echo ok > in-workdir.txt && cat in-workdir.txt',
        ].join('\n'),
      );
      // A failed redirection is reported by bash on stderr.
      expect(`${String(reply.stdout)}${String(reply.stderr)}`.match(/Read-only file system/g)).toHaveLength(5);
      expect(String(reply.stdout)).toMatch(/ok\n$/);
      expect(existsSync(target)).toBe(false);
      expect(existsSync('/var/tmp/zino-was-here')).toBe(false);
    });
  });
});

describe.runIf(ROOT && (detectSandbox('auto').active || process.env.CI !== undefined))(
  'when the host view cannot be had, auto says why and falls back to the landlock view, else the private view',
  () => {
    /** An exc whose PATH holds only `tools` (no setpriv: no host view), from a directory outside /tmp and open (bwrap runs from it as nobody). */
    async function withOnly<T>(tools: string[], body: (exc: StartedService) => Promise<T>): Promise<T> {
      const dir = mkdtempSync('/var/tmp/zview-nosetpriv-');
      chmodSync(dir, 0o755);
      let exc: StartedService | undefined;
      try {
        const bin = path.join(dir, 'bin');
        mkdirSync(bin);
        for (const tool of tools) {
          const found = ['/usr/bin', '/bin', '/usr/local/bin'].map((d) => path.join(d, tool)).find((p) => existsSync(p));
          if (found) symlinkSync(found, path.join(bin, tool));
        }
        const { file } = writeTestConfig(dir, { exc: { sandbox: 'auto' } });
        exc = await startService('exc', file, { env: { PATH: bin } });
        return await body(exc);
      } finally {
        await exc?.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    }
    const interfaces = "awk -F: 'NR > 2 {print $1}' /proc/net/dev | tr -d ' '";

    it.runIf(detectSandbox('landlock').active)('without setpriv: the landlock view, each run a uid of its own, and capabilities says why', async () => {
      await withOnly(['bash', 'python3', 'bwrap', 'sh', 'shellcheck', 'id', 'awk', 'tr'], async (exc) => {
        expect(await request(exc.socket, { type: 'capabilities' })).toMatchObject({
          sandbox: { active: true, view: 'landlock', reason: expect.stringContaining('(no host view: setpriv (util-linux) is not installed)') as unknown },
        });
        const [uid, ...names] = lines(await inside(exc, `id -u; ${interfaces}`));
        expect(isRunUid(Number(uid))).toBe(true);
        expect(names).toEqual(lines(onHost(interfaces)));
      });
    });

    it('without setpriv nor python3: the private view as nobody, and capabilities says why', async () => {
      await withOnly(['bash', 'bwrap', 'sh', 'shellcheck', 'id', 'awk', 'tr'], async (exc) => {
        expect(await request(exc.socket, { type: 'capabilities' })).toMatchObject({
          sandbox: {
            active: true,
            view: 'private',
            reason: expect.stringContaining(
              'private view (no host view: setpriv (util-linux) is not installed; no landlock view: python3 is not installed)',
            ) as unknown,
          },
        });
        expect(await inside(exc, `id -u; ${interfaces}`)).toBe('65534\nlo\n');
      });
    });

    it('on an architecture without a seccomp filter: the private view, and the reason names it', () => {
      const state = detectSandbox('auto', { arch: 'riscv64' });
      expect(state).toMatchObject({ active: true, view: 'private' });
      expect(state.seccomp).toBeUndefined();
      expect(state.reason).toContain('no host view: no seccomp filter for the riscv64 architecture (x64 and arm64 only)');
      expect(state.reason).toContain('; no seccomp filter (no seccomp filter for the riscv64 architecture');
    });
  },
);

describe.runIf(HOST_VIEW)('after exc is killed with SIGKILL (host view)', () => {
  it('what a run left running ends when the next exc starts', async () => {
    const { dir, cleanup } = tempDir('zview-kill');
    const { file } = writeTestConfig(dir, { exc: { sandbox: 'bwrap', timeout: 60 } });
    let first: StartedService | undefined = await startService('exc', file);
    let second: StartedService | undefined;
    const marker = uniqueSleep();
    try {
      const run = execute(first, 'bash', `setsid env -i sleep ${marker} & sleep ${marker}`).catch((err: unknown) => err);
      await waitFor(() => processesMatching(`sleep ${marker}`).length === 2, 'both sleeps to start');
      await first.stop('SIGKILL');
      first = undefined;
      await run;
      // bwrap dies with exc, but no PID namespace ends the run with it: its processes run on until an exc ends
      // them. Any root exc starting on this machine ends them (the run's uid outlived its exc), and other test
      // files start some concurrently: so not asserted here that both still run, only that they end.
      second = await startService('exc', file);
      await waitFor(() => processesMatching(`sleep ${marker}`).length === 0, 'the next exc to end the leftover');
    } finally {
      await first?.stop('SIGKILL');
      await second?.stop();
      for (const pid of processesMatching(`sleep ${marker}`)) process.kill(pid, 'SIGKILL');
      cleanup();
    }
  });
});
