/**
 * The sandbox. In bubblewrap: read-only root, private /tmp and /dev/shm of
 * `[exc] max_disk_bytes` each, the working directory, no network connections, no
 * capability, bwrap killed when exc dies, ZINO's own sockets, memory and config hidden.
 *
 * Three views of the host, chosen by who exc runs as and what the machine offers:
 *
 * - **host** (exc is root): the program sees the host as it is. bwrap runs as root
 *   *without* a user namespace, so file owners are the host's (`/etc/passwd` is
 *   root's, not `nobody`'s); it keeps the host's PID namespace and /proc (read-only),
 *   so `ps` lists the host's processes with their real pids; and the host's network
 *   namespace, so `ip addr`, `ip route` and `ss` show the host's interfaces, routes
 *   and sockets. What keeps it from acting: every mount read-only but its working
 *   directory and private /tmp and /dev/shm; bwrap drops every capability but the
 *   three setpriv needs to become the run's own unprivileged user (run-users.ts:
 *   a uid no other process has, plus the log groups `adm` and `systemd-journal`),
 *   with no capability left, not even in the bounding set, and no_new_privs; and a
 *   seccomp filter (seccomp.ts) that refuses Internet, packet and most other socket
 *   families, io_uring and new user namespaces.
 * - **landlock** (exc is not root; or `[exc] sandbox = "landlock"`; or a root exc
 *   whose host view cannot be set up): no bubblewrap and no namespace at all, so the
 *   program sees the host's processes, network and file owners as they are. A small
 *   Python launcher (landlock/zino-sandbox.py, documented at its top) confines itself
 *   and the program with Landlock (write only in the working directory; read all but
 *   ZINO's hidden paths; no TCP; no signal, trace or abstract socket outside the run)
 *   and a seccomp filter that also refuses unix sockets (nothing is hidden behind a
 *   mount namespace here: ZINO's sockets, D-Bus and docker's are reached that way),
 *   and ends whatever the program leaves behind. It needs Landlock ABI 6 (kernel
 *   6.12) for the signal and abstract-socket scopes: without them a run could signal
 *   ZINO's services and the user's session, which share exc's uid under `zino up`.
 *   A root exc gives each run a uid of its own (run-users.ts), as in the host view.
 * - **private** (exc is not root and the landlock view cannot be had, or `"bwrap"`): the earlier
 *   sandbox, `--unshare-all`: bwrap needs a user namespace, which maps only exc's
 *   own user (every other owner shows as `nobody`), its own PID namespace and /proc
 *   (only the run's processes), an empty network namespace (only `lo`). Sharing the
 *   host's /proc or network there would give the program exc's own uid over the
 *   host's processes of that user (ZINO's services, under `zino up` the user's
 *   session): their memory, environment, mount view and abstract sockets. When exc
 *   runs as root and falls back to this view, bwrap itself is started as
 *   {@link SANDBOX_UID} (`nobody`) so that the program is not root.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SERVICE_NAMES, packageRoot, type ResolvedConfig, type SandboxMode } from '../../runtime/index.js';
import { RunUsers } from './run-users.js';
import { seccompFilter, seccompUnsupported } from './seccomp.js';
import { which } from './which.js';
import { WORKDIR_PREFIX } from './workdir.js';

/** How sandboxed programs see the host. */
export type SandboxView = 'host' | 'private' | 'landlock';

/**
 * The Landlock view's launcher, in the package (the build copies it to dist/ beside
 * this module's compiled file); found from the package root, since the running code
 * may be the bundle in dist/bundle/.
 */
export function landlockLauncher(): string {
  return path.join(packageRoot(), 'dist/src/services/exc/landlock/zino-sandbox.py');
}

/** The oldest Landlock ABI the view accepts: 6 brought the signal and abstract-unix-socket scopes. */
export const LANDLOCK_MIN_ABI = 6;

/**
 * After a SIGTERM, the launcher SIGKILLs what is still running this long after (ms):
 * less than exc's own grace before it SIGKILLs the launcher's group (run.ts), so that
 * the launcher ends the processes that left that group first.
 */
export const LANDLOCK_GRACE_MS = 1000;

/** Landlock view: how each program is started. */
export interface LandlockView {
  /** The Python interpreter (its real executable, as the probe reported it). */
  python: string;
  /** Absolute path of zino-sandbox.py. */
  launcher: string;
  /** The kernel's Landlock ABI version. */
  abi: number;
  /** exc is root: each run becomes a uid of its own, as in the host view. */
  users?: RunUsers;
  /** With `users`: the supplementary groups of each run ({@link LOG_GROUPS} that exist). */
  groups: { name: string; gid: number }[];
}

/** Host view: how each program becomes its run's own user. */
export interface HostView {
  /** Absolute path of setpriv(1). */
  setpriv: string;
  /** Supplementary groups: those of {@link LOG_GROUPS} that exist. */
  groups: { name: string; gid: number }[];
  /** The run uids of this exc. */
  users: RunUsers;
}

/** Whether runs are sandboxed, and why (not). */
export interface SandboxState {
  mode: SandboxMode;
  /** Every sandboxed run is confined: by bwrap, or (landlock view) by the launcher. */
  active: boolean;
  /** Absolute path of bwrap when active in the host or private view. */
  bwrap?: string;
  /** Human-readable explanation for capabilities and the log. */
  reason: string;
  /** Set when `mode = "bwrap"` but it cannot be used: every execute is refused with this. */
  refusal?: string;
  /** How the program sees the host, when active. */
  view?: SandboxView;
  /** Host view only. */
  host?: HostView;
  /** Landlock view only. */
  landlock?: LandlockView;
  /** Private view under a root exc: the uid and gid bwrap (and so the program) runs as, `nobody`. */
  runAs?: { uid: number; gid: number };
  /** The seccomp filter loaded into every program (always in the host and landlock views; in the private view when the machine allows). */
  seccomp?: Buffer;
}

/** The uid and gid sandboxed programs run as in the private view when exc runs as root, and static analysis for `validate`: `nobody`. */
export const SANDBOX_UID = 65534;

/** Groups a host-view run belongs to, when they exist: they may read the system's logs (files in /var/log, the journal). */
export const LOG_GROUPS = ['adm', 'systemd-journal'] as const;

/**
 * Host view: the working directory belongs to the run's user and to group root with
 * mode 0710, so that bwrap (root, but without CAP_DAC_OVERRIDE by then) can enter it.
 */
export const WORKDIR_GROUP = 0;

/** The file descriptor bwrap reads the seccomp filter from. */
export const SECCOMP_FD = 3;

/** Who bwrap must run as in the private view: `nobody` when exc is root, else exc's own user (undefined). */
export function sandboxUser(euid: number | undefined = process.geteuid?.()): { uid: number; gid: number } | undefined {
  return euid === 0 ? { uid: SANDBOX_UID, gid: SANDBOX_UID } : undefined;
}

/** Who runs static analysis for `validate` (no sandbox there): `nobody` when exc is root and sandboxes, else exc's own user. */
export function analysisUser(state: SandboxState, euid: number | undefined = process.geteuid?.()): { uid: number; gid: number } | undefined {
  return state.active ? sandboxUser(euid) : undefined;
}

/** What {@link detectSandbox} looks at; each defaults to this process and machine (tests replace them). */
export interface DetectOptions {
  euid?: number | undefined;
  /** Node's `process.arch`. */
  arch?: string;
  /** Where to look for bwrap, setpriv and python3. */
  path?: string;
  /** /etc/group's text. */
  groupFile?: string;
  /** The Landlock view's launcher. @default {@link landlockLauncher} */
  launcher?: string;
}

/**
 * Decides how to run code under `mode`, probing each view it considers once:
 * `"landlock"` that view only; `"bwrap"` bubblewrap's host view (exc is root) or
 * private view; `"auto"` the host view when exc is root, else (or when it cannot be
 * had) the landlock view, else the private view, else no sandbox. Every reason says
 * which views were not had and why.
 */
export function detectSandbox(mode: SandboxMode, options: DetectOptions = {}): SandboxState {
  if (mode === 'none') return { mode, active: false, reason: 'sandbox disabled by [exc] sandbox = "none"' };
  const euid = 'euid' in options ? options.euid : process.geteuid?.();
  const searchPath = options.path ?? process.env.PATH ?? '';
  if (mode === 'landlock') {
    const landlock = landlockView(mode, euid, searchPath, options);
    return 'problem' in landlock ? unusable(mode, `the landlock view cannot be had: ${landlock.problem}`) : landlock;
  }
  const bwrap = which('bwrap', searchPath);
  const sh = which('sh', searchPath) ?? '/bin/sh';
  const unsupported = seccompUnsupported(options.arch);
  const filter = unsupported ? undefined : seccompFilter(options.arch);

  let noHostView = 'exc is not root';
  if (euid === 0 && bwrap) {
    const setpriv = which('setpriv', searchPath);
    if (!setpriv) noHostView = 'setpriv (util-linux) is not installed';
    else if (!filter) noHostView = unsupported ?? 'no seccomp filter';
    else {
      const groups = logGroups(options.groupFile);
      const users = new RunUsers();
      // No run yet: the first uid of exc's block is free.
      const probeUser = { uid: users.block[0] as number, gid: users.block[0] as number };
      const argv = [bwrap, ...hostArgs(1024 * 1024), '--seccomp', '0', '--', ...setprivArgv(setpriv, probeUser, groups), sh, '-c', PROBE_SCRIPT];
      const problem = probe(argv, filter, undefined, true);
      if (problem === undefined) {
        const names = groups.map((g) => g.name).join(', ');
        return {
          mode,
          active: true,
          bwrap,
          view: 'host',
          host: { setpriv, groups, users },
          seccomp: filter,
          reason:
            `bubblewrap at ${bwrap}, host view: programs see the host's processes, network and file owners read-only, ` +
            `each run as a uid of its own with no capabilities${names ? ` (groups ${names})` : ''}; ` +
            'no network connections (seccomp allows only unix and netlink sockets)',
        };
      }
      noHostView = `bubblewrap cannot set it up here (${problem})`;
    }
  } else if (euid === 0) noHostView = 'bubblewrap (bwrap) is not installed';

  // The landlock view: shows the host as it is without bubblewrap, and (as root) keeps a uid per run.
  let noLandlock = '';
  if (mode === 'auto') {
    const landlock = landlockView(mode, euid, searchPath, options);
    if (!('problem' in landlock)) {
      if (euid === 0) landlock.reason += ` (no host view: ${noHostView})`;
      return landlock;
    }
    noLandlock = `; no landlock view: ${landlock.problem}`;
  }
  const notHad = `no host view: ${noHostView}${noLandlock}`;
  if (!bwrap) return unusable(mode, `bubblewrap (bwrap) is not installed${noLandlock}`);

  // The private view.
  const runAs = sandboxUser(euid);
  const privateArgv = [bwrap, ...privateArgs(1024 * 1024)];
  let seccomp = filter;
  let seccompNote = unsupported ? `; no seccomp filter (${unsupported})` : '';
  let problem = probe([...privateArgv, ...(filter ? ['--seccomp', '0'] : []), '--', sh, '-c', PROBE_SCRIPT], filter, runAs, filter !== undefined);
  if (problem !== undefined && filter) {
    // Without the filter this view still holds (its network namespace is empty); say so.
    const withoutFilter = probe([...privateArgv, '--', sh, '-c', PROBE_SCRIPT], undefined, runAs, false);
    if (withoutFilter === undefined) {
      seccompNote = `; no seccomp filter (${problem})`;
      seccomp = undefined;
      problem = undefined;
    }
  }
  if (problem !== undefined) {
    const as = runAs ? ` as uid ${runAs.uid} (exc runs as root; bwrap needs unprivileged user namespaces)` : '';
    const host = euid === 0 ? `; no host view: ${noHostView}` : '';
    return unusable(mode, `bubblewrap cannot create a sandbox here${as} (${problem})${host}${noLandlock}`);
  }
  const as = runAs ? `, programs run as uid ${runAs.uid} because exc runs as root` : '';
  return {
    mode,
    active: true,
    bwrap,
    view: 'private',
    ...(runAs ? { runAs } : {}),
    ...(seccomp ? { seccomp } : {}),
    reason:
      `bubblewrap at ${bwrap}${as}, private view (${notHad}): programs see only their own processes, ` +
      `only a loopback network, and owners other than exc's own user as nobody${seccompNote}`,
  };
}

/**
 * The landlock view, when this machine can give it: python3, the launcher, a
 * seccomp filter for this architecture, and a probe run through the launcher that
 * reports Landlock ABI {@link LANDLOCK_MIN_ABI} or later, the filter in force and no
 * capability (as a root exc, from a run uid). Otherwise why not.
 */
function landlockView(mode: SandboxMode, euid: number | undefined, searchPath: string, options: DetectOptions): SandboxState | { problem: string } {
  const python = which('python3', searchPath);
  if (!python) return { problem: 'python3 is not installed' };
  const launcher = options.launcher ?? landlockLauncher();
  if (!existsSync(launcher)) return { problem: `its launcher ${launcher} is missing` };
  const unsupported = seccompUnsupported(options.arch);
  if (unsupported) return { problem: unsupported };
  const filter = seccompFilter(options.arch, { unixSockets: false });
  const users = euid === 0 ? new RunUsers() : undefined;
  const groups = users ? logGroups(options.groupFile) : [];
  // No run yet: the first uid of exc's block is free.
  const user = users ? { uid: users.block[0] as number, gid: users.block[0] as number } : undefined;
  const dir = mkdtempSync(path.join(tmpdir(), `${WORKDIR_PREFIX}${process.pid}-`));
  try {
    chmodSync(dir, 0o700);
    if (user) chownSync(dir, user.uid, user.gid);
    const sh = which('sh', searchPath) ?? '/bin/sh';
    const view: LandlockView = { python, launcher, abi: 0, groups };
    const argv = landlockArgv(view, { workdir: dir, argv: [sh, '-c', PROBE_SCRIPT], hidden: { dirs: [], files: [] }, user }, { seccompFd: 0, probe: true });
    const [command, ...args] = argv as [string, ...string[]];
    const result = spawnSync(command, args, { timeout: 10_000, encoding: 'utf8', cwd: dir, input: filter, env: { PATH: searchPath } });
    if (result.status !== 0) {
      const why = (result.stderr || result.error?.message || `exit ${String(result.status)}`).trim().split('\n')[0] ?? '';
      return { problem: why.replace(/^zino-sandbox: /, '') };
    }
    const seen = /^landlock=(\d+) python=(\S+)\n(.*)$/.exec(result.stdout.trim());
    const want = 'seccomp=2 capeff=0000000000000000';
    if (!seen || seen[3] !== want) return { problem: `the probe saw "${result.stdout.trim()}", not "landlock=N python=PATH\n${want}"` };
    const abi = Number(seen[1]);
    // The launcher refuses an older ABI itself; this is the second look.
    if (abi < LANDLOCK_MIN_ABI) return { problem: `Landlock ABI ${abi} is older than ${LANDLOCK_MIN_ABI}` };
    const names = groups.map((g) => g.name).join(', ');
    const who = users
      ? `each run as a uid of its own with no capabilities${names ? ` (groups ${names})` : ''}`
      : "as exc's own user (other processes of that user, ZINO's services among them, are out of its reach)";
    return {
      mode,
      active: true,
      view: 'landlock',
      landlock: { python: seen[2] as string, launcher, abi, groups, ...(users ? { users } : {}) },
      seccomp: filter,
      reason:
        `landlock view (Landlock ABI ${abi}, no bubblewrap): programs see the host's processes, network and file owners as they are, ${who}; ` +
        'they write only in their working directory (not /tmp), cannot signal or trace a process outside their run, ' +
        'and open no network connection and no unix socket, so D-Bus tools (systemctl status, loginctl, busctl) fail there: ask for a host run; ' +
        "ZINO's sockets, data and config are hidden, and so are files created after a run started next to them (in /tmp, or beside ZINO's data directory)",
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function unusable(mode: SandboxMode, problem: string): SandboxState {
  if (mode === 'bwrap' || mode === 'landlock') return { mode, active: false, reason: problem, refusal: `[exc] sandbox = "${mode}" but ${problem}` };
  return { mode, active: false, reason: `running without a sandbox: ${problem}` };
}

/** Prints the two lines of /proc/self/status that must hold in the sandbox, with the shell alone. */
const PROBE_SCRIPT = 'while read -r k v _; do case $k in Seccomp:) s=$v;; CapEff:) c=$v;; esac; done < /proc/self/status; echo "seccomp=$s capeff=$c"';

/**
 * Runs the sandbox once with {@link PROBE_SCRIPT} (the filter, when given, on stdin:
 * `--seccomp 0`); returns why it failed, or `undefined` when it started and the
 * program holds no capability and (when `filtered`) runs under the filter.
 */
function probe(argv: string[], filter: Buffer | undefined, runAs: { uid: number; gid: number } | undefined, filtered: boolean): string | undefined {
  const [command, ...args] = argv as [string, ...string[]];
  const result = spawnSync(command, args, { timeout: 10_000, encoding: 'utf8', cwd: '/', input: filter ?? '', ...(runAs ?? {}) });
  if (result.status !== 0) return (result.stderr || result.error?.message || `exit ${String(result.status)}`).trim().split('\n')[0];
  const seen = result.stdout.trim();
  const want = `seccomp=${filtered ? '2' : '0'} capeff=0000000000000000`;
  return seen === want ? undefined : `the probe saw "${seen}", not "${want}"`;
}

/** The groups of {@link LOG_GROUPS} that exist in /etc/group. */
export function logGroups(groupFile?: string): { name: string; gid: number }[] {
  let text = groupFile;
  if (text === undefined) {
    try {
      text = readFileSync('/etc/group', 'utf8');
    } catch {
      return [];
    }
  }
  const found: { name: string; gid: number }[] = [];
  for (const name of LOG_GROUPS) {
    const line = text.split('\n').find((l) => l.startsWith(`${name}:`));
    const gid = Number(line?.split(':')[2]);
    if (line && Number.isInteger(gid) && gid > 0) found.push({ name, gid });
  }
  return found;
}

/** File systems both views share: the host's root read-only, a minimal /dev, sized private /dev/shm and /tmp. */
function fileSystems(maxDiskBytes: number, proc: boolean): string[] {
  const size = String(maxDiskBytes);
  return [
    ...['--ro-bind', '/', '/', '--dev', '/dev', '--size', size, '--tmpfs', '/dev/shm'],
    ...(proc ? ['--proc', '/proc'] : []),
    ...['--size', size, '--tmpfs', '/tmp'],
  ];
}

/** The private view: every namespace of its own (bwrap adds the user namespace), a fresh /proc of its PID namespace. */
function privateArgs(maxDiskBytes: number): string[] {
  return ['--die-with-parent', '--new-session', '--unshare-all', ...fileSystems(maxDiskBytes, true)];
}

/**
 * The host view: bwrap as root, no user, PID, network or cgroup namespace of its own
 * (the host's /proc comes read-only with `/`); its own IPC (SysV objects of the host
 * are not the program's to change) and UTS namespaces. bwrap keeps only the
 * capabilities setpriv needs to drop to the run's user, and setpriv leaves the
 * program none. Without CAP_DAC_OVERRIDE bwrap enters the working directory by its
 * group: {@link WORKDIR_GROUP}.
 */
function hostArgs(maxDiskBytes: number): string[] {
  return [
    ...['--die-with-parent', '--new-session', '--unshare-ipc', '--unshare-uts'],
    ...['--cap-drop', 'ALL', '--cap-add', 'CAP_SETUID', '--cap-add', 'CAP_SETGID', '--cap-add', 'CAP_SETPCAP'],
    ...fileSystems(maxDiskBytes, false),
  ];
}

/**
 * setpriv to the run's user: its uid and gid, the log groups, no inheritable or
 * bounding capability (the switch from root clears the others), no_new_privs.
 * (No parent-death signal: bwrap's monitor keeps no CAP_KILL, so the kernel could
 * not deliver it to another uid; run-users.ts ends the run's processes instead.)
 */
function setprivArgv(setpriv: string, user: { uid: number; gid: number }, groups: { gid: number }[]): string[] {
  return [
    setpriv,
    ...['--reuid', String(user.uid), '--regid', String(user.gid)],
    ...(groups.length > 0 ? ['--groups', groups.map((g) => g.gid).join(',')] : ['--clear-groups']),
    ...['--inh-caps=-all', '--bounding-set=-all', '--no-new-privs', '--'],
  ];
}

/**
 * Sockets of host services that act for any local caller, so that a program could
 * use them to get round the sandbox: systemd-resolved's and nscd's resolve names
 * (sending DNS queries out for it, which the seccomp filter would otherwise stop);
 * journald's append to the system log. Reading the configuration next to them
 * (`/run/systemd/resolve/resolv.conf`) and the journal itself stays possible.
 */
export const HOST_SERVICE_SOCKETS: { dirs: readonly string[]; files: readonly string[] } = {
  dirs: ['/run/systemd/journal'],
  files: ['/run/systemd/resolve/io.systemd.Resolve', '/run/systemd/resolve/io.systemd.Resolve.Monitor', '/run/nscd/socket'],
};

/**
 * Paths the sandboxed code must not see: ZINO's sockets, memory and config file;
 * {@link HOST_SERVICE_SOCKETS}; and, when exc is not root, its user's runtime
 * directory (`/run/user/UID`: the session bus and systemd's user manager answer
 * that uid, which the program has). Left out: those that do not exist, those under
 * /tmp unless `sharedTmp` (bubblewrap's views have a /tmp of their own; the landlock
 * view has the host's), and, when programs run as `runAs`, those it cannot reach
 * because a directory above them keeps it out (it cannot see them anyway, and bwrap,
 * running as that user, could not mount over them).
 */
export function hiddenPaths(
  config: Readonly<ResolvedConfig>,
  configFile: string | null,
  runAs?: { uid: number; gid: number },
  euid: number | undefined = process.geteuid?.(),
  hostSockets: { dirs: readonly string[]; files: readonly string[] } = HOST_SERVICE_SOCKETS,
  sharedTmp = false,
): { dirs: string[]; files: string[] } {
  const dirs = new Set<string>([config.mem.data_dir, ...hostSockets.dirs]);
  for (const name of SERVICE_NAMES) dirs.add(path.dirname(config[name].socket));
  // The privileged runner's socket: exc's group may connect to it, code exc sandboxes must not even see it.
  dirs.add(path.dirname(config.runner.socket));
  if (euid !== undefined && euid !== 0) dirs.add(`/run/user/${euid}`);
  const visible = (p: string): boolean => (sharedTmp || !isUnder(p, '/tmp')) && (runAs === undefined || reachableBy(p, runAs));
  const existingDirs = [...dirs].filter((d) => isDirectory(d) && visible(d));
  const files = [...(configFile ? [configFile] : []), ...hostSockets.files].filter((f) => existsSync(f) && !isDirectory(f) && visible(f));
  return { dirs: existingDirs, files };
}

/**
 * Whether `who` may look up `target`: it has search (x) permission on every directory
 * above it, by owner, group or other bits (supplementary groups and ACLs aside: the
 * sandbox user is `nobody`, whose only group is its own). A directory that cannot be
 * read counts as a barrier.
 */
export function reachableBy(target: string, who: { uid: number; gid: number }): boolean {
  if (who.uid === 0) return true;
  let dir = path.dirname(path.resolve(target));
  for (;;) {
    let st;
    try {
      st = statSync(dir);
    } catch {
      return false;
    }
    const bit = st.uid === who.uid ? 0o100 : st.gid === who.gid ? 0o010 : 0o001;
    if ((st.mode & bit) === 0) return false;
    const parent = path.dirname(dir);
    if (parent === dir) return true;
    dir = parent;
  }
}

/** One run in the sandbox. */
export interface SandboxRun {
  workdir: string;
  /** The program and its arguments. */
  argv: string[];
  hidden: { dirs: string[]; files: string[] };
  maxDiskBytes: number;
  /** Host view, and landlock view under a root exc: the run's user. */
  user?: { uid: number; gid: number } | undefined;
}

/**
 * The command line that runs `run.argv` in the sandbox `state` describes, with its
 * working directory the only writable place (besides a private /tmp and /dev/shm in
 * bubblewrap's views). When `state.seccomp` is set, the filter must be given on fd
 * {@link SECCOMP_FD}.
 */
export function sandboxArgv(state: SandboxState, run: SandboxRun): string[] {
  if (state.active && state.view === 'landlock' && state.landlock) {
    if (state.landlock.users && !run.user) throw new Error('sandboxArgv: the landlock view of a root exc needs a run user');
    return landlockArgv(state.landlock, run, state.seccomp ? { seccompFd: SECCOMP_FD } : {});
  }
  if (!state.active || !state.bwrap) throw new Error('sandboxArgv: no sandbox');
  const host = state.view === 'host' ? state.host : undefined;
  if (state.view === 'host' && (!host || !run.user)) throw new Error('sandboxArgv: the host view needs its setpriv and a run user');
  const args = [state.bwrap, ...(host ? hostArgs(run.maxDiskBytes) : privateArgs(run.maxDiskBytes))];
  // Read-only: an empty writable tmpfs would be unbounded room to write.
  for (const dir of run.hidden.dirs) args.push('--tmpfs', dir, '--remount-ro', dir);
  for (const file of run.hidden.files) args.push('--ro-bind', '/dev/null', file);
  args.push('--bind', run.workdir, run.workdir, '--chdir', run.workdir);
  if (state.seccomp) args.push('--seccomp', String(SECCOMP_FD));
  args.push('--');
  if (host && run.user) args.push(...setprivArgv(host.setpriv, run.user, host.groups));
  args.push(...run.argv);
  return args;
}

/**
 * The launcher's command line (see the top of landlock/zino-sandbox.py): python in
 * isolated mode without site-packages, the working directory, every hidden path, the
 * other runs' working directories (whatever exc made them), the grace after a
 * SIGTERM, the filter's fd, the run's user (root exc) with the log groups.
 */
export function landlockArgv(
  view: LandlockView,
  run: Pick<SandboxRun, 'workdir' | 'argv' | 'hidden' | 'user'>,
  extra: { seccompFd?: number; probe?: boolean } = {},
): string[] {
  const args = [view.python, '-I', '-S', '-B', view.launcher, '--workdir', run.workdir];
  for (const hidden of [...run.hidden.dirs, ...run.hidden.files]) args.push('--hide', hidden);
  args.push('--hide-prefix', path.join(tmpdir(), WORKDIR_PREFIX), '--grace-ms', String(LANDLOCK_GRACE_MS));
  if (extra.seccompFd !== undefined) args.push('--seccomp-fd', String(extra.seccompFd));
  if (run.user) args.push('--user', `${run.user.uid}:${run.user.gid}:${view.groups.map((g) => g.gid).join(',')}`);
  if (extra.probe) args.push('--probe');
  args.push('--', ...run.argv);
  return args;
}

function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function isUnder(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}
