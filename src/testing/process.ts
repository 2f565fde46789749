/**
 * Starting and stopping ZINO processes for tests and benchmarks: spawn, collect
 * stderr log lines, wait until the socket answers ping (never a fixed sleep),
 * stop with a signal and report how the process ended.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { ping } from '../runtime/index.js';

export { CLI_PATH } from './paths.js';

/** A running child process with its collected output. */
export interface RunningProcess {
  readonly child: ChildProcess;
  /** Parsed JSON log lines from stderr (non-JSON lines are kept as `{ raw }`). */
  readonly logs: Record<string, unknown>[];
  /** Everything written to stdout. */
  stdout(): string;
  /** Resolves when the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends `signal` (default SIGTERM) and waits for the exit; SIGKILLs after `killAfterMs`. */
  stop(signal?: NodeJS.Signals, killAfterMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Spawns `node <nodeFlags> <script> ...args` with stdout and stderr collected (stderr discarded
 * with `quiet`, for benchmarks).
 */
export function startProcess(
  script: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; quiet?: boolean; nodeFlags?: readonly string[] } = {},
): RunningProcess {
  const child = spawn(process.execPath, [...(options.nodeFlags ?? []), script, ...args], {
    env: options.env ?? process.env,
    cwd: options.cwd,
    stdio: ['ignore', 'pipe', options.quiet ? 'ignore' : 'pipe'],
  });
  const logs: Record<string, unknown>[] = [];
  let out = '';
  let errBuffer = '';
  child.stdout?.setEncoding('utf8').on('data', (s: string) => (out += s));
  child.stderr?.setEncoding('utf8').on('data', (s: string) => {
    errBuffer += s;
    let nl: number;
    while ((nl = errBuffer.indexOf('\n')) >= 0) {
      const line = errBuffer.slice(0, nl);
      errBuffer = errBuffer.slice(nl + 1);
      if (!line.trim()) continue;
      try {
        logs.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        logs.push({ raw: line });
      }
    }
  });
  // Resolved once the output has been read to its end ('close'), so that what the process
  // logged last is in `logs`; 'exit' can come first. A grandchild that inherited the pipes
  // (zino up's services) can hold them open: then at most 2 s after 'exit'.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('close', (code, signal) => resolve({ code, signal }));
    child.once('exit', (code, signal) => setTimeout(() => resolve({ code, signal }), 2000).unref());
  });
  return {
    child,
    logs,
    stdout: () => out,
    exited,
    async stop(signal = 'SIGTERM', killAfterMs = 15_000) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(signal);
        const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
        try {
          return await exited;
        } finally {
          clearTimeout(timer);
        }
      }
      return exited;
    },
  };
}

/**
 * Waits until `socketPath` answers ping. Rejects early when `proc` exits, with its
 * last log lines, so a failed start is reported instead of timing out.
 */
export async function waitForPing(socketPath: string, options: { timeoutMs?: number; proc?: RunningProcess } = {}): Promise<void> {
  const deadline = Date.now() + (options.timeoutMs ?? 15_000);
  let exited = false;
  // exited only ever resolves.
  void options.proc?.exited.then(() => (exited = true));
  for (;;) {
    if (exited) {
      const tail = options.proc?.logs
        .slice(-5)
        .map((l) => JSON.stringify(l))
        .join('\n');
      throw new Error(`process exited before ${socketPath} answered ping:\n${tail}`);
    }
    if (existsSync(socketPath)) {
      try {
        await ping(socketPath, { timeoutMs: 1000 });
        return;
      } catch {
        // not ready yet
      }
    }
    if (Date.now() > deadline) throw new Error(`${socketPath} did not answer ping within ${options.timeoutMs ?? 15_000} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
