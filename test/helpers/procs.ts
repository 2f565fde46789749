/** Looking for processes by their command line, to prove that nothing survived. */
import { readdirSync, readFileSync } from 'node:fs';

/** PIDs of live (non-zombie) processes whose command line contains `needle`. */
export function processesMatching(needle: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (!cmdline.includes(needle)) continue;
      const state = /\) (\w) /.exec(readFileSync(`/proc/${entry}/stat`, 'utf8'))?.[1];
      if (state !== 'Z') out.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return out;
}

/**
 * SIGKILLs the process `pid`. Anything but a positive integer is refused: `kill(0)`
 * signals the caller's own process group (this vitest run, and whatever started it),
 * and a negative pid a whole group.
 */
export function killProcess(pid: number | undefined): void {
  if (pid === undefined || !Number.isInteger(pid) || pid <= 0) throw new Error(`refusing to kill pid ${String(pid)}`);
  process.kill(pid, 'SIGKILL');
}
