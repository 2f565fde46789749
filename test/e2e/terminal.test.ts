/**
 * The CLI at a terminal (issue 15, points 5 and 7), in a pseudo-terminal against a
 * `zino up` suite and the mock LLM: the "waiting for the model…" line during
 * silence, `zino chat` riding out a daemon restart, its slash commands, and
 * Ctrl-C / Ctrl-D leaving the terminal tidy. Silence is made with the mock's gates
 * (held until the test releases them), never with a guessed duration.
 */
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connect, ping, request } from '../../src/runtime/index.js';
import { writeTestConfig } from '../../src/testing/suite.js';
import { startSuite, type RunningSuite } from '../../src/testing/up.js';
import { mockOverrides, useMockLlm } from '../helpers/mock.js';
import { processesMatching } from '../helpers/procs.js';
import { runInPty, type PtyRun } from '../helpers/pty.js';
import { tempDir, waitFor } from '../helpers/util.js';

const llm = useMockLlm();
let suite: RunningSuite;
let file: string;
let dir: string;
let cleanup: () => void;
const runs: PtyRun[] = [];

beforeAll(async () => {
  ({ dir, cleanup } = tempDir('ztty'));
  ({ file } = writeTestConfig(dir, mockOverrides(llm.mock)));
  suite = await startSuite(file);
});

afterAll(async () => {
  for (const run of runs) run.kill();
  expect(await suite.interrupt()).toEqual({ code: 0, signal: null });
  cleanup();
});

beforeEach(() => llm.script({}));

const pty = (args: string[]): PtyRun => {
  const run = runInPty([...args, '--config', file]);
  runs.push(run);
  return run;
};
const daemonSocket = (): string => path.join(dir, 'run', 'daemon.sock');

/** SIGKILLs the daemon `pid` (with zino up frozen, so it stays down) and waits until its socket refuses connections. */
async function killDaemon(pid: number): Promise<void> {
  process.kill(pid, 'SIGKILL');
  await waitFor(
    () =>
      connect(daemonSocket()).then(
        (socket) => (socket.destroy(), false),
        (err: { code?: string }) => err.code === 'UPSTREAM_UNAVAILABLE',
      ),
    'the daemon to refuse connections',
  );
}
const ESC_CLEAR = '\x1b8\x1b[K';

describe('the waiting line (point 5)', () => {
  it('appears in `ask --stream` after a silence, counts the seconds, and is erased before the answer', async () => {
    llm.script({ rules: [{ gate: 'think', reply: 'Thought about it.' }] });
    const run = pty(['ask', '--stream', 'think hard']);
    await run.waitForOutput('\x1b7 waiting for the model… 1 s');
    await run.waitForOutput(`${ESC_CLEAR} waiting for the model… 2 s`);
    llm.mock.release('think');
    const { code, output } = await run.exited;
    expect(code).toBe(0);
    const shown = output.lastIndexOf('waiting for the model…');
    const erased = output.indexOf(ESC_CLEAR, shown);
    expect(erased).toBeGreaterThan(shown);
    expect(output.indexOf('Thought about it.')).toBeGreaterThan(erased);
  });

  it('never appears when the output is not a terminal', async () => {
    // The same silence, but stderr is a pipe: see test/cli/waiting.test.ts for the timing; here, the real command.
    llm.script({ rules: [{ gate: 'quiet', reply: 'done' }] });
    const { runCli } = await import('../helpers/cli.js');
    const pending = runCli(['ask', '--stream', '--config', file, 'quiet please']);
    await waitFor(() => llm.mock.stats.waiting.quiet === 1, 'the request to wait at the gate');
    llm.mock.release('quiet');
    const result = await pending;
    expect(result).toMatchObject({ code: 0, stdout: 'done\n' });
    expect(result.stderr).toBe('');
  });
});

describe('zino chat at a terminal (point 7)', () => {
  it('waits for a restarting daemon, says so, keeps the session and sends the message again', async () => {
    llm.script({
      rules: [
        { match: 'first line', reply: 'reply one' },
        { match: 'second line', reply: 'reply two' },
      ],
    });
    const run = pty(['chat', '--channel', 'restart']);
    await run.waitForOutput('you> ');
    run.type('first line\n');
    // The prompt after the answer: the answer is complete (its done frame has come).
    await run.waitForOutput(/reply one[\s\S]*you> /, 'the answer and the prompt again');
    let mark: number;

    // Kill the daemon while the supervisor is frozen, so the chat meets it down.
    const [pid] = processesMatching(`serve daemon --config ${file}`);
    expect(pid).toBeDefined();
    suite.child.kill('SIGSTOP');
    try {
      await killDaemon(pid as number);
      mark = run.output().length;
      run.type('second line\n');
      await run.waitForOutput(/the daemon at .*daemon\.sock is not answering \((ECONNREFUSED|ENOENT)\); waiting up to 30 s/, 'the waiting notice', mark);
    } finally {
      suite.child.kill('SIGCONT');
    }
    await run.waitForOutput('zino: the daemon is back; sending your message again.', 'the reconnection', mark);
    await run.waitForOutput('reply two', 'the second answer', mark);
    run.type('\x04');
    const { code } = await run.exited;
    expect(code).toBe(0);
    // The session kept its channel: both exchanges are in its history.
    const history = await request(path.join(dir, 'run', 'mem.sock'), { type: 'get_history', channel_id: 'restart' });
    expect((history.messages as { content: string }[]).map((m) => m.content)).toEqual(['first line', 'reply one', 'second line', 'reply two']);
  });

  it('gives up with a clear message when the daemon does not come back', async () => {
    llm.script({ rules: [{ reply: 'hello back' }] });
    const run = pty(['chat', '--channel', 'giveup', '--reconnect', '1']);
    await run.waitForOutput('you> ');
    run.type('hello\n');
    await run.waitForOutput(/hello back[\s\S]*you> /, 'the answer and the prompt again');
    const [pid] = processesMatching(`serve daemon --config ${file}`);
    suite.child.kill('SIGSTOP');
    try {
      await killDaemon(pid as number);
      run.type('anyone?\n');
      const { code, output } = await run.exited;
      expect(code).toBe(69);
      expect(output).toContain('waiting up to 1 s for it to come back');
      expect(output).toContain('zino: the daemon did not come back within 1 s; giving up.');
      expect(output).toMatch(/zino: cannot reach the ZINO daemon at .*daemon\.sock/);
    } finally {
      suite.child.kill('SIGCONT');
      await waitFor(
        () =>
          ping(daemonSocket()).then(
            () => true,
            () => false,
          ),
        'the daemon to be back',
      );
    }
  });

  it('refuses unknown commands, lists the real ones, shows the waiting line, and leaves tidily on Ctrl-C', async () => {
    llm.script({ rules: [{ gate: 'slow', reply: 'never shown' }] });
    const run = pty(['chat', '--channel', 'keys']);
    await run.waitForOutput('you> ');
    run.type('/bogus please\n');
    await run.waitForOutput('zino: unknown command /bogus (not sent to the model; /help lists the commands, //text sends "/text")');
    const help = run.output().length;
    run.type('/help\n');
    await run.waitForOutput('//text           send', 'the help', help);
    expect(run.output()).toMatch(/\/help, \/\? +list these commands/);
    expect(run.output()).toMatch(/\/clear +forget this channel's history/);
    expect(run.output()).toMatch(/\/exit, \/quit +leave/);
    expect(llm.mock.stats.requests).toBe(0);

    // An answer that does not come: the waiting line, then Ctrl-C cancels it and the prompt is back.
    let mark = run.output().length;
    run.type('take your time\n');
    await run.waitForOutput('waiting for the model… 1 s', 'the waiting line', mark);
    mark = run.output().length;
    run.type('\x03');
    await run.waitForOutput('zino: cancelled', 'the cancellation', mark);
    await run.waitForOutput('you> ', 'the prompt', mark);
    await llm.mock.waitForAborts(1, 30_000);
    // Ctrl-C at the prompt leaves, ending the line for the shell.
    run.type('\x03');
    const { code, output } = await run.exited;
    expect(code).toBe(0);
    // The prompt (readline puts the cursor after it), then the line ended: the shell's prompt starts on its own line.
    expect(output.replaceAll(`${String.fromCharCode(27)}[6G`, '')).toMatch(/you> \r\n$/);
    expect(output.slice(output.lastIndexOf('zino: cancelled'))).not.toContain('waiting for the model');
  });
});
