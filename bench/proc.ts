/**
 * Reading a process's CPU time and memory from /proc (Linux only), for the
 * benchmarks: CPU from /proc/PID/stat (utime + stime), memory from
 * /proc/PID/smaps_rollup (RSS, PSS, anonymous).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

/** Clock ticks per second of /proc/PID/stat's times (getconf CLK_TCK; 100 on Linux). */
const TICKS_PER_S = ((): number => {
  try {
    const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return n > 0 ? n : 100;
  } catch {
    return 100;
  }
})();

/** CPU time (user + system) a process has used so far, in ms; NaN once it is gone. */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count fields after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 (utime, stime) are at 11 and 12 counting from field 3.
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_S;
  } catch {
    return Number.NaN;
  }
}

/** CPU time of each named process so far, in ms. */
export function cpuSnapshot(pids: Readonly<Record<string, number>>): Record<string, number> {
  return Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuMs(pid)]));
}

/** CPU per request of each named process between two snapshots, in ms, with the total. */
export function cpuPerRequest(
  before: Record<string, number>,
  after: Record<string, number>,
  requests: number,
): { total: number; each: Record<string, number> } {
  const each: Record<string, number> = {};
  let total = 0;
  for (const [name, ms] of Object.entries(after)) {
    const per = (ms - (before[name] ?? Number.NaN)) / requests;
    each[name] = Math.round(per * 1000) / 1000;
    total += per;
  }
  return { total, each };
}

/** A process's memory from /proc/PID/smaps_rollup, in MB (10^6 bytes): rss, pss (shared pages split among sharers), anon. */
export function memoryMB(pid: number): { rss: number; pss: number; anon: number } {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
  const mb = (k: number): number => (k * 1024) / 1e6;
  return { rss: mb(kb('Rss')), pss: mb(kb('Pss')), anon: mb(kb('Anonymous')) };
}

/** The processes whose command line contains every one of `parts`, by pid. */
export function findPids(parts: readonly string[]): { pid: number; cmdline: string[] }[] {
  const found: { pid: number; cmdline: string[] }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (parts.every((p) => cmdline.includes(p))) found.push({ pid: Number(entry), cmdline });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Read and write system calls a process has made so far (/proc/PID/io syscr, syscw); NaN once it is gone. */
export function syscalls(pid: number): { reads: number; writes: number } {
  try {
    const text = readFileSync(`/proc/${pid}/io`, 'utf8');
    const field = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? Number.NaN);
    return { reads: field('syscr'), writes: field('syscw') };
  } catch {
    return { reads: Number.NaN, writes: Number.NaN };
  }
}
