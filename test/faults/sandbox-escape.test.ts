/**
 * Sandbox escapes, run through a real exc with `[exc] sandbox = "bwrap"`: the
 * program reads its capabilities and uid, remounts / read-write and writes to the
 * host, unmounts the `/dev/null` over the config, the tmpfs over the socket
 * directory and the private /tmp, retries all of that from a nested user
 * namespace, reads a root-only file and connects to exc's own socket. None of it
 * may work, whoever runs exc: as root (how CI runs; the host view, where bwrap
 * runs as root without a user namespace and setpriv drops the program to a uid of
 * its own) and as an ordinary user (uid 65534, from a copy of the package that user
 * can read; the private view, in a user namespace).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, type Frame } from '../../src/runtime/index.js';
import { detectSandbox } from '../../src/services/exc/sandbox.js';
import { executeIn, startExc as startExcAs, type Exc } from '../helpers/exc-as.js';
import { record } from './harness.js';
import { fields } from '../helpers/views.js';

const ROOT = process.geteuid?.() === 0;
// CI installs bubblewrap (.ci/debian-packages); locally the test needs a working bwrap.
const BWRAP = detectSandbox('auto').active;
const SECRET = `zino-secret-${process.pid}-${Date.now()}`;

/** `closed`: exc's directory is 0700, as a checkout under root's home (or CI's /check) is: the sandbox user cannot enter it. */
function startExc(as: 'self' | 'nobody', closed = false): Promise<Exc> {
  return startExcAs(as, { closed, sandbox: 'bwrap', secret: SECRET });
}

/** The escape attempts, as one bash program printing `name=value` lines. */
function escapeProgram(exc: Exc): string {
  const runDir = path.dirname(exc.socket);
  const escaped = path.join(exc.dir, 'escaped.txt');
  const rootOnly = path.join(exc.dir, 'root-only.txt');
  const q = (s: string): string => `'${s}'`;
  return [
    `echo "capeff=$(awk '/^CapEff/ {print $2}' /proc/self/status)"`,
    `echo "capprm=$(awk '/^CapPrm/ {print $2}' /proc/self/status)"`,
    `echo "uid=$(id -u)"`,
    `if mount -o remount,bind,rw / 2>/dev/null; then echo remount=ok; else echo remount=denied; fi`,
    `if (echo escaped > ${q(escaped)}) 2>/dev/null; then echo write=ok; else echo write=denied; fi`,
    `if umount ${q(exc.file)} 2>/dev/null; then echo umount_config=ok; else echo umount_config=denied; fi`,
    `if umount -l ${q(runDir)} 2>/dev/null; then echo umount_run=ok; else echo umount_run=denied; fi`,
    `if umount -l /tmp 2>/dev/null; then echo umount_tmp=ok; else echo umount_tmp=denied; fi`,
    `echo "config=$(cat ${q(exc.file)} 2>&1 | tr '\\n' ' ')"`,
    `echo "rootonly=$(cat ${q(rootOnly)} 2>&1 | tr '\\n' ' ')"`,
    `echo "run=$(ls -A ${q(runDir)} 2>&1 | tr '\\n' ' ')"`,
    `echo "tmp=$(ls -A /tmp 2>&1 | tr '\\n' ' ')"`,
    // The same from a nested user namespace, where the program would be "root" again.
    `echo "nested=$(unshare -rm sh -c 'umount -l /tmp; umount -l ${runDir}; umount ${exc.file}; mount -o remount,bind,rw /; echo escaped > ${escaped}; ls -A /tmp ${runDir}; cat ${exc.file} ${rootOnly}' 2>&1 | tr '\\n' ' ')"`,
    `python3 - <<'EOF'
import socket
try:
    s = socket.socket(socket.AF_UNIX)
    s.connect(${JSON.stringify(exc.socket)})
    print("connect=ok")
except OSError as e:
    print("connect=denied", e.__class__.__name__)
EOF`,
  ].join('\n');
}

function execute(exc: Exc, executor: string, code: string): Promise<Frame> {
  return executeIn(exc, executor, code);
}

/** The assertions shared by both runs. */
async function expectContained(exc: Exc, who: string): Promise<void> {
  const reply = await execute(exc, 'bash', escapeProgram(exc));
  expect(reply, JSON.stringify(reply)).toMatchObject({ type: 'result', sandboxed: true });
  const f = fields(String(reply.stdout));
  record(`sandbox.${who}.capeff`, f.capeff ?? '?');
  record(`sandbox.${who}.uid`, f.uid ?? '?');
  expect(f, String(reply.stdout)).toMatchObject({
    capeff: '0000000000000000',
    capprm: '0000000000000000',
    remount: 'denied',
    write: 'denied',
    umount_config: 'denied',
    umount_run: 'denied',
    umount_tmp: 'denied',
  });
  expect(f.uid).not.toBe('0');
  expect(f.connect ?? '', String(reply.stdout)).toMatch(/^denied/);
  const everything = `${String(reply.stdout)}${String(reply.stderr)}`;
  expect(everything).not.toContain(SECRET);
  expect(f.run ?? '').not.toContain('exc.sock');
  expect(f.tmp ?? '').not.toContain(path.basename(exc.tmpMarker));
  expect(f.nested ?? '').not.toContain('exc.sock');
  expect(f.nested ?? '').not.toContain(path.basename(exc.tmpMarker));
  expect(existsSync(path.join(exc.dir, 'escaped.txt'))).toBe(false);
  // The config file itself is untouched.
  expect(readFileSync(exc.file, 'utf8')).toContain(SECRET);
}

/** Ordinary programs still work in the sandbox. */
async function expectUsable(exc: Exc): Promise<void> {
  const reply = await execute(
    exc,
    'bash',
    'df -h / >/dev/null && echo df-ok; ps -e >/dev/null && echo ps-ok; grep -q "^ID=" /etc/os-release && echo os-ok; echo hi > here.txt && cat here.txt',
  );
  expect(reply).toMatchObject({ exit_code: 0, stdout: 'df-ok\nps-ok\nos-ok\nhi\n', sandboxed: true });
  expect(await execute(exc, 'python3', 'import os\nprint(sum(range(10)), os.getcwd() == os.environ["HOME"])')).toMatchObject({
    exit_code: 0,
    stdout: '45 True\n',
  });
  // Static analysis still sees the code (it runs as the sandbox user when exc is root).
  expect(await request(exc.socket, { type: 'validate', executor: 'python3', code: 'print(' }, { timeoutMs: 60_000 })).toMatchObject({
    type: 'validation',
    ok: false,
  });
  expect(await request(exc.socket, { type: 'validate', executor: 'python3', code: 'print(1)' }, { timeoutMs: 60_000 })).toEqual({
    type: 'validation',
    ok: true,
    errors: '',
  });
}

describe.runIf(BWRAP || process.env.CI)('the bubblewrap sandbox holds', () => {
  describe(ROOT ? 'when exc runs as root' : `when exc runs as uid ${process.geteuid?.()}`, () => {
    let exc: Exc;
    beforeAll(async () => {
      exc = await startExc('self');
    });
    afterAll(async () => {
      await exc?.stop();
    });
    it('takes every capability and root away and stops every escape', async () => {
      await expectContained(exc, ROOT ? 'root' : 'user');
    });
    it('still runs ordinary programs', async () => {
      await expectUsable(exc);
    });
  });

  // A root exc whose files nobody cannot reach: nothing to hide there, and bwrap (as nobody) could not mount over them.
  describe.runIf(ROOT)('when exc runs as root from a directory the sandbox user cannot enter', () => {
    let exc: Exc;
    beforeAll(async () => {
      exc = await startExc('self', true);
    });
    afterAll(async () => {
      await exc?.stop();
    });
    it('takes every capability and root away and stops every escape', async () => {
      await expectContained(exc, 'root-closed');
    });
    it('still runs ordinary programs', async () => {
      await expectUsable(exc);
    });
  });

  // Switching to an ordinary user needs root; CI runs as root, so there it runs.
  describe.runIf(ROOT)('when exc runs as an ordinary user (uid 65534)', () => {
    let exc: Exc;
    beforeAll(async () => {
      exc = await startExc('nobody');
    });
    afterAll(async () => {
      await exc?.stop();
    });
    it('takes every capability away and stops every escape', async () => {
      await expectContained(exc, 'user');
    });
    it('gives the private view, and says why', async () => {
      // Its own uid over the host's processes would reach ZINO's other services: a user namespace, its own PID and network namespaces.
      const caps = await request(exc.socket, { type: 'capabilities' }, { timeoutMs: 10_000 });
      expect(caps).toMatchObject({ sandbox: { active: true, reason: expect.stringContaining('private view (no host view: exc is not root)') as unknown } });
      expect(await execute(exc, 'bash', `awk -F: 'NR > 2 {print $1}' /proc/net/dev | tr -d ' '; stat -c %U /etc/passwd`)).toMatchObject({
        stdout: 'lo\nnobody\n',
        sandboxed: true,
      });
    });
    it('still runs ordinary programs', async () => {
      await expectUsable(exc);
    });
  });
});
