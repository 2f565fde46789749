/**
 * Our callers with counterpart services written from the contract alone: each time
 * one of rtr, mem, sys, agr, ctx, exc and the daemon is a Python process from
 * test/fixtures/contract-services.py (standard library only, written from the service
 * contract without our sources), listening at that service's socket, and the six
 * others are ours (`zino serve NAME`). The daemon must still answer end to end,
 * one-shot and streaming; ctx must build its context from the Python mem; the daemon
 * must store the exchange there, use the Python sys's prompt and the Python ctx's
 * context, and answer through the Python agr; our agr must run tool calls through
 * the Python exc. Our callers' opt-in extras (sys `watch`, mem `get_context`, exc
 * `list_tools`, `request_id`, error codes) must fall back to the contract's messages.
 *
 * Last, the daemon itself is the Python one, with all six others ours: `zino ask`, our
 * client library (`ZinoClient`) and our HTTP front end (with the `openai` SDK) must get
 * their answers through it, and the exchanges it stores must be in our mem.
 *
 * The Python services log every request they receive (`--log`): the tests also check
 * that what our callers sent is what the contract asks for.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ZinoClient } from '../../src/client/index.js';
import { SERVICE_NAMES, ping, request, type Frame, type ServiceName } from '../../src/runtime/index.js';
import { startHttpFrontEnd, type StartedHttp } from '../../src/testing/http.js';
import { CLI_PATH, PACKAGE_ROOT } from '../../src/testing/paths.js';
import { startService, writeTestConfig, type ConfigOverrides, type StartedService } from '../../src/testing/suite.js';
import { runCli } from '../helpers/cli.js';
import { collectFrames, requestOrError } from '../helpers/frames.js';
import { mockOverrides, useMockLlm } from '../helpers/mock.js';
import { filesystem } from '../helpers/mcp.js';
import { tempDir, waitFor } from '../helpers/util.js';

const llm = useMockLlm();
beforeEach(() => llm.script({}));

const FIXTURE = path.join(PACKAGE_ROOT, 'test', 'fixtures', 'contract-services.py');
type Replaced = 'daemon' | 'rtr' | 'mem' | 'sys' | 'agr' | 'ctx' | 'exc';

/** A running Python contract service. */
interface ContractService {
  readonly socket: string;
  /** Every request it received so far, in arrival order. */
  requests(): Frame[];
  /** The requests of one type. */
  requestsOf(type: string): Frame[];
  stop(): Promise<void>;
}

/** Starts `contract-services.py SERVICE` on `socket` and waits until it answers ping. */
async function startContract(service: Replaced, socket: string, logFile: string, args: string[] = []): Promise<ContractService> {
  const child: ChildProcess = spawn('python3', [FIXTURE, service, '--socket', socket, '--log', logFile, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  let gone = false;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      gone = true;
      resolve();
    });
    child.once('error', (err) => {
      stderr += String(err);
      gone = true;
      resolve();
    });
  });
  // SIGTERM, then SIGKILL if it has not gone within 10 s (asyncio's server may wait on a caller's open connection).
  const stop = async (): Promise<void> => {
    if (gone) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    await waitFor(async () => {
      if (gone) throw new Error(`the contract ${service} exited before it answered ping:\n${stderr}`);
      return ping(socket, { timeoutMs: 1000 }).then(
        () => true,
        () => false,
      );
    }, `the contract ${service} to answer ping`);
  } catch (err) {
    await stop();
    throw err;
  }
  // Whole lines only: a line still being written has no newline yet.
  const requests = (): Frame[] =>
    existsSync(logFile)
      ? readFileSync(logFile, 'utf8')
          .split('\n')
          .slice(0, -1)
          .filter((l) => l.trim() !== '')
          .map((l) => (JSON.parse(l) as { request: Frame }).request)
      : [];
  return { socket, requests, requestsOf: (type) => requests().filter((r) => r.type === type), stop };
}

/** Our six services and one contract service in a temp dir. */
interface Mixed {
  dir: string;
  file: string;
  socket(name: ServiceName): string;
  ours: Partial<Record<ServiceName, StartedService>>;
  contract: ContractService;
  /** Replaces the contract service with a new one started with `args` (same socket, fresh request log). */
  restartContract(args: string[]): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts the contract `replaced` (first: ours may ask it at start), `seed` on it, then
 * our other six services on the same config, each awaited by ping.
 */
async function startMixed(
  replaced: Replaced,
  options: {
    args?: (dir: string, socket: (name: ServiceName) => string) => string[];
    seed?: (socket: string) => Promise<void>;
    overrides?: ConfigOverrides;
    /** Our services' log level (their logs are read by a test). @default warn */
    logLevel?: string;
  },
): Promise<Mixed> {
  const { dir, cleanup } = tempDir('zpy');
  const { file, config } = writeTestConfig(dir, mockOverrides(llm.mock, options.overrides));
  mkdirSync(path.join(dir, 'run'), { recursive: true });
  const socket = (name: ServiceName): string => config[name].socket;
  let logs = 0;
  const logFile = (): string => path.join(dir, `${replaced}-requests-${++logs}.jsonl`);
  let contract: ContractService;
  try {
    contract = await startContract(replaced, socket(replaced), logFile(), options.args?.(dir, socket) ?? []);
  } catch (err) {
    cleanup();
    throw err;
  }
  const ours: Partial<Record<ServiceName, StartedService>> = {};
  const stopOurs = (): Promise<unknown> => Promise.all(Object.values(ours).map((s) => s.stop()));
  try {
    await options.seed?.(socket(replaced));
    const results = await Promise.allSettled(
      SERVICE_NAMES.filter((n) => n !== replaced).map(async (name) => {
        ours[name] = await startService(name, file, { env: { ZINO_LOG_LEVEL: options.logLevel ?? 'warn' } });
      }),
    );
    const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure) throw failure.reason;
  } catch (err) {
    await stopOurs();
    await contract.stop();
    cleanup();
    throw err;
  }
  const mixed: Mixed = {
    dir,
    file,
    socket,
    ours,
    contract,
    async restartContract(args) {
      await mixed.contract.stop();
      mixed.contract = await startContract(replaced, socket(replaced), logFile(), args);
    },
    async close() {
      await stopOurs();
      await mixed.contract.stop();
      cleanup();
    },
  };
  return mixed;
}

const user = (content: string): Frame => ({ role: 'user', content });
const assistant = (content: string): Frame => ({ role: 'assistant', content });

/** The messages of the mock LLM's request `i`. */
const sent = (i: number): Frame[] => (llm.mock.stats.bodies[i]?.messages ?? []) as Frame[];

/** The text of a streamed answer, and its terminal frame. */
function streamed(frames: Frame[]): { text: string; last: Frame | undefined } {
  const text = frames
    .filter((f) => f.type === 'chunk')
    .map((f) => String(f.delta))
    .join('');
  return { text, last: frames.at(-1) };
}

describe('with a contract-only rtr', () => {
  const CANNED = 'Canned answer from the contract rtr.';
  let mixed: Mixed;
  const daemon = (): string => mixed.socket('daemon');

  beforeAll(async () => {
    mixed = await startMixed('rtr', { args: () => ['--text', CANNED] });
  });
  afterAll(async () => {
    await mixed?.close();
  });

  it('answers a one-shot message through agr with the contract rtr reply, and agr sends infer as the contract says', async () => {
    const reply = await request(daemon(), { message: 'hello there' });
    expect(reply).toMatchObject({ type: 'response', content: CANNED });
    expect(reply.degraded).toBeUndefined();
    const infer = mixed.contract.requestsOf('infer');
    expect(infer).toHaveLength(1);
    // Every field the contract marks required, with the [agent] defaults.
    expect(infer[0]).toMatchObject({ type: 'infer', temperature: 0.7, top_p: 1, stream: false });
    const messages = infer[0]?.messages as Frame[];
    expect(messages[0]).toMatchObject({ role: 'system' });
    expect(String(messages[0]?.content)).toContain('You are ZINO');
    expect(messages.at(-1)).toEqual(user('hello there'));
  });

  it('streams a message: chunks that join to the reply, then done with the full text', async () => {
    const before = mixed.contract.requestsOf('infer').length;
    const frames = await collectFrames(daemon(), { message: 'stream please', stream: true });
    const { text, last } = streamed(frames);
    // How many chunks is not told: our client merges chunks that arrive in one read. rtr was asked to stream.
    expect(text).toBe(CANNED);
    expect(last).toMatchObject({ type: 'done', full_text: CANNED });
    expect(mixed.contract.requestsOf('infer').slice(before)).toEqual([expect.objectContaining({ stream: true })]);
  });

  it('stores the exchange of a channel in mem', async () => {
    await request(daemon(), { message: 'remember this turn', channel_id: 'py-rtr' });
    const history = await request(mixed.socket('mem'), { type: 'get_history', channel_id: 'py-rtr' });
    expect(history.messages).toEqual([user('remember this turn'), assistant(CANNED)]);
  });

  it('zino status shows the contract rtr (its capabilities reply has no type) and exits 0', async () => {
    const out = await runCli(['status', '--json', '--config', mixed.file]);
    expect(out.code, out.stderr).toBe(0);
    const status = JSON.parse(out.stdout) as { rtr?: Frame };
    expect(status.rtr).toEqual({ type: 'capabilities', streaming: true, model: 'contract-model' });
  });

  it('keeps the client streaming when the contract rtr cannot stream (it answers response)', async () => {
    await mixed.restartContract(['--text', CANNED, '--streaming', 'false']);
    const frames = await collectFrames(daemon(), { message: 'stream please', stream: true });
    const { text, last } = streamed(frames);
    expect(text).toBe(CANNED);
    expect(last).toMatchObject({ type: 'done', full_text: CANNED });
    expect(await request(daemon(), { message: 'one shot' })).toMatchObject({ type: 'response', content: CANNED });
  });

  it("passes the contract rtr's error frame (no code) on to the client as an error, one-shot and streaming", async () => {
    await mixed.restartContract(['--error', 'the upstream model is on fire']);
    const reply = await requestOrError(daemon(), { message: 'hello' });
    expect(reply.type).toBe('error');
    expect(String(reply.message)).toContain('the upstream model is on fire');
    const frames = await collectFrames(daemon(), { message: 'hello', stream: true });
    expect(frames.at(-1)?.type).toBe('error');
    expect(String(frames.at(-1)?.message)).toContain('the upstream model is on fire');
    await ping(daemon());
  });

  // Last in this group: it stops our agr.
  it('answers through the contract rtr directly when agr is down, asking its capabilities first when streaming', async () => {
    await mixed.restartContract(['--text', CANNED]);
    await mixed.ours.agr?.stop();
    expect(await request(daemon(), { message: 'no agr' })).toMatchObject({ type: 'response', content: CANNED, degraded: ['tools'] });
    const frames = await collectFrames(daemon(), { message: 'no agr, streaming', stream: true });
    const { text, last } = streamed(frames);
    expect(text).toBe(CANNED);
    expect(last).toMatchObject({ type: 'done', full_text: CANNED });
    const types = mixed.contract
      .requests()
      .map((r) => r.type)
      .filter((t) => t !== 'ping');
    expect(types).toEqual(['infer', 'capabilities', 'infer']);
    expect(mixed.contract.requestsOf('infer').map((r) => r.stream)).toEqual([false, true]);
  });
});

describe('with a contract-only mem', () => {
  const SOFT = 'The user prefers metric units.';
  const BACKUP = [user('Where is the backup disk mounted?'), assistant('The backup disk is mounted at /srv/backup.')];
  let mixed: Mixed;
  const mem = (): string => mixed.socket('mem');

  beforeAll(async () => {
    mixed = await startMixed('mem', {
      // Before our sys starts: it takes the soft memory from mem at start.
      seed: async (socket) => {
        await request(socket, { type: 'set_soft', content: SOFT });
        expect(await request(socket, { type: 'store_hard', messages: BACKUP, tag: 'backup' })).toEqual({ type: 'ok', id: 0 });
      },
    });
  });
  afterAll(async () => {
    await mixed?.close();
  });

  it('ctx builds the context from it: skill examples, then its hard memories, then its history', async () => {
    await request(mem(), { type: 'append_history', channel_id: 'ctx-built', messages: [user('my name is Ada'), assistant('Hello Ada.')] });
    const reply = await request(mixed.socket('ctx'), { type: 'build', channel_id: 'ctx-built', user_message: 'where is the backup disk?' });
    expect(reply.type).toBe('context');
    expect(reply.missing).toBeUndefined();
    const messages = reply.messages as Frame[];
    expect(messages.length).toBeGreaterThan(4);
    expect(messages.slice(-4)).toEqual([...BACKUP, user('my name is Ada'), assistant('Hello Ada.')]);
    // ctx's opt-in get_context was refused (an error without code), then the contract's two messages.
    expect(mixed.contract.requestsOf('get_context').length).toBeGreaterThan(0);
    expect(mixed.contract.requestsOf('search_hard').at(-1)).toMatchObject({ query: 'where is the backup disk?', top_k: 3 });
    expect(mixed.contract.requestsOf('get_history').at(-1)).toMatchObject({ channel_id: 'ctx-built', limit: 50 });
  });

  it('the daemon answers one-shot with its memories and history in the prompt, and stores the exchange in it', async () => {
    await request(mem(), { type: 'append_history', channel_id: 'asked', messages: [user('earlier question'), assistant('Earlier answer.')] });
    llm.script({ rules: [{ reply: 'It is at /srv/backup.' }] });
    const reply = await request(mixed.socket('daemon'), { message: 'where is the backup disk?', channel_id: 'asked' });
    expect(reply).toMatchObject({ type: 'response', content: 'It is at /srv/backup.' });
    expect(reply.degraded).toBeUndefined();
    expect(sent(0).slice(-5)).toEqual([...BACKUP, user('earlier question'), assistant('Earlier answer.'), user('where is the backup disk?')]);
    const history = await request(mem(), { type: 'get_history', channel_id: 'asked' });
    expect(history.messages).toEqual([
      user('earlier question'),
      assistant('Earlier answer.'),
      user('where is the backup disk?'),
      assistant('It is at /srv/backup.'),
    ]);
  });

  it('the daemon streams, and stores the streamed exchange in it', async () => {
    llm.script({ rules: [{ reply: 'Streamed from the mock.', chunkSize: 4 }] });
    const frames = await collectFrames(mixed.socket('daemon'), { message: 'stream this', channel_id: 'streamed', stream: true });
    const { text, last } = streamed(frames);
    expect(text).toBe('Streamed from the mock.');
    expect(last).toMatchObject({ type: 'done', full_text: 'Streamed from the mock.' });
    const history = await request(mem(), { type: 'get_history', channel_id: 'streamed' });
    expect(history.messages).toEqual([user('stream this'), assistant('Streamed from the mock.')]);
  });

  it("our sys takes its soft memory at start, and the daemon's prompt carries it", async () => {
    const prompt = await request(mixed.socket('sys'), { type: 'get' });
    expect(String(prompt.content)).toContain(SOFT);
    await request(mixed.socket('daemon'), { message: 'hello' });
    expect(sent(0)[0]).toMatchObject({ role: 'system' });
    expect(String(sent(0)[0]?.content)).toContain(SOFT);
  });

  it('zino mem history, remember and search work against it', async () => {
    const config = ['--config', mixed.file];
    await request(mem(), { type: 'append_history', channel_id: 'cli', messages: [user('cli question'), assistant('cli answer')] });
    const history = await runCli(['mem', 'history', 'cli', ...config]);
    expect(history.code, history.stderr).toBe(0);
    expect(history.stdout).toBe('user: cli question\n\nassistant: cli answer\n');

    const remember = await runCli(['mem', 'remember', 'the', 'printer', 'is', 'on', 'floor', 'three', ...config]);
    expect(remember.code, remember.stderr).toBe(0);
    expect(remember.stdout).toBe('remembered as #1\n');
    expect(mixed.contract.requestsOf('store_hard').at(-1)).toMatchObject({ messages: [user('the printer is on floor three')] });

    const search = await runCli(['mem', 'search', 'printer', 'floor', ...config]);
    expect(search.code, search.stderr).toBe(0);
    // Score and messages; no "#id": a contract mem's results carry none (ours showed "#undefined").
    expect(search.stdout).toMatch(/^[01]\.\d{4} {2}the printer is on floor three\n$/);
  });

  it("zino mcp's search_memory and remember work against it", async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: [CLI_PATH, 'mcp', '--config', mixed.file], stderr: 'pipe' });
    const client = new Client({ name: 'contract-mem-host', version: '1.0.0' });
    await client.connect(transport);
    try {
      const remembered = await client.callTool({ name: 'remember', arguments: { text: 'the scanner is in room 12' } });
      expect(remembered.isError, JSON.stringify(remembered)).toBeFalsy();
      expect(textOf(remembered)).toMatch(/^remembered as #\d+$/);
      const found = await client.callTool({ name: 'search_memory', arguments: { query: 'scanner room', top_k: 1 } });
      expect(found.isError, JSON.stringify(found)).toBeFalsy();
      // Rank, score and messages; no "#id" (ours showed "#undefined").
      expect(textOf(found)).toMatch(/^1\. \[[01]\.\d{4}\] the scanner is in room 12$/);
    } finally {
      await client.close();
    }
  });
});

function textOf(result: Awaited<ReturnType<Client['callTool']>>): string {
  const content = result.content as { type: string; text?: string }[];
  return content.map((c) => c.text ?? '').join('');
}

describe('with a contract-only sys', () => {
  const TEMPLATE = 'Contract sys prompt. Personality: %%PERSONALITY%%. Soft: %%SOFT_MEMORIES%%. Rounds: %%MAX_ITERATIONS%%.';
  let mixed: Mixed;
  const daemon = (): string => mixed.socket('daemon');
  const system = (i: number): Frame | undefined => sent(i)[0];

  beforeAll(async () => {
    mixed = await startMixed('sys', {
      args: (dir) => {
        const template = path.join(dir, 'CONTRACT-SYSTEM.md');
        writeFileSync(template, TEMPLATE);
        return ['--template', template, '--personality', 'terse', '--max-iterations', '4'];
      },
    });
  });
  afterAll(async () => {
    await mixed?.close();
  });

  it("the daemon sends the contract sys's prompt as the system message, one-shot and streaming", async () => {
    llm.script({ rules: [{ reply: 'Fine.' }] });
    expect(await request(daemon(), { message: 'one shot' })).toMatchObject({ type: 'response', content: 'Fine.' });
    const frames = await collectFrames(daemon(), { message: 'streaming', stream: true });
    expect(streamed(frames).text).toBe('Fine.');
    const prompt = 'Contract sys prompt. Personality: terse. Soft: . Rounds: 4.';
    expect(system(0)).toEqual({ role: 'system', content: prompt });
    expect(system(1)).toEqual({ role: 'system', content: prompt });
    expect(sent(1).at(-1)).toEqual(user('streaming'));
  });

  it('the daemon asks it with get on each request once it refused the opt-in watch', async () => {
    expect(mixed.contract.requestsOf('watch').length).toBeGreaterThan(0);
    const gets = mixed.contract.requestsOf('get').length;
    await request(daemon(), { message: 'again' });
    await request(daemon(), { message: 'and again' });
    expect(mixed.contract.requestsOf('get').length).toBe(gets + 2);
  });

  it('zino mem soft stores the soft memory in mem and sets it in the contract sys, whose new prompt the next request uses', async () => {
    const out = await runCli(['mem', 'soft', 'likes', 'green', 'tea', '--config', mixed.file]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stderr).toContain('soft memory updated (stored, and in the system prompt)');
    expect(mixed.contract.requestsOf('set_soft_memory').at(-1)).toMatchObject({ content: 'likes green tea' });
    expect(await request(mixed.socket('mem'), { type: 'get_soft' })).toMatchObject({ content: 'likes green tea' });
    await request(daemon(), { message: 'what do I like?' });
    expect(system(0)).toEqual({ role: 'system', content: 'Contract sys prompt. Personality: terse. Soft: likes green tea. Rounds: 4.' });
  });
});

describe('with a contract-only agr', () => {
  let mixed: Mixed;
  const daemon = (): string => mixed.socket('daemon');

  beforeAll(async () => {
    // It sends the prompt to our rtr (one infer per run): what it was given reaches the mock LLM.
    mixed = await startMixed('agr', { args: (_dir, socket) => ['--rtr', socket('rtr')] });
  });
  afterAll(async () => {
    await mixed?.close();
  });

  /** The contract's run request (lines 126-137): every required field, the [agent] defaults, the assembled prompt. */
  function expectRun(run: Frame | undefined, message: string, stream: boolean): void {
    expect(run).toMatchObject({ type: 'run', temperature: 0.7, top_p: 1, stream });
    const messages = run?.messages as Frame[];
    expect(messages[0]).toMatchObject({ role: 'system' });
    expect(String(messages[0]?.content)).toContain('You are ZINO');
    expect(messages.at(-1)).toEqual(user(message));
    // What agr was given is what reached the LLM.
    expect(sent(0)).toEqual(messages);
  }

  it('the daemon answers one-shot through it (its result frame) and stores the exchange in our mem', async () => {
    llm.script({ rules: [{ reply: 'Answered through the contract agr.' }] });
    const reply = await request(daemon(), { message: 'hello agr', channel_id: 'py-agr' });
    expect(reply).toMatchObject({ type: 'response', content: 'Answered through the contract agr.', iterations: 1 });
    // Through agr, not the direct rtr fallback (that one says degraded: ["tools"]).
    expect(reply.degraded).toBeUndefined();
    const runs = mixed.contract.requestsOf('run');
    expect(runs).toHaveLength(1);
    expectRun(runs[0], 'hello agr', false);
    const history = await request(mixed.socket('mem'), { type: 'get_history', channel_id: 'py-agr' });
    expect(history.messages).toEqual([user('hello agr'), assistant('Answered through the contract agr.')]);
  });

  it('the daemon streams through it: its chunks join to the reply, then done; the exchange is stored', async () => {
    llm.script({ rules: [{ reply: 'Streamed through the contract agr.', chunkSize: 5 }] });
    const before = mixed.contract.requestsOf('run').length;
    const frames = await collectFrames(daemon(), { message: 'stream via agr', channel_id: 'py-agr-s', stream: true });
    const { text, last } = streamed(frames);
    expect(text).toBe('Streamed through the contract agr.');
    expect(last).toMatchObject({ type: 'done', full_text: 'Streamed through the contract agr.' });
    expect(last?.degraded).toBeUndefined();
    const runs = mixed.contract.requestsOf('run').slice(before);
    expect(runs).toHaveLength(1);
    expectRun(runs[0], 'stream via agr', true);
    const history = await request(mixed.socket('mem'), { type: 'get_history', channel_id: 'py-agr-s' });
    expect(history.messages).toEqual([user('stream via agr'), assistant('Streamed through the contract agr.')]);
  });

  it('zino ask prints the answer through it, one-shot and streaming (it sends no events: the CLI needs none)', async () => {
    llm.script({ rules: [{ reply: 'CLI through the contract agr.', chunkSize: 4 }] });
    const before = mixed.contract.requestsOf('run').length;
    const once = await runCli(['ask', '--config', mixed.file, 'cli', 'question']);
    expect(once, once.stderr).toMatchObject({ code: 0, stdout: 'CLI through the contract agr.\n' });
    const streaming = await runCli(['ask', '-s', '--config', mixed.file, 'cli', 'stream']);
    expect(streaming, streaming.stderr).toMatchObject({ code: 0, stdout: 'CLI through the contract agr.\n' });
    expect(
      mixed.contract
        .requestsOf('run')
        .slice(before)
        .map((r) => r.stream),
    ).toEqual([false, true]);
  });

  it('passes its error frame (no code) on to the client as an error, one-shot and streaming, without answering through rtr instead', async () => {
    await mixed.restartContract(['--error', 'the agentic loop fell over']);
    const reply = await requestOrError(daemon(), { message: 'hello', channel_id: 'py-agr-err' });
    expect(reply.type).toBe('error');
    expect(String(reply.message)).toContain('the agentic loop fell over');
    const frames = await collectFrames(daemon(), { message: 'hello', stream: true });
    expect(frames.at(-1)?.type).toBe('error');
    expect(String(frames.at(-1)?.message)).toContain('the agentic loop fell over');
    expect(mixed.contract.requestsOf('run')).toHaveLength(2);
    // agr took the request: the daemon must not run it a second time straight through rtr.
    expect(llm.mock.stats.requests).toBe(0);
    // Nothing is stored for a failed exchange.
    expect((await request(mixed.socket('mem'), { type: 'get_history', channel_id: 'py-agr-err' })).messages).toEqual([]);
    await ping(daemon());
  });
});

describe('with a contract-only ctx', () => {
  const EXAMPLES = [user('Example: list the files here.'), assistant('<tool_call>\n{"name": "execute_bash", "arguments": {"code": "ls"}}\n</tool_call>')];
  const HARD = [user('Which port does the wiki use?'), assistant('The wiki listens on port 8443.')];
  let mixed: Mixed;
  const daemon = (): string => mixed.socket('daemon');
  const mem = (): string => mixed.socket('mem');

  beforeAll(async () => {
    // Its skill examples from a file; hard memories and history from our mem.
    mixed = await startMixed('ctx', {
      args: (dir, socket) => {
        const examples = path.join(dir, 'examples.json');
        writeFileSync(examples, JSON.stringify(EXAMPLES));
        return ['--examples', examples, '--mem', socket('mem')];
      },
    });
    await request(mem(), { type: 'store_hard', messages: HARD, tag: 'wiki' });
  });
  afterAll(async () => {
    await mixed?.close();
  });

  /** The prompt the LLM got for request `i`: our sys's prompt, then the contract ctx's messages, then the user's. */
  function expectPrompt(i: number, context: Frame[], message: string): void {
    const messages = sent(i);
    expect(messages[0]).toMatchObject({ role: 'system' });
    expect(String(messages[0]?.content)).toContain('You are ZINO');
    expect(messages.slice(1)).toEqual([...context, user(message)]);
  }

  it('the daemon builds [system, ...context, user] from its context one-shot, asking build as the contract says', async () => {
    await request(mem(), { type: 'append_history', channel_id: 'py-ctx', messages: [user('earlier'), assistant('Earlier answer.')] });
    llm.script({ rules: [{ reply: 'Port 8443.' }] });
    const reply = await request(daemon(), { message: 'which port does the wiki use?', channel_id: 'py-ctx' });
    expect(reply).toMatchObject({ type: 'response', content: 'Port 8443.' });
    expect(reply.degraded).toBeUndefined();
    expectPrompt(0, [...EXAMPLES, ...HARD, user('earlier'), assistant('Earlier answer.')], 'which port does the wiki use?');
    // Contract lines 391-394: build with user_message, and channel_id when the request has one.
    expect(mixed.contract.requestsOf('build').at(-1)).toMatchObject({ type: 'build', channel_id: 'py-ctx', user_message: 'which port does the wiki use?' });
    // The exchange went to our mem, so the next build has it as history.
    expect((await request(mem(), { type: 'get_history', channel_id: 'py-ctx' })).messages).toEqual([
      user('earlier'),
      assistant('Earlier answer.'),
      user('which port does the wiki use?'),
      assistant('Port 8443.'),
    ]);
  });

  it('the daemon builds the same prompt when streaming, and without a channel asks build without channel_id', async () => {
    await request(mem(), { type: 'append_history', channel_id: 'py-ctx-s', messages: [user('before'), assistant('Before.')] });
    llm.script({ rules: [{ reply: 'Streamed with context.', chunkSize: 3 }] });
    const frames = await collectFrames(daemon(), { message: 'stream with context', channel_id: 'py-ctx-s', stream: true });
    expect(streamed(frames).text).toBe('Streamed with context.');
    expect(frames.at(-1)?.degraded).toBeUndefined();
    expectPrompt(0, [...EXAMPLES, user('before'), assistant('Before.')], 'stream with context');

    await request(daemon(), { message: 'no channel here' });
    expectPrompt(1, EXAMPLES, 'no channel here');
    const build = mixed.contract.requestsOf('build').at(-1);
    expect(build).toMatchObject({ type: 'build', user_message: 'no channel here' });
    expect(build?.channel_id).toBeUndefined();
  });

  // The daemon's `history` (a ZINO extra of its request; the HTTP front end sends a chat's earlier turns there)
  // is handed to ctx as build's `history` (a ZINO extra too). A contract ctx (lines 383-394: channel_id,
  // user_message) ignores it and does not say it took it (`history_taken`, ours does): the daemon adds it.
  it("the daemon's opt-in `history` (the HTTP front end's earlier turns) reaches the prompt", async () => {
    llm.script({ rules: [{ reply: 'Second answer.' }] });
    const reply = await request(daemon(), { message: 'and now?', history: [user('first turn'), assistant('First answer.')] });
    expect(reply).toMatchObject({ type: 'response', content: 'Second answer.' });
    // The daemon sent build the request's history (a ZINO extra), which a contract ctx does not know.
    expect(mixed.contract.requestsOf('build').at(-1)).toMatchObject({ user_message: 'and now?', history: [user('first turn'), assistant('First answer.')] });
    expectPrompt(0, [...EXAMPLES, user('first turn'), assistant('First answer.')], 'and now?');
  });
});

describe('with a contract-only exc', () => {
  const TOOL_CALL = (code: string): string => `Let me look.\n<tool_call>\n${JSON.stringify({ name: 'execute_bash', arguments: { code } })}\n</tool_call>`;
  let mixed: Mixed;
  const daemon = (): string => mixed.socket('daemon');

  beforeAll(async () => {
    // An MCP server configured (never started: our exc is not running): our sys then asks exc for its MCP tools.
    mixed = await startMixed('exc', { overrides: { mcp: { servers: { files: filesystem(PACKAGE_ROOT) } } }, logLevel: 'info' });
  });
  afterAll(async () => {
    await mixed?.close();
  });

  /** The last message of the mock LLM's request `i`. */
  const lastSent = (i: number): string => {
    const content = sent(i).at(-1)?.content;
    return typeof content === 'string' ? content : '';
  };

  it("our agr runs a tool call through it (execute as the contract says), and the output reaches the model's next turn", async () => {
    llm.script({
      rules: [
        { match: 'py-exc-42', reply: 'The answer is 42.' },
        { match: 'PY-EXC-TOOL', reply: TOOL_CALL('echo py-exc-$((6*7))') },
      ],
    });
    const reply = await request(daemon(), { message: 'PY-EXC-TOOL: what is six times seven?' });
    expect(reply).toMatchObject({ type: 'response', iterations: 2 });
    expect(String(reply.content)).toContain('The answer is 42.');
    expect(mixed.contract.requestsOf('execute')).toEqual([expect.objectContaining({ type: 'execute', executor: 'bash', code: 'echo py-exc-$((6*7))' })]);
    // The second turn holds what the contract exc's bash printed, in a tool_response block.
    expect(llm.mock.stats.requests).toBe(2);
    expect(lastSent(1)).toMatch(/<tool_response>\npy-exc-42\n<\/tool_response>/);
  });

  it('streaming, a failing run: its stderr and exit code reach the next turn', async () => {
    llm.script({
      rules: [
        { match: 'py-exc-oops', reply: 'The command failed.' },
        { match: 'PY-EXC-FAIL', reply: TOOL_CALL('echo py-exc-oops >&2; exit 3') },
      ],
    });
    const before = mixed.contract.requestsOf('execute').length;
    const frames = await collectFrames(daemon(), { message: 'PY-EXC-FAIL: try it', stream: true });
    const { text, last } = streamed(frames);
    expect(last).toMatchObject({ type: 'done' });
    expect(text).toContain('The command failed.');
    expect(mixed.contract.requestsOf('execute').slice(before)).toEqual([expect.objectContaining({ executor: 'bash', code: 'echo py-exc-oops >&2; exit 3' })]);
    expect(lastSent(1)).toContain('[stderr]\npy-exc-oops\n[exit code: 3]');
  });

  it('our sys builds its tool list from the tools dir when it refuses list_tools (an error without code)', async () => {
    // Asked at start (an MCP server is configured), refused: the contract exc has no such message. sys takes
    // the refusal as "no MCP tools" rather than an exc not yet up (which it would ask again every second).
    const sys = mixed.ours.sys;
    await waitFor(() => sys?.logs.some((l) => l.msg === 'exc does not know list_tools: no mcp tools in the prompt'), 'sys to take the refusal');
    const asked = mixed.contract.requestsOf('list_tools').length;
    expect(asked).toBeGreaterThan(0);
    const prompt = await request(mixed.socket('sys'), { type: 'reload' });
    expect(prompt.type).toBe('system_prompt');
    const content = String(prompt.content);
    expect(content).toContain('"name":"execute_bash"');
    expect(content).toContain('"name":"execute_python3"');
    expect(content).not.toContain('%%TOOL_LIST%%');
    // It asked again on reload (and was refused again); the daemon's prompt is the one it rendered.
    expect(mixed.contract.requestsOf('list_tools').length).toBeGreaterThan(asked);
    await request(daemon(), { message: 'hello' });
    expect(String(sent(0)[0]?.content)).toBe(content);
  });
});

describe('with a contract-only daemon', () => {
  let mixed: Mixed;
  let http: StartedHttp | undefined;
  const mem = (): string => mixed.socket('mem');

  beforeAll(async () => {
    // It asks our sys, ctx, agr (rtr when agr is down) and mem; our HTTP front end and clients ask it.
    mixed = await startMixed('daemon', {
      args: (_dir, socket) => ['--sys', socket('sys'), '--ctx', socket('ctx'), '--agr', socket('agr'), '--rtr', socket('rtr'), '--mem', socket('mem')],
      overrides: { http: { listen: '127.0.0.1:0' } },
    });
  });
  afterAll(async () => {
    await http?.stop();
    await mixed?.close();
  });

  /** The mock LLM's prompt `i`: our sys's prompt first, the user's message last. */
  function expectPrompt(i: number, message: string): void {
    expect(sent(i)[0]).toMatchObject({ role: 'system' });
    expect(String(sent(i)[0]?.content)).toContain('You are ZINO');
    expect(sent(i).at(-1)).toEqual(user(message));
  }

  /** What the last request the contract daemon received was, as far as the contract reads it. */
  const lastAsked = (): Frame | undefined =>
    mixed.contract
      .requests()
      .filter((r) => r.type !== 'ping')
      .at(-1);

  it('zino ask prints the answer through it, one-shot and streaming', async () => {
    llm.script({ rules: [{ reply: 'CLI through the contract daemon.', chunkSize: 4 }] });
    const once = await runCli(['ask', '--config', mixed.file, 'cli', 'question']);
    expect(once, once.stderr).toMatchObject({ code: 0, stdout: 'CLI through the contract daemon.\n' });
    expect(lastAsked()).toMatchObject({ message: 'cli question', stream: false });
    expectPrompt(0, 'cli question');
    const streaming = await runCli(['ask', '-s', '--config', mixed.file, 'cli', 'stream']);
    expect(streaming, streaming.stderr).toMatchObject({ code: 0, stdout: 'CLI through the contract daemon.\n' });
    expect(lastAsked()).toMatchObject({ message: 'cli stream', stream: true });
    expectPrompt(1, 'cli stream');
  });

  it('our client library asks it one-shot and streaming, on a channel', async () => {
    llm.script({ rules: [{ reply: 'Library through the contract daemon.', chunkSize: 5 }] });
    const zino = new ZinoClient({ configFile: mixed.file });
    const answer = await zino.ask('library question', { channelId: 'py-daemon-lib' });
    expect(answer).toMatchObject({ type: 'response', content: 'Library through the contract daemon.' });
    expect(lastAsked()).toMatchObject({ message: 'library question', channel_id: 'py-daemon-lib', stream: false });
    const frames: Frame[] = [];
    for await (const frame of zino.askStream('library stream', { channelId: 'py-daemon-lib' })) frames.push({ ...frame });
    const { text, last } = streamed(frames);
    expect(text).toBe('Library through the contract daemon.');
    expect(last).toEqual({ type: 'done', full_text: 'Library through the contract daemon.' });
    expect(lastAsked()).toMatchObject({ message: 'library stream', channel_id: 'py-daemon-lib', stream: true });
  });

  it('stores the exchanges of a channel in our mem: mem get_history and zino mem history show them', async () => {
    llm.script({ rules: [{ reply: 'Stored answer.' }] });
    expect(await request(mixed.socket('daemon'), { message: 'keep this', channel_id: 'py-daemon-mem' })).toEqual({
      type: 'response',
      content: 'Stored answer.',
    });
    const frames = await collectFrames(mixed.socket('daemon'), { message: 'and this, streamed', channel_id: 'py-daemon-mem', stream: true });
    expect(frames.at(-1)).toEqual({ type: 'done', full_text: 'Stored answer.' });
    const history = await request(mem(), { type: 'get_history', channel_id: 'py-daemon-mem' });
    expect(history.messages).toEqual([user('keep this'), assistant('Stored answer.'), user('and this, streamed'), assistant('Stored answer.')]);
    // Our ctx gives the stored history back as context on the next request of the channel.
    await request(mixed.socket('daemon'), { message: 'third', channel_id: 'py-daemon-mem' });
    expect(sent(2).slice(-5)).toEqual([user('keep this'), assistant('Stored answer.'), user('and this, streamed'), assistant('Stored answer.'), user('third')]);
    const out = await runCli(['mem', 'history', 'py-daemon-mem', '-n', '2', '--config', mixed.file]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toBe('user: third\n\nassistant: Stored answer.\n');
  });

  it('our HTTP front end answers chat completions through it with the openai SDK, streaming and not', async () => {
    http = await startHttpFrontEnd(mixed.file);
    const openai = new OpenAI({ baseURL: http.baseUrl, apiKey: http.token, maxRetries: 0 });
    llm.script({ rules: [{ reply: 'HTTP through the contract daemon.', chunkSize: 6 }] });
    const completion = await openai.chat.completions.create({ model: 'zino', messages: [{ role: 'user', content: 'http question' }] });
    expect(completion).toMatchObject({
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content: 'HTTP through the contract daemon.' }, finish_reason: 'stop' }],
    });
    expect(lastAsked()).toMatchObject({ message: 'http question' });
    expectPrompt(0, 'http question');
    const stream = await openai.chat.completions.create({ model: 'zino', messages: [{ role: 'user', content: 'http stream' }], stream: true });
    let text = '';
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(text).toBe('HTTP through the contract daemon.');
    expect(finish).toBe('stop');
    expect(lastAsked()).toMatchObject({ message: 'http stream' });
    expectPrompt(1, 'http stream');
  });

  it("zino mcp's ask tool answers through it, on a channel stored in our mem", async () => {
    llm.script({ rules: [{ reply: 'MCP through the contract daemon.', chunkSize: 4 }] });
    const transport = new StdioClientTransport({ command: process.execPath, args: [CLI_PATH, 'mcp', '--config', mixed.file], stderr: 'pipe' });
    const client = new Client({ name: 'contract-daemon-host', version: '1.0.0' });
    await client.connect(transport);
    try {
      const answered = await client.callTool({ name: 'ask', arguments: { message: 'mcp question', channel: 'py-daemon-mcp' } });
      expect(answered.isError, JSON.stringify(answered)).toBeFalsy();
      expect(textOf(answered)).toBe('MCP through the contract daemon.');
    } finally {
      await client.close();
    }
    expect(lastAsked()).toMatchObject({ message: 'mcp question', channel_id: 'py-daemon-mcp', stream: true });
    expect((await request(mem(), { type: 'get_history', channel_id: 'py-daemon-mcp' })).messages).toEqual([
      user('mcp question'),
      assistant('MCP through the contract daemon.'),
    ]);
  });

  it('zino status shows all seven up (it pings each when the daemon refuses `status`, a ZINO extra) and exits 0', async () => {
    const out = await runCli(['status', '--json', '--config', mixed.file]);
    expect(out.code, out.stderr).toBe(0);
    const status = JSON.parse(out.stdout) as { services: Record<string, { reachable: boolean }> };
    for (const name of SERVICE_NAMES) expect(status.services[name], name).toMatchObject({ reachable: true });
    expect(mixed.contract.requestsOf('status').length).toBeGreaterThan(0);
  });

  // /healthz asks the daemon's `status` (a ZINO extra); a contract daemon refuses it with an error frame.
  it("our HTTP front end's /healthz says ok: the daemon answers (it refuses `status`, a ZINO extra), and so does every other service", async () => {
    http ??= await startHttpFrontEnd(mixed.file);
    const res = await fetch(new URL('/healthz', http.baseUrl));
    expect(await res.json()).toEqual({ status: 'ok' });
    expect(res.status).toBe(200);
    expect(mixed.contract.requests().some((r) => r.type === 'status')).toBe(true);
  });

  it("runs the message through our agr: the model's tool call is run by our exc and the next turn answers", async () => {
    const call = JSON.stringify({ name: 'execute_bash', arguments: { code: 'echo py-daemon-$((6*7))' } });
    llm.script({
      rules: [
        { match: 'py-daemon-42', reply: 'The tool said 42.' },
        { match: 'PY-DAEMON-TOOL', reply: `Let me run it.\n<tool_call>\n${call}\n</tool_call>` },
      ],
    });
    const reply = await request(mixed.socket('daemon'), { message: 'PY-DAEMON-TOOL: six times seven?' });
    expect(reply.type).toBe('response');
    expect(String(reply.content)).toContain('The tool said 42.');
    // Two turns: agr's loop ran (rtr straight would have stopped at the tool call).
    expect(llm.mock.stats.requests).toBe(2);
    expect(String(sent(1).at(-1)?.content)).toMatch(/<tool_response>\npy-daemon-42\n<\/tool_response>/);
  });

  it('answers bad input with an error frame', async () => {
    expect(await requestOrError(mixed.socket('daemon'), { channel_id: 'no-message' })).toMatchObject({
      type: 'error',
      message: expect.stringContaining('message'),
    });
    expect(await requestOrError(mixed.socket('daemon'), { message: 42 })).toMatchObject({ type: 'error', message: expect.stringContaining('message') });
    await ping(mixed.socket('daemon'));
  });

  it("passes agr's error on as its error frame (no code): zino ask fails with the message, the client library rejects, nothing is stored", async () => {
    llm.script({ rules: [{ status: 400, errorMessage: 'the model refused the request' }] });
    const cli = await runCli(['ask', '--config', mixed.file, '--channel', 'py-daemon-err', 'doomed']);
    expect(cli.code).not.toBe(0);
    expect(cli.stdout).toBe('');
    expect(cli.stderr).toContain('the model refused the request');
    const zino = new ZinoClient({ configFile: mixed.file });
    await expect(zino.ask('doomed too', { channelId: 'py-daemon-err' })).rejects.toThrow('the model refused the request');
    const stream = async (): Promise<void> => {
      for await (const frame of zino.askStream('doomed streaming', { channelId: 'py-daemon-err' })) expect(frame.type).toBe('chunk');
    };
    await expect(stream()).rejects.toThrow('the model refused the request');
    expect((await request(mem(), { type: 'get_history', channel_id: 'py-daemon-err' })).messages).toEqual([]);
  });

  // Last: it stops our agr.
  it('answers through our rtr when agr is down, one-shot and streaming', async () => {
    await mixed.ours.agr?.stop();
    llm.script({ rules: [{ reply: 'Straight from rtr.', chunkSize: 3 }] });
    expect(await request(mixed.socket('daemon'), { message: 'no agr' })).toEqual({ type: 'response', content: 'Straight from rtr.' });
    expectPrompt(0, 'no agr');
    const frames = await collectFrames(mixed.socket('daemon'), { message: 'no agr, streaming', stream: true });
    expect(streamed(frames)).toEqual({ text: 'Straight from rtr.', last: { type: 'done', full_text: 'Straight from rtr.' } });
  });
});
