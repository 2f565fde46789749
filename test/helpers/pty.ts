/**
 * Running the zino command in a pseudo-terminal, as a person would at a
 * terminal: `script` (util-linux, essential on Debian) gives the command a pty of
 * 100×30, forwards what the test writes (keys: "\x03" is Ctrl-C, "\x04" Ctrl-D) and
 * returns everything the terminal showed, escape sequences included.
 */
import { spawn } from 'node:child_process';
import { CLI_PATH } from '../../src/testing/paths.js';
import { waitFor } from './util.js';

/** A command running in a pty. */
export interface PtyRun {
  /** Everything the terminal showed so far (stdout and stderr of the command, and the echo of typed keys). */
  output(): string;
  /** Types `text` (a line needs its "\n"). */
  type(text: string): void;
  /** Resolves with the output once it contains `text` (or matches it); the part after `from` only. */
  waitForOutput(text: string | RegExp, what?: string, from?: number): Promise<string>;
  /** How the command ended. */
  readonly exited: Promise<{ code: number | null; output: string }>;
  /** Ends it (SIGKILL to script and so to the pty's session) if still running. */
  kill(): void;
}

function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** Runs `zino ...args` in a pty. */
export function runInPty(args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): PtyRun {
  const command = `stty cols 100 rows 30; exec ${[process.execPath, CLI_PATH, ...args].map(shellQuote).join(' ')}`;
  const child = spawn('script', ['-qfec', command, '/dev/null'], {
    env: { ...process.env, TERM: 'xterm', ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (out += s));
  child.stdin.on('error', () => undefined);
  const exited = new Promise<{ code: number | null; output: string }>((resolve) => child.once('close', (code) => resolve({ code, output: out })));
  let ended = false;
  void exited.then(() => (ended = true));
  return {
    output: () => out,
    type: (text) => void child.stdin.write(text),
    async waitForOutput(text, what = JSON.stringify(String(text)), from = 0) {
      return waitFor(() => {
        const seen = out.slice(from);
        if (typeof text === 'string' ? seen.includes(text) : text.test(seen)) return seen;
        if (ended) throw new Error(`the command ended before showing ${what}:\n${out}`);
        return undefined;
      }, `the terminal to show ${what}`);
    },
    exited,
    kill: () => {
      if (!ended) child.kill('SIGKILL');
    },
  };
}
