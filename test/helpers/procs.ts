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
