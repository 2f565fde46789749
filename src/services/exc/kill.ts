/**
 * Making sure nothing a run started survives it. The program runs as the leader
 * of its own process group, so one signal reaches its whole group; a process that
 * left the group (setsid, double fork) is still found by the marker in its
 * environment, which every descendant inherits.
 */
import { readdir, readFile } from 'node:fs/promises';

/** Environment variable carrying the run's marker. */
export const MARKER_VARIABLE = 'ZINO_EXC_RUN';

/** Signals the process group `pgid`; ignores a group that is already gone. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: nobody left in the group.
  }
}

/** Time between two sweeps of {@link killMarked}. */
const SWEEP_GAP_MS = 10;
/** Bound on the sweeps of one {@link killMarked} (a run forking as fast as it is killed). */
const MAX_SWEEPS = 20;

/**
 * SIGKILLs every process (readable by us) whose environment carries `marker`;
 * returns how many. Sweeps /proc until a sweep after the first finds nobody: a
 * process in the middle of `execve` (a `setsid sleep` that has just left the group)
 * can show an empty environment to one sweep, and one forked during a sweep is not
 * in its listing.
 */
export async function killMarked(marker: string): Promise<number> {
  const needle = Buffer.from(`${MARKER_VARIABLE}=${marker}\0`);
  // A process killed by one sweep may still be listed by the next: counted once.
  const killed = new Set<number>();
  for (let sweep = 0; sweep < MAX_SWEEPS; sweep++) {
    const before = killed.size;
    await sweepOnce(needle, killed);
    if (sweep > 0 && killed.size === before) break;
    await new Promise((resolve) => setTimeout(resolve, SWEEP_GAP_MS));
  }
  return killed.size;
}

/** SIGKILLs the processes carrying `needle`, adding their pids to `killed`. */
async function sweepOnce(needle: Buffer, killed: Set<number>): Promise<void> {
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return;
  }
  await Promise.all(
    entries.map(async (entry) => {
      if (!/^\d+$/.test(entry) || Number(entry) === process.pid) return;
      try {
        const environ = await readFile(`/proc/${entry}/environ`);
        if (environ.includes(needle)) {
          process.kill(Number(entry), 'SIGKILL');
          killed.add(Number(entry));
        }
      } catch {
        // Gone, or not ours to read.
      }
    }),
  );
}

/** True when a process `pid` exists (EPERM: it exists, owned by someone else). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
