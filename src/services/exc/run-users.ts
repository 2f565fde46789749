/**
 * A user of its own for every sandboxed run when exc runs as root (the sandbox's
 * host view, see sandbox.ts).
 *
 * The program shares the host's PID namespace and /proc there, so the kernel's
 * per-user rules are what keep runs apart: a process may signal, trace or look into
 * (`/proc/PID/{environ,mem,fd,root,cwd}`) only processes of its own uid. A shared
 * uid such as `nobody` would let one run reach into a concurrent run, or into a host
 * daemon that runs as `nobody`. With a uid no other process has, the run reaches
 * only itself, and `kill(-1, SIGKILL)` sent as that uid ends everything it started,
 * atomically (no fork can slip past it), whatever it did to leave its process group
 * or environment: the guarantee a PID namespace gave before.
 *
 * The uids: {@link RUN_UID_BASE} + exc's pid × {@link RUN_UID_SLOTS} + slot, so that
 * excs running at the same time never share one (their pids differ), and a run uid
 * says which exc it belongs to. The range, 0x70000000–0x77ffffff, lies in what
 * systemd documents as unused (between the container ranges and the foreign range,
 * below 2^31); no user, group or file should use it.
 */
import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { abortError, type Logger } from '../../runtime/index.js';
import { isAlive } from './kill.js';

/** First uid (and gid) given to runs. */
export const RUN_UID_BASE = 0x70000000;
/** Runs of one exc that can be sandboxed at once; more wait for a free one. */
export const RUN_UID_SLOTS = 32;
/** Linux's highest possible pid + 1 (PID_MAX_LIMIT on 64-bit). */
const PID_MAX_LIMIT = 4 * 1024 * 1024;
/** One past the last run uid. */
export const RUN_UID_END = RUN_UID_BASE + PID_MAX_LIMIT * RUN_UID_SLOTS;

/** Whether `uid` is one ZINO gives to runs. */
export function isRunUid(uid: number): boolean {
  return uid >= RUN_UID_BASE && uid < RUN_UID_END;
}

/** The pid of the exc a run uid belongs to. */
export function runUidOwner(uid: number): number {
  return Math.floor((uid - RUN_UID_BASE) / RUN_UID_SLOTS);
}

/** A run's user, held until {@link RunUser.release}. */
export interface RunUser {
  uid: number;
  gid: number;
  release(): void;
}

/** The run uids of one exc: its block of {@link RUN_UID_SLOTS}, handed out one per run. */
export class RunUsers {
  private readonly base: number;
  private readonly busy = new Set<number>();
  private readonly waiting: Array<() => void> = [];

  constructor(pid: number = process.pid) {
    if (!Number.isInteger(pid) || pid <= 0 || pid >= PID_MAX_LIMIT) throw new Error(`no run uids for pid ${pid}`);
    this.base = RUN_UID_BASE + pid * RUN_UID_SLOTS;
  }

  /** All uids of this exc's block. */
  get block(): number[] {
    return Array.from({ length: RUN_UID_SLOTS }, (_, i) => this.base + i);
  }

  /** A free uid; waits for one when {@link RUN_UID_SLOTS} runs hold them all. Rejects (CANCELLED) when `signal` aborts first. */
  async acquire(signal: AbortSignal): Promise<RunUser> {
    for (;;) {
      if (signal.aborted) throw abortError(signal, 'sandboxed run');
      const uid = this.block.find((u) => !this.busy.has(u));
      if (uid !== undefined) {
        this.busy.add(uid);
        let released = false;
        return {
          uid,
          gid: uid,
          release: () => {
            if (released) return;
            released = true;
            this.busy.delete(uid);
            this.waiting.shift()?.();
          },
        };
      }
      await new Promise<void>((resolve, reject) => {
        const onAbort = (): void => {
          const i = this.waiting.indexOf(wake);
          if (i >= 0) this.waiting.splice(i, 1);
          reject(abortError(signal, 'sandboxed run'));
        };
        const wake = (): void => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        };
        this.waiting.push(wake);
        signal.addEventListener('abort', onAbort, { once: true });
      });
    }
  }
}

/** Live processes (not zombies) whose real, effective or saved uid satisfies `match`, pid → that uid (exc is root: it reads every status). */
export async function processesOf(match: (uid: number) => boolean): Promise<Map<number, number>> {
  const found = new Map<number, number>();
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return found;
  }
  await Promise.all(
    entries.map(async (entry) => {
      if (!/^\d+$/.test(entry)) return;
      try {
        const status = await readFile(`/proc/${entry}/status`, 'utf8');
        if (/^State:\s+[ZX]/m.test(status)) return; // dead, waiting to be reaped
        const uids = /^Uid:\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(status);
        const hit = uids?.slice(1, 4).map(Number).find(match);
        if (hit !== undefined) found.set(Number(entry), hit);
      } catch {
        // gone
      }
    }),
  );
  return found;
}

/** What the killer runs, as the run's uid: kill(-1) spares its caller; ESRCH means nobody was left. */
const KILL_ALL = "try { process.kill(-1, 'SIGKILL') } catch (err) { if (err.code !== 'ESRCH') throw err }";

/**
 * SIGKILLs every process of `user`: `kill(-1, SIGKILL)` made as that uid reaches
 * exactly the processes it may signal, which are those of the same uid, in one pass
 * of the kernel that no fork escapes. Returns how many there were (counted just
 * before). Node makes the call, not kill(1): procps' `kill -s KILL -- -1` signals
 * nobody (it takes `--` for a pid), and the spellings differ between kills.
 */
export async function killUser(user: { uid: number; gid: number }): Promise<number> {
  const before = (await processesOf((u) => u === user.uid)).size;
  await new Promise<void>((resolve) => {
    const child = spawn(process.execPath, ['-e', KILL_ALL], { uid: user.uid, gid: user.gid, cwd: '/', env: {}, stdio: 'ignore' });
    child.once('error', () => resolve());
    child.once('exit', () => resolve());
  });
  return before;
}

/**
 * At start: kills what runs under the run uids of an exc that is gone (killed with
 * SIGKILL, it could not end its runs' background processes) or of an earlier exc
 * that had this pid. Run uids of a live exc are left alone. Returns how many
 * processes there were.
 */
export async function sweepRunUsers(log: Logger, pid: number = process.pid): Promise<number> {
  const found = await processesOf(isRunUid);
  const stale = new Set<number>();
  for (const uid of found.values()) {
    const owner = runUidOwner(uid);
    if (owner === pid || !isAlive(owner)) stale.add(uid);
  }
  let killed = 0;
  for (const uid of stale) killed += await killUser({ uid, gid: uid });
  if (killed > 0) log.warn({ processes: killed, uids: [...stale] }, 'processes of runs of a killed exc ended');
  return killed;
}
