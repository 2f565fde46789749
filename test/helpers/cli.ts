/** Running the zino command as a real process, with optional stdin. */
import { spawn } from 'node:child_process';
import { CLI_PATH } from '../../src/testing/paths.js';

/** How a CLI run ended. */
export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `zino ...args`; `input` is written to stdin (else stdin is a closed pipe). */
export function runCli(
  args: string[],
  options: { input?: string; env?: NodeJS.ProcessEnv; cwd?: string; signalAfter?: { text: string; signal: NodeJS.Signals } } = {},
): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI_PATH, ...args], {
      env: { ...process.env, ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    });
    let stdout = '';
    let stderr = '';
    let signalled = false;
    const check = (): void => {
      if (options.signalAfter && !signalled && (stdout + stderr).includes(options.signalAfter.text)) {
        signalled = true;
        child.kill(options.signalAfter.signal);
      }
    };
    child.stdout.setEncoding('utf8').on('data', (s: string) => {
      stdout += s;
      check();
    });
    child.stderr.setEncoding('utf8').on('data', (s: string) => {
      stderr += s;
      check();
    });
    child.stdin.end(options.input ?? '');
    child.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}
