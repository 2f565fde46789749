import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/runtime/index.js';
import { RUN_UID_BASE, RUN_UID_END, RUN_UID_SLOTS, RunUsers, isRunUid, runUidOwner } from '../../src/services/exc/run-users.js';
import {
  HOST_SERVICE_SOCKETS,
  LANDLOCK_GRACE_MS,
  SANDBOX_UID,
  analysisUser,
  hiddenPaths,
  landlockArgv,
  logGroups,
  reachableBy,
  sandboxArgv,
  sandboxUser,
  type SandboxState,
} from '../../src/services/exc/sandbox.js';
import { utf8Boundary, BoundedCapture } from '../../src/services/exc/capture.js';

/** No host service sockets: these tests look at ZINO's own paths, whatever this host runs. */
const NONE = { dirs: [], files: [] };

let root: string;
beforeEach(() => {
  // Outside /tmp on purpose (paths under /tmp are private in the sandbox anyway), and not
  // under the checkout, which CI may have cloned into /tmp.
  root = mkdtempSync('/var/tmp/zino-hidden-');
  mkdirSync(path.join(root, 'run'), { recursive: true });
  mkdirSync(path.join(root, 'data', 'mem'), { recursive: true });
  writeFileSync(path.join(root, 'ZINO.toml'), '');
});
afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

describe('hiddenPaths', () => {
  it("hides ZINO's sockets, memory and config file from sandboxed code", () => {
    const { config } = resolveConfig({}, { file: null, baseDir: root, env: {}, dir: root });
    const hidden = hiddenPaths(config, path.join(root, 'ZINO.toml'), undefined, 0, NONE);
    expect(hidden.dirs.sort()).toEqual([path.join(root, 'data', 'mem'), path.join(root, 'run')].sort());
    expect(hidden.files).toEqual([path.join(root, 'ZINO.toml')]);
  });

  it("hides the privileged runner's socket directory, which exc's group may connect to", () => {
    mkdirSync(path.join(root, 'runner'));
    const { config } = resolveConfig({ runner: { socket: path.join(root, 'runner', 'runner.sock') } }, { file: null, baseDir: root, env: {}, dir: root });
    expect(hiddenPaths(config, null, undefined, 0, NONE).dirs).toContain(path.join(root, 'runner'));
  });

  it('hides the sockets of host services that would act for the program (resolve names, write the journal), when they exist', () => {
    const { config } = resolveConfig({}, { file: null, baseDir: root, env: {}, dir: root });
    mkdirSync(path.join(root, 'journal'));
    writeFileSync(path.join(root, 'resolve.sock'), '');
    const sockets = { dirs: [path.join(root, 'journal'), path.join(root, 'gone')], files: [path.join(root, 'resolve.sock'), path.join(root, 'nscd.sock')] };
    const hidden = hiddenPaths(config, null, undefined, 0, sockets);
    expect(hidden.dirs).toContain(path.join(root, 'journal'));
    expect(hidden.dirs).not.toContain(path.join(root, 'gone'));
    expect(hidden.files).toEqual([path.join(root, 'resolve.sock')]);
    // The defaults name journald's, systemd-resolved's and nscd's.
    expect(HOST_SERVICE_SOCKETS.dirs).toContain('/run/systemd/journal');
    expect(HOST_SERVICE_SOCKETS.files).toEqual(expect.arrayContaining(['/run/systemd/resolve/io.systemd.Resolve', '/run/nscd/socket']));
  });

  it("hides, when exc is not root, its user's runtime directory (session bus, systemd user manager), when there is one", () => {
    const { config } = resolveConfig({}, { file: null, baseDir: root, env: {}, dir: root });
    const uid = 3_999_999_999;
    const runtime = `/run/user/${uid}`;
    expect(hiddenPaths(config, null, undefined, uid, NONE).dirs).not.toContain(runtime);
    try {
      mkdirSync(runtime, { recursive: true });
    } catch {
      return; // not root here: /run/user is not ours to write
    }
    try {
      expect(hiddenPaths(config, null, undefined, uid, NONE).dirs).toContain(runtime);
      // Root's exc runs programs as other users: nothing of root's to hide there.
      expect(hiddenPaths(config, null, undefined, 0, NONE).dirs.some((d) => d.startsWith('/run/user'))).toBe(false);
    } finally {
      rmSync(runtime, { recursive: true, force: true });
    }
  });

  it('skips paths that do not exist or sit under /tmp', () => {
    const { config } = resolveConfig({}, { file: null, baseDir: '/tmp/x', env: {}, dir: '/tmp/zino-nowhere' });
    expect(hiddenPaths(config, '/tmp/zino-nowhere/ZINO.toml', undefined, 0, NONE)).toEqual({ dirs: [], files: [] });
  });

  it("keeps paths under /tmp when the sandbox shares the host's /tmp (the landlock view)", () => {
    const tmp = mkdtempSync('/tmp/zino-hidden-');
    try {
      mkdirSync(path.join(tmp, 'run'));
      writeFileSync(path.join(tmp, 'ZINO.toml'), '');
      const { config } = resolveConfig({}, { file: null, baseDir: tmp, env: {}, dir: tmp });
      const configFile = path.join(tmp, 'ZINO.toml');
      expect(hiddenPaths(config, configFile, undefined, 0, NONE)).toEqual({ dirs: [], files: [] });
      expect(hiddenPaths(config, configFile, undefined, 0, NONE, true)).toEqual({ dirs: [path.join(tmp, 'run')], files: [configFile] });
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('skips, for the sandbox user, paths a directory above them keeps it out of (bwrap as that user could not mount over them)', () => {
    const { config } = resolveConfig({}, { file: null, baseDir: root, env: {}, dir: root });
    const nobody = { uid: SANDBOX_UID, gid: SANDBOX_UID };
    const configFile = path.join(root, 'ZINO.toml');
    chmodSync(root, 0o755);
    expect(hiddenPaths(config, configFile, nobody, 0, NONE).files).toEqual([configFile]);
    chmodSync(root, 0o700);
    expect(hiddenPaths(config, configFile, nobody, 0, NONE)).toEqual({ dirs: [], files: [] });
    // Exc's own user (no runAs) still hides everything.
    expect(hiddenPaths(config, configFile, undefined, 0, NONE).files).toEqual([configFile]);
  });
});

describe('reachableBy', () => {
  const nobody = { uid: SANDBOX_UID, gid: SANDBOX_UID };
  it('needs search permission on every directory above the path, by the bits that apply to the user', () => {
    const inner = path.join(root, 'data', 'mem');
    chmodSync(root, 0o755);
    expect(reachableBy(inner, nobody)).toBe(true);
    chmodSync(path.join(root, 'data'), 0o750);
    expect(reachableBy(inner, nobody)).toBe(false);
    expect(reachableBy(path.join(root, 'data'), nobody)).toBe(true);
    chmodSync(path.join(root, 'data'), 0o701);
    expect(reachableBy(inner, nobody)).toBe(true);
    chmodSync(root, 0o700);
    expect(reachableBy(inner, nobody)).toBe(false);
    expect(reachableBy(inner, { uid: 0, gid: 0 })).toBe(true);
  });

  it.runIf(process.geteuid?.() === 0)('uses the owner bits alone for the owner', () => {
    chownSync(root, SANDBOX_UID, SANDBOX_UID);
    chmodSync(root, 0o077);
    expect(reachableBy(path.join(root, 'data'), nobody)).toBe(false);
    chmodSync(root, 0o700);
    expect(reachableBy(path.join(root, 'data'), nobody)).toBe(true);
  });

  it('treats a missing directory on the way as a barrier', () => {
    expect(reachableBy(path.join(root, 'gone', 'deeper', 'x'), nobody)).toBe(false);
  });
});

describe('sandboxArgv', () => {
  const run = { workdir: '/tmp/zino-exc-1', argv: ['bash', 'code.sh'], hidden: { dirs: ['/run/zino'], files: ['/etc/zino/ZINO.toml'] }, maxDiskBytes: 4096 };
  const hiding =
    '--tmpfs /run/zino --remount-ro /run/zino --ro-bind /dev/null /etc/zino/ZINO.toml --bind /tmp/zino-exc-1 /tmp/zino-exc-1 --chdir /tmp/zino-exc-1';

  it('private view: every namespace of its own, a read-only root, sized private /tmp and /dev/shm, read-only hiding, the workdir, the filter on fd 3', () => {
    const state: SandboxState = { mode: 'bwrap', active: true, bwrap: '/usr/bin/bwrap', reason: '', view: 'private', seccomp: Buffer.alloc(8) };
    expect(sandboxArgv(state, run).join(' ')).toBe(
      '/usr/bin/bwrap --die-with-parent --new-session --unshare-all --ro-bind / / --dev /dev --size 4096 --tmpfs /dev/shm --proc /proc --size 4096 --tmpfs /tmp ' +
        `${hiding} --seccomp 3 -- bash code.sh`,
    );
    // Without a filter (a machine that cannot load one) there is no --seccomp.
    const { seccomp: _, ...unfiltered } = state;
    expect(sandboxArgv(unfiltered, run).join(' ')).not.toContain('--seccomp');
  });

  it("host view: the host's user, PID, network and cgroup namespaces and /proc, no capability left, setpriv to the run's user with the log groups", () => {
    const state: SandboxState = {
      mode: 'auto',
      active: true,
      bwrap: '/usr/bin/bwrap',
      reason: '',
      view: 'host',
      seccomp: Buffer.alloc(8),
      host: { setpriv: '/usr/bin/setpriv', groups: [{ name: 'adm', gid: 4 }], users: new RunUsers(1) },
    };
    const argv = sandboxArgv(state, { ...run, user: { uid: RUN_UID_BASE + 32, gid: RUN_UID_BASE + 32 } }).join(' ');
    expect(argv).toBe(
      '/usr/bin/bwrap --die-with-parent --new-session --unshare-ipc --unshare-uts ' +
        '--cap-drop ALL --cap-add CAP_SETUID --cap-add CAP_SETGID --cap-add CAP_SETPCAP ' +
        '--ro-bind / / --dev /dev --size 4096 --tmpfs /dev/shm --size 4096 --tmpfs /tmp ' +
        `${hiding} --seccomp 3 -- ` +
        '/usr/bin/setpriv --reuid 1879048224 --regid 1879048224 --groups 4 --inh-caps=-all --bounding-set=-all --no-new-privs -- bash code.sh',
    );
    expect(argv).not.toMatch(/--unshare-(all|user|pid|net)|--proc/);
    // No log group on this host: none at all.
    const bare = sandboxArgv({ ...state, host: { ...state.host!, groups: [] } }, { ...run, user: { uid: 1, gid: 1 } }).join(' ');
    expect(bare).toContain('--clear-groups');
    // The host view never runs a program as root: it needs the run's user.
    expect(() => sandboxArgv(state, run)).toThrow(/run user/);
  });
});

describe('sandboxArgv, landlock view', () => {
  const run = { workdir: '/tmp/zino-exc-1-a', argv: ['bash', 'code.sh'], hidden: { dirs: ['/run/zino'], files: ['/etc/zino/ZINO.toml'] }, maxDiskBytes: 4096 };
  const view = { python: '/usr/bin/python3.11', launcher: '/opt/zino/zino-sandbox.py', abi: 7, groups: [] };
  const base: SandboxState = { mode: 'auto', active: true, reason: '', view: 'landlock', landlock: view, seccomp: Buffer.alloc(8) };
  const launcher =
    '/usr/bin/python3.11 -I -S -B /opt/zino/zino-sandbox.py --workdir /tmp/zino-exc-1-a --hide /run/zino --hide /etc/zino/ZINO.toml ' +
    `--hide-prefix ${path.join(tmpdir(), 'zino-exc-')} --grace-ms ${LANDLOCK_GRACE_MS} --seccomp-fd 3`;

  it("exc is not root: the launcher in isolated mode, the workdir, every hidden path, the other runs' workdirs, the filter on fd 3, no user switch", () => {
    expect(sandboxArgv(base, run).join(' ')).toBe(`${launcher} -- bash code.sh`);
    // Its grace is shorter than exc's, so the launcher ends what left the group before exc SIGKILLs the group.
    expect(LANDLOCK_GRACE_MS).toBeLessThan(2000);
  });

  it("exc is root: the run's uid, gid and the log groups, and never without a run user", () => {
    const state: SandboxState = {
      ...base,
      landlock: {
        ...view,
        users: new RunUsers(1),
        groups: [
          { name: 'adm', gid: 4 },
          { name: 'systemd-journal', gid: 999 },
        ],
      },
    };
    const user = { uid: RUN_UID_BASE + 32, gid: RUN_UID_BASE + 32 };
    expect(sandboxArgv(state, { ...run, user }).join(' ')).toBe(`${launcher} --user 1879048224:1879048224:4,999 -- bash code.sh`);
    expect(() => sandboxArgv(state, run)).toThrow(/run user/);
    expect(landlockArgv(view, { ...run, user }, { seccompFd: 0, probe: true }).join(' ')).toContain(
      '--seccomp-fd 0 --user 1879048224:1879048224: --probe -- bash',
    );
  });
});

describe('logGroups', () => {
  it('finds the groups that may read logs, when they exist', () => {
    expect(logGroups('root:x:0:\nadm:x:4:syslog\nsystemd-journal:x:999:\nusers:x:100:\n')).toEqual([
      { name: 'adm', gid: 4 },
      { name: 'systemd-journal', gid: 999 },
    ]);
    expect(logGroups('root:x:0:\nadmin:x:4:\n')).toEqual([]);
  });
});

describe('run users (host view)', () => {
  it('gives each exc a block of uids of its own in a range no user has, its pid readable from the uid', () => {
    expect(RUN_UID_BASE).toBe(0x70000000);
    expect(RUN_UID_END).toBeLessThanOrEqual(0x7ffe0000); // below systemd's foreign range and 2^31
    const users = new RunUsers(4_194_303);
    expect(users.block).toHaveLength(RUN_UID_SLOTS);
    for (const uid of users.block) {
      expect(isRunUid(uid)).toBe(true);
      expect(runUidOwner(uid)).toBe(4_194_303);
    }
    expect(new RunUsers(2).block[0]).toBe(new RunUsers(1).block[RUN_UID_SLOTS - 1]! + 1);
    expect(isRunUid(SANDBOX_UID)).toBe(false);
    expect(isRunUid(RUN_UID_BASE - 1)).toBe(false);
    expect(() => new RunUsers(0)).toThrow();
    expect(() => new RunUsers(4_194_304)).toThrow();
  });

  it('hands out each uid to one run at a time; the next run waits for a free one; an aborted wait gives up', async () => {
    const users = new RunUsers(7);
    const signal = new AbortController().signal;
    const held = await Promise.all(Array.from({ length: RUN_UID_SLOTS }, () => users.acquire(signal)));
    expect(new Set(held.map((u) => u.uid)).size).toBe(RUN_UID_SLOTS);
    let next: number | undefined;
    const waiting = users.acquire(signal).then((u) => (next = u.uid));
    const abort = new AbortController();
    const gaveUp = users.acquire(abort.signal);
    abort.abort();
    await expect(gaveUp).rejects.toMatchObject({ code: 'CANCELLED' });
    await Promise.resolve();
    expect(next).toBeUndefined();
    held[5]!.release();
    held[5]!.release(); // twice is once
    await waiting;
    expect(next).toBe(held[5]!.uid);
  });
});

describe('sandboxUser', () => {
  it('runs private-view programs as nobody when exc is root, as exc itself otherwise', () => {
    expect(SANDBOX_UID).toBe(65534);
    expect(sandboxUser(0)).toEqual({ uid: 65534, gid: 65534 });
    expect(sandboxUser(1000)).toBeUndefined();
    expect(sandboxUser(65534)).toBeUndefined();
  });

  it('runs static analysis for validate as nobody when exc is root and sandboxes, never as root', () => {
    const on: SandboxState = { mode: 'auto', active: true, reason: '' };
    expect(analysisUser(on, 0)).toEqual({ uid: 65534, gid: 65534 });
    expect(analysisUser({ ...on, view: 'host' }, 0)).toEqual({ uid: 65534, gid: 65534 });
    expect(analysisUser(on, 1000)).toBeUndefined();
    expect(analysisUser({ mode: 'none', active: false, reason: '' }, 0)).toBeUndefined();
  });
});

describe('BoundedCapture', () => {
  it('keeps at most the limit and reports the overflow', () => {
    const capture = new BoundedCapture(5);
    expect(capture.push(Buffer.from('abc'))).toBe(true);
    expect(capture.push(Buffer.from('defg'))).toBe(false);
    expect(capture.text()).toBe('abcde');
    expect(capture.total).toBe(7);
  });

  it('never ends inside a multi-byte character', () => {
    const bytes = Buffer.from('a€🎉');
    expect(utf8Boundary(bytes.subarray(0, 2))).toBe(1);
    expect(utf8Boundary(bytes.subarray(0, 4))).toBe(4);
    expect(utf8Boundary(bytes.subarray(0, 6))).toBe(4);
    expect(utf8Boundary(bytes)).toBe(8);
  });
});
