/**
 * The bubblewrap sandbox: no network, read-only root, private /tmp and /dev/shm of
 * `[exc] max_disk_bytes` each, the working directory, its own PID namespace (when the program exits, everything it started
 * dies with it), killed when exc dies. ZINO's own sockets, memory and config are
 * hidden from the code.
 *
 * The program never holds a capability. bwrap started by an ordinary user puts it
 * in a user namespace of its own with none; bwrap started by root would not (the
 * program would be real root, able to remount / read-write and unmount what hides
 * ZINO's files), so when exc runs as root bwrap itself is started as
 * {@link SANDBOX_UID} (`nobody`) and behaves exactly as for an ordinary user.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { SERVICE_NAMES, type ResolvedConfig, type SandboxMode } from '../../runtime/index.js';
import { which } from './which.js';

/** Whether runs are sandboxed, and why (not). */
export interface SandboxState {
  mode: SandboxMode;
  /** bwrap is used for every run. */
  active: boolean;
  /** Absolute path of bwrap when active. */
  bwrap?: string;
  /** Human-readable explanation for capabilities and the log. */
  reason: string;
  /** Set when `mode = "bwrap"` but it cannot be used: every execute is refused with this. */
  refusal?: string;
  /** The uid and gid bwrap (and so the program) runs as, when not exc's own: exc runs as root. */
  runAs?: { uid: number; gid: number };
}

/** The uid and gid sandboxed programs run as when exc runs as root: `nobody`. */
export const SANDBOX_UID = 65534;

/** Who bwrap must run as: `nobody` when exc is root, else exc's own user (undefined). */
export function sandboxUser(euid: number | undefined = process.geteuid?.()): { uid: number; gid: number } | undefined {
  return euid === 0 ? { uid: SANDBOX_UID, gid: SANDBOX_UID } : undefined;
}

/** Decides how to run code under `mode`, probing bubblewrap once. */
export function detectSandbox(mode: SandboxMode): SandboxState {
  if (mode === 'none') return { mode, active: false, reason: 'sandbox disabled by [exc] sandbox = "none"' };
  const bwrap = which('bwrap');
  const runAs = sandboxUser();
  const problem = bwrap ? probe(bwrap, runAs) : 'bubblewrap (bwrap) is not installed';
  if (bwrap && problem === undefined) {
    const as = runAs ? `, programs run as uid ${runAs.uid} because exc runs as root` : '';
    return { mode, active: true, bwrap, reason: `bubblewrap at ${bwrap}${as}`, ...(runAs ? { runAs } : {}) };
  }
  if (mode === 'bwrap') return { mode, active: false, reason: problem ?? 'unusable', refusal: `[exc] sandbox = "bwrap" but ${problem}` };
  return { mode, active: false, reason: `running without a sandbox: ${problem}` };
}

/** Runs a trivial sandboxed command; returns why it failed, or `undefined` when it works. */
function probe(bwrap: string, runAs: { uid: number; gid: number } | undefined): string | undefined {
  const result = spawnSync(bwrap, [...baseArgs(), '--', 'true'], { timeout: 10_000, encoding: 'utf8', cwd: '/', ...(runAs ?? {}) });
  if (result.status === 0) return undefined;
  const detail = (result.stderr || result.error?.message || `exit ${String(result.status)}`).trim().split('\n')[0];
  const as = runAs ? ` as uid ${runAs.uid} (exc runs as root; bwrap needs unprivileged user namespaces)` : '';
  return `bubblewrap cannot create a sandbox here${as} (${detail})`;
}

/**
 * `maxDiskBytes` sizes the two tmpfs the program may write to, /tmp and /dev/shm
 * (unsized, each could take half the RAM); the working directory is bounded by the run.
 */
function baseArgs(maxDiskBytes = 1024 * 1024): string[] {
  const size = String(maxDiskBytes);
  return [
    ...['--die-with-parent', '--new-session', '--unshare-all', '--ro-bind', '/', '/', '--dev', '/dev', '--size', size, '--tmpfs', '/dev/shm'],
    ...['--proc', '/proc', '--size', size, '--tmpfs', '/tmp'],
  ];
}

/**
 * Paths the sandboxed code must not see: ZINO's sockets, memory and config file.
 * Left out: those under /tmp (the sandbox has its own), and, when programs run as
 * `runAs`, those it cannot reach because a directory above them keeps it out (it
 * cannot see them anyway, and bwrap, running as that user, could not mount over them).
 */
export function hiddenPaths(
  config: Readonly<ResolvedConfig>,
  configFile: string | null,
  runAs?: { uid: number; gid: number },
): { dirs: string[]; files: string[] } {
  const dirs = new Set<string>([config.mem.data_dir]);
  for (const name of SERVICE_NAMES) dirs.add(path.dirname(config[name].socket));
  const visible = (p: string): boolean => !isUnder(p, '/tmp') && (runAs === undefined || reachableBy(p, runAs));
  const existingDirs = [...dirs].filter((d) => isDirectory(d) && visible(d));
  const files = configFile && existsSync(configFile) && visible(configFile) ? [configFile] : [];
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

/** The bwrap command line that runs `argv` with `workdir` as its private working directory. */
export function sandboxArgv(bwrap: string, workdir: string, argv: string[], hidden: { dirs: string[]; files: string[] }, maxDiskBytes: number): string[] {
  const args = [bwrap, ...baseArgs(maxDiskBytes)];
  // Read-only: an empty writable tmpfs would be unbounded room to write.
  for (const dir of hidden.dirs) args.push('--tmpfs', dir, '--remount-ro', dir);
  for (const file of hidden.files) args.push('--ro-bind', '/dev/null', file);
  args.push('--bind', workdir, workdir, '--chdir', workdir, '--', ...argv);
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
