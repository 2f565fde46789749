/**
 * End to end: the whole suite under `zino up` in a temp directory against the mock
 * LLM, driven with the CLI and with raw framed clients.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connect, ping, request, type Frame } from '../../src/runtime/index.js';
import { serviceNodeFlags } from '../../src/runtime/node-flags.js';
import { writeTestConfig } from '../../src/testing/suite.js';
import { startSuite, type RunningSuite } from '../../src/testing/up.js';
import { runCli } from '../helpers/cli.js';
import { collectFrames } from '../helpers/frames.js';
import { mockOverrides, useMockLlm } from '../helpers/mock.js';
import { processesMatching } from '../helpers/procs.js';
import { tempDir, waitFor } from '../helpers/util.js';

const llm = useMockLlm();
let suite: RunningSuite;
let file: string;
let dir: string;
let cleanup: () => void;
let daemon: string;
let mem: string;

beforeAll(async () => {
  ({ dir, cleanup } = tempDir('ze2e'));
  ({ file } = writeTestConfig(dir, mockOverrides(llm.mock, { api: { key: 'sk-e2e' }, service: { model: 'e2e-model' } })));
  suite = await startSuite(file);
  daemon = path.join(dir, 'run', 'daemon.sock');
  mem = path.join(dir, 'run', 'mem.sock');
});

afterAll(async () => {
  // `zino up` interrupted leaves no process and no socket behind.
  const exit = await suite.interrupt();
  expect(exit).toEqual({ code: 0, signal: null });
  expect(processesMatching(`serve`).filter((pid) => processesMatching(file).includes(pid))).toEqual([]);
  expect(readdirSync(path.join(dir, 'run'))).toEqual([]);
  cleanup();
});

const script = llm.script;
beforeEach(() => script({}));

const frames = (req: Frame, signal?: AbortSignal): Promise<Frame[]> => collectFrames(daemon, req, { signal });

const lastUser = (i: number): string => {
  const messages = llm.mock.stats.bodies[i]?.messages as Frame[];
  return String(messages.at(-1)?.content);
};

describe('zino up', () => {
  it('runs all seven services, each answering ping', async () => {
    for (const name of ['daemon', 'rtr', 'agr', 'sys', 'exc', 'mem', 'ctx']) await ping(path.join(dir, 'run', `${name}.sock`));
    expect(suite.stdout()).toContain(`daemon:  ${daemon}`);
    expect(suite.stdout()).toMatch(/ask: +zino ask --config .* "how much disk space is free\?"/);
  });

  it('starts each service with its Node flags (rtr a larger young generation than the others)', () => {
    for (const name of ['daemon', 'rtr', 'agr', 'sys', 'exc', 'mem', 'ctx']) {
      const pids = processesMatching(`serve ${name} --config ${file}`);
      expect(pids, name).toHaveLength(1);
      const argv = readFileSync(`/proc/${String(pids[0])}/cmdline`, 'utf8').split('\0');
      expect(argv.slice(1, argv.indexOf('serve') - 1), name).toEqual(serviceNodeFlags(name));
    }
    expect(serviceNodeFlags('rtr')).toEqual(['--max-semi-space-size=2', '--initial-old-space-size=16', '--heap-growing-percent=100']);
    expect(serviceNodeFlags('daemon')).toEqual(['--max-semi-space-size=1']);
  });

  it('refuses a second zino up on the same sockets and leaves the first one untouched (regression)', async () => {
    const second = await runCli(['up', '--config', file]);
    expect(second.code).toBe(73);
    expect(second.stderr).toMatch(/^zino: daemon is already running at .*daemon\.sock: another ZINO suite uses these sockets/);
    for (const name of ['daemon', 'rtr', 'agr', 'sys', 'exc', 'mem', 'ctx']) await ping(path.join(dir, 'run', `${name}.sock`));
  });

  it('restarts a service that crashes', async () => {
    const [pid] = processesMatching(`serve sys --config ${file}`);
    expect(pid).toBeDefined();
    process.kill(pid as number, 'SIGKILL');
    await waitFor(() => processesMatching(`serve sys --config ${file}`).some((p) => p !== pid), 'a new sys process');
    await waitFor(
      async () =>
        ping(path.join(dir, 'run', 'sys.sock')).then(
          () => true,
          () => false,
        ),
      'sys to answer again',
      30_000,
    );
    await waitFor(
      () => suite.logs.some((l) => typeof l.raw === 'string' && /zino up: sys crashed \(killed by SIGKILL\); restarting in/.test(l.raw)),
      'zino up to log the crash',
    );
  });
});

describe('raw framed clients', () => {
  it('get a collected answer', async () => {
    script({ rules: [{ reply: 'Collected.' }] });
    expect(await request(daemon, { message: 'hello' })).toMatchObject({ type: 'response', content: 'Collected.' });
  });

  it('get a streamed answer', async () => {
    script({ rules: [{ reply: 'Streamed answer.', chunkSize: 3 }] });
    const out = await frames({ message: 'hello', stream: true });
    expect(
      out
        .filter((f) => f.type === 'chunk')
        .map((f) => f.delta)
        .join(''),
    ).toBe('Streamed answer.');
    expect(out.at(-1)).toMatchObject({ type: 'done', full_text: 'Streamed answer.' });
  });

  it("store a channel's history and feed it back into the next prompt", async () => {
    script({
      rules: [
        { match: 'first', reply: 'First answer.' },
        { match: 'second', reply: 'Second answer.' },
      ],
    });
    await request(daemon, { message: 'first question', channel_id: 'hist' });
    await request(daemon, { message: 'second question', channel_id: 'hist' });
    const second = llm.mock.stats.bodies[1]?.messages as Frame[];
    const tail = second.slice(-3);
    expect(tail).toEqual([
      { role: 'user', content: 'first question' },
      { role: 'assistant', content: 'First answer.' },
      { role: 'user', content: 'second question' },
    ]);
  });

  it('get a tool call executed', async () => {
    script({
      rules: [
        { role: 'user', reply: 'Running.<tool_call>{"name":"execute_bash","arguments":{"code":"echo $((6*7))"}}</tool_call>' },
        { role: 'assistant', reply: ' The answer is 42.' },
      ],
    });
    const reply = await request(daemon, { message: 'compute', channel_id: 'tools' });
    expect(reply.content).toContain('<tool_response>\n42\n</tool_response>');
    expect(String(reply.content).endsWith(' The answer is 42.')).toBe(true);
    const history = await request(mem, { type: 'get_history', channel_id: 'tools' });
    expect((history.messages as Frame[])[1]?.content).toBe(reply.content);
  });

  it('cancel on disconnect mid-stream: the mock sees the abort and nothing is stored', async () => {
    script({ rules: [{ reply: 'a slow answer that never ends', chunkSize: 2, hangAfterChunks: 2 }] });
    const controller = new AbortController();
    const got = frames({ message: 'hang', stream: true, channel_id: 'gone' }, controller.signal).catch((e: unknown) => e);
    await waitFor(() => llm.mock.stats.active === 1, 'the LLM request');
    controller.abort();
    await got;
    await llm.mock.waitForAborts(1, 30_000);
    const history = await request(mem, { type: 'get_history', channel_id: 'gone' });
    expect(history.messages).toEqual([]);
  });

  it('answer 50 concurrent clients on 50 channels, each correctly', async () => {
    script({ rules: Array.from({ length: 50 }, (_, i) => ({ match: `client-${i}:`, reply: `answer for ${i}`, chunkSize: 5, delayMs: 2 })) });
    const answers = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const out = await frames({ message: `client-${i}: hello`, stream: true, channel_id: `many-${i}` });
        return out.at(-1)?.full_text;
      }),
    );
    expect(answers).toEqual(Array.from({ length: 50 }, (_, i) => `answer for ${i}`));
    const histories = await Promise.all(Array.from({ length: 50 }, (_, i) => request(mem, { type: 'get_history', channel_id: `many-${i}` })));
    histories.forEach((h, i) =>
      expect(h.messages).toEqual([
        { role: 'user', content: `client-${i}: hello` },
        { role: 'assistant', content: `answer for ${i}` },
      ]),
    );
  });

  it('answer two requests on one channel in order, the second seeing the first', async () => {
    script({
      rules: [
        { match: 'slow one', reply: 'slow reply', chunkSize: 1, delayMs: 20 },
        { match: 'quick one', reply: 'quick reply' },
      ],
    });
    const order: string[] = [];
    const a = request(daemon, { message: 'slow one', channel_id: 'ordered' }).then((r) => order.push(String(r.content)));
    await waitFor(() => llm.mock.stats.requests === 1, 'the first request to reach the LLM');
    const b = request(daemon, { message: 'quick one', channel_id: 'ordered' }).then((r) => order.push(String(r.content)));
    await Promise.all([a, b]);
    expect(order).toEqual(['slow reply', 'quick reply']);
    expect(lastUser(0)).toBe('slow one');
    expect((llm.mock.stats.bodies[1]?.messages as Frame[]).slice(-3, -1)).toEqual([
      { role: 'user', content: 'slow one' },
      { role: 'assistant', content: 'slow reply' },
    ]);
  });

  it('fall back to rtr when agr is killed, and use agr again once it is back', async () => {
    script({ rules: [{ reply: 'plain answer' }] });
    const pid = await waitFor(() => {
      const pids = processesMatching(`serve agr --config ${file}`);
      return pids.length === 1 ? pids[0] : undefined;
    }, 'one agr process');
    // Freeze the supervisor so that it cannot restart agr before the question is asked.
    let answer: unknown;
    suite.child.kill('SIGSTOP');
    try {
      process.kill(pid, 'SIGKILL');
      // Wait for exactly what the daemon will meet: agr's socket refusing connections.
      await waitFor(
        () =>
          connect(path.join(dir, 'run', 'agr.sock')).then(
            (socket) => (socket.destroy(), false),
            (err: { code?: string }) => err.code === 'UPSTREAM_UNAVAILABLE',
          ),
        'agr to stop accepting',
      );
      answer = await request(daemon, { message: 'still there?' }).catch((e: unknown) => e);
    } finally {
      suite.child.kill('SIGCONT');
      // Whatever happened above, the tests after this one need agr back.
      await waitFor(
        async () =>
          ping(path.join(dir, 'run', 'agr.sock')).then(
            () => true,
            () => false,
          ),
        'agr to be back',
        30_000,
      );
    }
    expect(answer).toMatchObject({ content: 'plain answer', via: 'rtr' });
    expect(await request(daemon, { message: 'and now?' })).toMatchObject({ content: 'plain answer', via: 'agr' });
  });
});

describe('the CLI', () => {
  it('asks one question and prints the answer', async () => {
    script({ rules: [{ reply: 'CLI answer.' }] });
    const result = await runCli(['ask', '--config', file, 'what', 'is', 'up?']);
    expect(result).toMatchObject({ code: 0, stdout: 'CLI answer.\n' });
    expect(lastUser(0)).toBe('what is up?');
  });

  it('streams with -s, uses a channel with -ch, and shows tool activity on stderr only', async () => {
    script({
      rules: [
        { role: 'user', reply: 'Checking.\n<tool_call>{"name":"execute_bash","arguments":{"code":"echo tool-out"}}</tool_call>\n' },
        { role: 'assistant', reply: 'Done checking.' },
      ],
    });
    const result = await runCli(['ask', '-c', file, '-s', '-ch', 'cli-chan', 'check it']);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('Checking.\n\nDone checking.\n');
    expect(result.stderr).toContain('[tool] execute_bash: echo tool-out');
    expect(result.stderr).toContain('[tool] ok: tool-out');
    const history = await request(mem, { type: 'get_history', channel_id: 'cli-chan' });
    expect(history.messages).toHaveLength(2);
  });

  it('reads the message from stdin and prints frames as JSON lines with --json', async () => {
    script({ rules: [{ reply: 'from stdin', chunkSize: 100 }] });
    const result = await runCli(['ask', '--config', file, '--json', '--stream'], { input: 'piped question\n' });
    expect(result.code).toBe(0);
    expect(
      result.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Frame),
    ).toEqual([{ type: 'chunk', delta: 'from stdin' }, expect.objectContaining({ type: 'done', full_text: 'from stdin' })]);
    expect(lastUser(0)).toBe('piped question');
  });

  it('exits non-zero with the error on stderr', async () => {
    script({ rules: [{ status: 400, errorMessage: 'model not found' }] });
    const result = await runCli(['ask', '--config', file, 'hi']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('zino: the LLM API answered 400: model not found\n');
    expect(result.stdout).toBe('');
  });

  it('says on stderr, in --json and in the exit status when an answer was cut short (issue 15, point 6)', async () => {
    script({ rules: [{ reply: 'Again.<tool_call>{"name":"execute_bash","arguments":{"code":"echo more"}}</tool_call>' }] });
    const result = await runCli(['ask', '--config', file, 'loop forever']);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain(
      'zino: the answer was cut short: the model was still calling tools when the iteration limit (5) was reached ([agr] max_iterations).\n',
    );
    const json = await runCli(['ask', '--config', file, '--json', 'loop forever']);
    expect(json.code).toBe(3);
    expect(JSON.parse(json.stdout.trim().split('\n').at(-1) ?? 'null')).toMatchObject({ type: 'response', iterations: 5, degraded: ['max_iterations'] });
  });

  it('cancels cleanly on Ctrl-C', async () => {
    script({ rules: [{ reply: 'never finishing', chunkSize: 1, hangAfterChunks: 3 }] });
    const result = await runCli(['ask', '--config', file, '-s', 'wait'], { signalAfter: { text: 'nev', signal: 'SIGINT' } });
    expect(result.code).toBe(130);
    expect(result.stderr).toContain('zino: cancelled');
    await llm.mock.waitForAborts(1, 30_000);
  });

  it('reports every service with zino status', async () => {
    const result = await runCli(['status', '--config', file]);
    expect(result.code).toBe(0);
    for (const name of ['daemon', 'rtr', 'agr', 'sys', 'exc', 'mem', 'ctx']) expect(result.stdout).toMatch(new RegExp(`^  ${name} +up `, 'm'));
    expect(result.stdout).toContain(`LLM:     ${llm.mock.baseUrl}, model e2e-model; reachable, serves mock-model (WARNING: not e2e-model)`);
    expect(result.stdout).toContain('key:     [api] key');
  });

  it('administers memory with zino mem', async () => {
    expect((await runCli(['mem', 'remember', '--config', file, '--tag', 'servers', 'The', 'backup', 'server', 'is', 'called', 'vault'])).stdout).toMatch(
      /^remembered as #\d+\n$/,
    );
    const search = await runCli(['mem', 'search', '--config', file, 'backup', 'server']);
    expect(search.stdout).toMatch(/^\d\.\d{4} {2}#\d+ {2}The backup server is called vault$/m);
    await runCli(['mem', 'soft', '--config', file, 'User', 'likes', 'short', 'answers']);
    expect((await runCli(['mem', 'soft', '--config', file])).stdout).toBe('User likes short answers\n');
    const prompt = await request(path.join(dir, 'run', 'sys.sock'), { type: 'get' });
    expect(prompt.content).toContain('User likes short answers');
    script({ rules: [{ reply: 'noted' }] });
    await runCli(['ask', '--config', file, '--channel', 'admin', 'remember this']);
    expect((await runCli(['mem', 'history', '--config', file, 'admin'])).stdout).toBe('user: remember this\n\nassistant: noted\n');
    await runCli(['mem', 'clear', '--config', file, 'admin']);
    expect((await runCli(['mem', 'history', '--config', file, 'admin'])).stderr).toContain('(no history on "admin")');
  });

  it('forgets a hard memory with zino mem forget, and prints no blank line for an empty soft memory (issue 15, point 10)', async () => {
    const stored = await runCli(['mem', 'remember', '--config', file, 'The', 'alarm', 'code', 'is', '4711']);
    const id = /^remembered as #(\d+)\n$/.exec(stored.stdout)?.[1];
    expect(id).toBeDefined();
    expect((await runCli(['mem', 'search', '--config', file, 'alarm', 'code'])).stdout).toContain(`#${id}  The alarm code is 4711`);
    expect(await runCli(['mem', 'forget', '--config', file, `#${id}`])).toMatchObject({ code: 0, stderr: `hard memory #${id} forgotten\n` });
    expect(await runCli(['mem', 'search', '--config', file, 'alarm', 'code'])).toMatchObject({ code: 0, stdout: '', stderr: '(nothing found)\n' });
    expect(await runCli(['mem', 'forget', '--config', file, String(id)])).toMatchObject({
      code: 1,
      stderr: `zino: no hard memory has id ${id} (never stored, or already forgotten)\n`,
    });
    expect((await runCli(['mem', 'forget', '--config', file, 'seven'])).code).toBe(2);
    await runCli(['mem', 'soft', '--config', file, '--clear']);
    expect(await runCli(['mem', 'soft', '--config', file])).toMatchObject({ code: 0, stdout: '', stderr: '(the soft memory is empty)\n' });
  });
});

describe('zino chat', () => {
  it('answers each line on its channel and clears it with /clear', async () => {
    script({
      rules: [
        { match: 'first line', reply: 'reply one' },
        { match: 'second line', reply: 'reply two' },
      ],
    });
    const result = await runCli(['chat', '--config', file, '--channel', 'chat-e2e'], { input: 'first line\nsecond line\n/clear\n/exit\n' });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('reply one\nreply two\n');
    expect(result.stderr).toContain('(history of "chat-e2e" cleared)');
    // The second line was sent with the first exchange as history.
    expect((llm.mock.stats.bodies[1]?.messages as Frame[]).slice(-3, -1)).toEqual([
      { role: 'user', content: 'first line' },
      { role: 'assistant', content: 'reply one' },
    ]);
    expect((await request(mem, { type: 'get_history', channel_id: 'chat-e2e' })).messages).toEqual([]);
  });
});

describe('a zino up killed with SIGKILL', () => {
  it('leaves no service running: each sees its stdin close and stops', async () => {
    const { dir: other, cleanup: done } = tempDir('zkill');
    try {
      const { file: config } = writeTestConfig(other, { api: { base_url: 'demo' } });
      const second = await startSuite(config);
      expect(processesMatching(`--config ${config}`)).toHaveLength(7 + 1);
      await second.stop('SIGKILL');
      await waitFor(() => processesMatching(`--config ${config}`).length === 0, 'every service to stop', 30_000);
      expect(readdirSync(path.join(other, 'run'))).toEqual([]);
    } finally {
      done();
    }
  });
});

describe('the CLI without a daemon', () => {
  it('says how to start it and exits non-zero', async () => {
    const { dir: empty, cleanup: done } = tempDir('znod');
    try {
      const { file: lonely } = writeTestConfig(empty);
      const result = await runCli(['ask', '--config', lonely, 'hello']);
      expect(result.code).toBe(69);
      expect(result.stderr).toMatch(/^zino: cannot reach the ZINO daemon at .*daemon\.sock \(ENOENT\)\.\nStart the suite with "zino up"/);
      expect(existsSync(path.join(empty, 'run'))).toBe(false);
    } finally {
      done();
    }
  });
});
