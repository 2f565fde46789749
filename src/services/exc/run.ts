/**
 * Running one program with a time limit, bounded output and cancellation.
 *
 * The program leads its own process group. On timeout, output overflow or
 * cancellation the group gets SIGTERM, then SIGKILL after a grace period. When the
 * program exits, whatever it left running in the background is killed too, so a
 * `sleep 1000 &` holding the pipes open cannot keep the run (or anything) alive.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { BoundedCapture } from './capture.js';
import { DISK_POLL_MS, diskUsage } from './disk.js';
import { killMarked, signalGroup } from './kill.js';

/** How to run a program. */
export interface RunOptions {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  maxOutputBytes: number;
  signal: AbortSignal;
  /** Value of the marker variable in `env`, for the final sweep. */
  marker: string;
  /** Time between SIGTERM and SIGKILL. @default 2000 */
  killGraceMs?: number;
  /** Run as this uid and gid (no supplementary groups) instead of exc's own. */
  runAs?: { uid: number; gid: number };
  /**
   * Bound on what the program writes under `dir`: each file is cut at `bytes`
   * (RLIMIT_FSIZE through prlimit, when installed) and the directory is measured
   * every {@link DISK_POLL_MS} ms; going over stops the program.
   */
  disk?: { dir: string; bytes: number; prlimit?: string | undefined };
  /** Given to the program on file descriptor 3 (bwrap's seccomp filter), then closed. */
  fd3?: Buffer | undefined;
  /**
   * Ends whatever is left of the run once the program exits, as a whole (the host
   * view's per-run uid, see run-users.ts); returns how many processes there were.
   */
  killRest?: (() => Promise<number>) | undefined;
}

/** What happened. */
export interface RunResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** Which streams went over `maxOutputBytes`. */
  truncated: { stdout: boolean; stderr: boolean };
  /** Processes killed after the program exited that had left its group (setsid, nohup). */
  leftovers: number;
  /** The program's directory reached `disk.bytes` (measured, or a file hit RLIMIT_FSIZE and killed the program). */
  diskExceeded: boolean;
}

type StopReason = 'timeout' | 'output' | 'cancelled' | 'disk';

/** Exit status of a process killed by SIGXFSZ (a file reached RLIMIT_FSIZE). */
const SIGXFSZ_STATUS = 128 + constants.signals.SIGXFSZ;

/** Runs `options.argv` and resolves when it and everything it started are gone. */
export function runProgram(options: RunOptions): Promise<RunResult> {
  const disk = options.disk;
  const argv = disk?.prlimit ? [disk.prlimit, `--fsize=${disk.bytes}`, '--', ...options.argv] : options.argv;
  const [command, ...args] = argv;
  if (command === undefined) throw new Error('empty command');
  const stdout = new BoundedCapture(options.maxOutputBytes);
  const stderr = new BoundedCapture(options.maxOutputBytes);
  const grace = options.killGraceMs ?? 2000;

  return new Promise((resolve) => {
    let stopped: StopReason | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    // libuv drops supplementary groups when it switches uid or gid.
    const ids = options.runAs ? { uid: options.runAs.uid, gid: options.runAs.gid } : {};
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', options.fd3 ? 'pipe' : 'ignore'],
      ...ids,
    });
    const pid = child.pid;
    const [, out, err, extra] = child.stdio;
    if (!out || !err) throw new Error('spawn gave the program no output pipes');
    if (options.fd3 && extra && 'end' in extra) {
      // EPIPE when the program exits before reading it: the exit says what happened.
      extra.on('error', () => undefined);
      extra.end(options.fd3);
    }

    const stop = (reason: StopReason): void => {
      if (stopped || pid === undefined) return;
      stopped = reason;
      signalGroup(pid, 'SIGTERM');
      killTimer = setTimeout(() => signalGroup(pid, 'SIGKILL'), grace);
    };
    const timer = setTimeout(() => stop('timeout'), options.timeoutMs);
    // Measured one after the other (never overlapping), until the program is gone.
    let diskTimer: NodeJS.Timeout | undefined;
    let measuring = true;
    const measure = (): void => {
      if (!disk) return;
      diskTimer = setTimeout(() => {
        void diskUsage(disk.dir).then((used) => {
          if (used >= disk.bytes) stop('disk');
          if (measuring) measure();
        });
      }, DISK_POLL_MS);
    };
    measure();
    const onAbort = (): void => stop('cancelled');
    options.signal.addEventListener('abort', onAbort, { once: true });
    if (options.signal.aborted) onAbort();

    out.on('data', (chunk: Buffer) => {
      if (!stdout.push(chunk)) stop('output');
    });
    err.on('data', (chunk: Buffer) => {
      if (!stderr.push(chunk)) stop('output');
    });

    let finishing = false;
    const finish = async (exitCode: number, spawnError?: string): Promise<void> => {
      if (finishing) return;
      finishing = true;
      clearTimeout(timer);
      clearTimeout(killTimer);
      measuring = false;
      clearTimeout(diskTimer);
      options.signal.removeEventListener('abort', onAbort);
      // Background leftovers die with the run; then the pipes close and we can read to the end.
      if (pid !== undefined) signalGroup(pid, 'SIGKILL');
      const rest = options.killRest ? await options.killRest() : 0;
      const leftovers = rest + (await killMarked(options.marker));
      // A file cut at RLIMIT_FSIZE kills only its writer (SIGXFSZ); the program may go on and exit 0.
      const diskFull = stopped === 'disk' || (disk !== undefined && (await diskUsage(disk.dir)) >= disk.bytes);
      await Promise.race([drained(out), new Promise((r) => setTimeout(r, 1000))]);
      await Promise.race([drained(err), new Promise((r) => setTimeout(r, 1000))]);
      out.destroy();
      err.destroy();
      resolve({
        exitCode: stopped === 'timeout' ? 124 : exitCode,
        stdout: stdout.text(),
        stderr: spawnError ?? stderr.text(),
        timedOut: stopped === 'timeout',
        truncated: { stdout: stdout.overflowed, stderr: stderr.overflowed },
        leftovers,
        diskExceeded: diskFull || (disk?.prlimit !== undefined && exitCode === SIGXFSZ_STATUS),
      });
    };

    // finish() cannot reject: signalGroup and killMarked swallow their errors, drained() only resolves.
    child.once('error', (err: NodeJS.ErrnoException) => {
      void finish(err.code === 'ENOENT' ? 127 : 126, `cannot run ${command}: ${err.code ?? err.message}`);
    });
    child.once('exit', (code, signal) => {
      void finish(code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0));
    });
  });
}

function drained(stream: NodeJS.ReadableStream & { readableEnded?: boolean; destroyed?: boolean }): Promise<void> {
  if (stream.readableEnded || stream.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    stream.once('end', () => resolve());
    stream.once('close', () => resolve());
  });
}
