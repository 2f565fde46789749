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

/** SIGKILLs every process (readable by us) whose environment carries `marker`; returns how many. */
export async function killMarked(marker: string): Promise<number> {
  const needle = Buffer.from(`${MARKER_VARIABLE}=${marker}\0`);
  let killed = 0;
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return 0;
  }
  await Promise.all(
    entries.map(async (entry) => {
      if (!/^\d+$/.test(entry) || Number(entry) === process.pid) return;
      try {
        const environ = await readFile(`/proc/${entry}/environ`);
        if (environ.includes(needle)) {
          process.kill(Number(entry), 'SIGKILL');
          killed++;
        }
      } catch {
        // Gone, or not ours to read.
      }
    }),
  );
  return killed;
}
