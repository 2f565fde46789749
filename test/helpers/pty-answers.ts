/**
 * Running the zino command in a pseudo-terminal with answers typed after given output (pty.ts drives one step by step): script(1)
 * from util-linux gives the command a terminal as its stdin, stdout and stderr, and
 * passes what we write on to it. Output comes back as one stream, as a person sees it.
 */
import { spawn } from 'node:child_process';
import { CLI_PATH } from '../../src/testing/paths.js';

/** Once `after` has appeared in the output (its nth time, counting from 1), type `send`. */
export interface PtyAnswer {
  after: string;
  send: string;
  nth?: number;
}

/** How a run in a terminal ended. */
export interface PtyResult {
  code: number | null;
  output: string;
}

function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** Runs `zino ...args` on a terminal and answers in order; resolves when it exits. */
export function runInPty(args: string[], answers: PtyAnswer[] = []): Promise<PtyResult> {
  const command = [process.execPath, CLI_PATH, ...args].map(shellQuote).join(' ');
  return new Promise((resolve, reject) => {
    // -q: no banner, -f: flush as it comes, -e: exit with the command's status, -c: the command.
    const child = spawn('script', ['-qfec', command, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, TERM: 'dumb' } });
    let output = '';
    const pending = [...answers];
    const check = (): void => {
      const next = pending[0];
      if (!next) return;
      if (output.split(next.after).length - 1 >= (next.nth ?? 1)) {
        pending.shift();
        child.stdin.write(next.send);
        check();
      }
    };
    child.stdout.setEncoding('utf8').on('data', (s: string) => {
      output += s;
      check();
    });
    child.stderr.setEncoding('utf8').on('data', (s: string) => (output += s));
    child.on('error', reject);
    child.on('exit', (code) => {
      child.stdin.destroy();
      resolve({ code, output });
    });
  });
}
