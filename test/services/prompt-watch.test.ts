/**
 * sys's `watch` stream and the daemon keeping the system prompt through it (issue 18:
 * one connection fewer per request), over real sockets: sys answers a change only after
 * its watchers have the new prompt; the daemon asks sys no more while the stream is
 * open, asks again (`get`) as soon as it ends, and keeps asking a sys without `watch`.
 */
import net from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ZinoError, request, serve, stream, type Frame, type OutgoingFrame } from '../../src/runtime/index.js';
import { startService, startServices, writeTestConfig, type ServiceGroup } from '../../src/testing/suite.js';
import { writeFileSync } from 'node:fs';
import { loadConfig } from '../../src/runtime/config/load.js';
import { nextTry, PromptWatch, type TryOutcome } from '../../src/services/daemon/prompt-watch.js';
import { encodeFrame, FrameDecoder } from '../../src/runtime/index.js';
import { mockOverrides, useMockLlm } from '../helpers/mock.js';
import { captureLogger, tempDir, waitFor } from '../helpers/util.js';

const llm = useMockLlm();
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function services(names: Parameters<typeof startServices>[0], dir: string): Promise<ServiceGroup> {
  const group = await startServices(names, dir, mockOverrides(llm.mock));
  cleanups.push(async () => {
    for (const exit of Object.values(await group.stop())) expect(exit).toEqual({ code: 0, signal: null });
  });
  return group;
}

/** Reads a watch stream in the background: every frame, in order, as it arrives. */
function watch(socket: string): { frames: Frame[]; ended: Promise<void> } {
  const frames: Frame[] = [];
  const ended = (async () => {
    for await (const frame of stream(socket, { type: 'watch' })) frames.push(frame);
  })();
  return { frames, ended };
}

/** The system message the LLM got in its last call. */
function lastSystemPrompt(): string | undefined {
  const messages = llm.mock.stats.bodies.at(-1)?.messages as { role: string; content: string }[] | undefined;
  return messages?.find((m) => m.role === 'system')?.content;
}

describe('sys watch', () => {
  it('sends the prompt at once, then every change before the change is answered, and ends when sys stops', async () => {
    const { dir, cleanup } = tempDir('zwatch');
    cleanups.push(cleanup);
    const group = await startServices(['sys'], dir, mockOverrides(llm.mock, { sys: { soft_memory: 'first' } }));
    const socket = group.get('sys').socket;
    const watched = watch(socket);
    await waitFor(() => watched.frames.length === 1, 'the first frame');
    expect(watched.frames[0]).toMatchObject({ type: 'system_prompt', content: expect.stringContaining('first') });

    // What the daemon relies on: a request that reaches it on a new connection, sent after the change was
    // answered, finds the new prompt already read from the stream. The test plays the daemon with a server
    // of its own, and looks at the stream when that request arrives.
    const seen: string[] = [];
    const daemon = net.createServer((conn) => {
      seen.push(String(watched.frames.at(-1)?.content));
      conn.end();
    });
    const daemonPath = path.join(dir, 'fake-daemon.sock');
    await new Promise<void>((resolve) => daemon.listen(daemonPath, resolve));
    cleanups.push(() => new Promise<void>((resolve) => daemon.close(() => resolve())));
    for (let i = 0; i < 50; i++) {
      const reply = await request(socket, { type: 'set_soft_memory', content: `note ${i}` });
      expect(reply.content).toContain(`note ${i}`);
      await new Promise<void>((resolve) =>
        net
          .connect(daemonPath)
          .on('close', () => resolve())
          .resume(),
      );
      expect(seen.at(-1)).toBe(reply.content);
    }
    expect(watched.frames).toHaveLength(51);
    // A watcher that never reads, and prompts too large for its socket's buffer: a change waits for it (up to a bound),
    // so two changes sent at once overlap. Each is still answered with its own prompt, and neither hangs.
    const stuck = net.connect(socket);
    stuck.write(encodeFrame({ type: 'watch' }));
    stuck.pause();
    cleanups.push(() => void stuck.destroy());
    const big = (tag: string): string => `${tag} ${'x'.repeat(400 * 1024)}`;
    await request(socket, { type: 'set_soft_memory', content: big('fill') });
    const [x, y] = await Promise.all([
      request(socket, { type: 'set_soft_memory', content: big('change X') }),
      request(socket, { type: 'set_soft_memory', content: big('change Y') }),
    ]);
    expect(x.content).toContain('change X');
    expect(y.content).toContain('change Y');
    stuck.destroy();
    const final = await request(socket, { type: 'get' });
    await waitFor(() => watched.frames.at(-1)?.content === final.content, 'the last change on the stream');
    // Unchanged by a reload: nothing new is sent.
    const before = watched.frames.length;
    await request(socket, { type: 'reload' });
    expect(watched.frames).toHaveLength(before);

    // Stopping does not wait out the shutdown grace for the open stream: it ends with done.
    expect(await group.stop()).toEqual({ sys: { code: 0, signal: null } });
    await watched.ended;
    expect(watched.frames.at(-1)).toEqual({ type: 'done' });
    expect(group.get('sys').logs.map((l) => l.msg)).not.toContain('requests still running after the shutdown grace; cancelling them');
  });
});

describe('sys watch, a change seen through get', () => {
  it('has the watchers take a prompt before get shows it, while the rest of a reload still waits on mem', async () => {
    const { dir, cleanup } = tempDir('zwatchg');
    cleanups.push(cleanup);
    // A mem that takes connections and never answers: a reload renders the new template, then waits on mem's soft memory.
    const memSocket = path.join(dir, 'silent-mem.sock');
    const held: net.Socket[] = [];
    const silent = net.createServer((conn) => void held.push(conn));
    await new Promise<void>((resolve) => silent.listen(memSocket, resolve));
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          for (const conn of held) conn.destroy();
          silent.close(() => resolve());
        }),
    );
    const template = path.join(dir, 'SYSTEM.md');
    writeFileSync(template, 'first template');
    const { file } = writeTestConfig(dir, { sys: { template }, mem: { socket: memSocket } });
    const sys = await startService('sys', file);
    cleanups.push(async () => void (await sys.stop()));
    const watched = watch(sys.socket);
    await waitFor(() => watched.frames.length === 1, 'the first frame');

    writeFileSync(template, 'second template');
    sys.child.kill('SIGHUP');
    await waitFor(async () => String((await request(sys.socket, { type: 'get' })).content).includes('second template'), 'get to show it');
    // get showed it: the stream has it already (read before any later connection, as the daemon would).
    expect(String(watched.frames.at(-1)?.content)).toContain('second template');
  });
});

describe('the daemon keeping the prompt', () => {
  it('stops asking sys while the watch stream is open, and asks again as soon as it ends', async () => {
    llm.script({ rules: [{ reply: 'ok' }] });
    const { dir, cleanup } = tempDir('zwatchd');
    cleanups.push(cleanup);
    const { log } = captureLogger();
    let gets = 0;
    let watches = 0;
    let endWatch!: () => void;
    const watchEnded = new Promise<void>((resolve) => (endWatch = resolve));
    // A sys whose `get` and `watch` tell apart where the daemon's prompt came from; it takes one watch only.
    const fakeSys = await serve(path.join(dir, 'run', 'sys.sock'), {
      log,
      handlers: {
        get: () => (gets++, { type: 'system_prompt', content: 'FROM-GET' }),
        watch: async (_req, ctx): Promise<OutgoingFrame> => {
          if (++watches > 1) throw new ZinoError('UNKNOWN_TYPE', 'no second watch here');
          await ctx.send({ type: 'system_prompt', content: 'FROM-WATCH' });
          await watchEnded;
          return { type: 'done' };
        },
      },
    });
    cleanups.push(() => fakeSys.close());
    const group = await services(['rtr', 'daemon'], dir);
    const daemon = group.get('daemon').socket;

    await waitFor(async () => (await request(daemon, { message: 'hi' }), lastSystemPrompt() === 'FROM-WATCH'), 'the daemon to use the watched prompt');
    const before = gets;
    for (let i = 0; i < 3; i++) {
      await request(daemon, { message: 'hi' });
      expect(lastSystemPrompt()).toBe('FROM-WATCH');
    }
    expect(gets).toBe(before);

    // The stream ends; once the daemon has tried again and been refused, it asks per request.
    endWatch();
    await waitFor(() => watches === 2, 'the daemon to try watching again');
    await request(daemon, { message: 'hi' });
    expect(lastSystemPrompt()).toBe('FROM-GET');
    expect(gets).toBe(before + 1);
  });

  it('asks a sys that does not know watch on every request', async () => {
    llm.script({ rules: [{ reply: 'ok' }] });
    const { dir, cleanup } = tempDir('zwatchn');
    cleanups.push(cleanup);
    const { log } = captureLogger();
    let gets = 0;
    const fakeSys = await serve(path.join(dir, 'run', 'sys.sock'), { log, handlers: { get: () => (gets++, { type: 'system_prompt', content: 'ONLY-GET' }) } });
    cleanups.push(() => fakeSys.close());
    const group = await services(['rtr', 'daemon'], dir);
    for (let i = 1; i <= 3; i++) {
      await request(group.get('daemon').socket, { message: 'hi' });
      expect(lastSystemPrompt()).toBe('ONLY-GET');
      expect(gets).toBe(i);
    }
  });

  it('answers with the soft memory just set, every time (real sys)', async () => {
    llm.script({ rules: [{ reply: 'ok' }] });
    const { dir, cleanup } = tempDir('zwatchr');
    cleanups.push(cleanup);
    const group = await services(['sys', 'rtr', 'daemon'], dir);
    for (let i = 0; i < 30; i++) {
      await request(group.get('sys').socket, { type: 'set_soft_memory', content: `fact number ${i}` });
      await request(group.get('daemon').socket, { message: 'hi' });
      expect(lastSystemPrompt()).toContain(`fact number ${i}`);
    }
  });
});

/** A sys that serves `watch` only, counting the streams it opened and those whose client went; each stays open until its client goes. */
async function watchOnlySys(socket: string, log: ReturnType<typeof captureLogger>['log']): Promise<{ watches: () => number; gone: () => number }> {
  let watches = 0;
  let gone = 0;
  const fakeSys = await serve(socket, {
    log,
    handlers: {
      watch: async (_req, ctx): Promise<OutgoingFrame> => {
        watches++;
        await ctx.send({ type: 'system_prompt', content: 'FROM-WATCH' });
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
        gone++;
        return { type: 'done' };
      },
    },
  });
  cleanups.push(() => fakeSys.close());
  return { watches: () => watches, gone: () => gone };
}

/**
 * A PromptWatch started, as under `zino up`, before any sys listens on its socket, once it has
 * failed `tries` times; `socket` is where sys is to come up.
 */
async function watchBeforeSys(
  waits: ConstructorParameters<typeof PromptWatch>[2],
  tries: number,
): Promise<{ watch: PromptWatch; socket: string } & ReturnType<typeof captureLogger>> {
  const { dir, cleanup } = tempDir('zwatchb');
  cleanups.push(cleanup);
  const socket = path.join(dir, 'sys.sock');
  const { file } = writeTestConfig(dir, { sys: { socket } });
  const { log, lines } = captureLogger('daemon', 'debug');
  const watch = new PromptWatch(loadConfig({ path: file, env: {} }).config, log, waits);
  cleanups.push(() => watch.close());
  await waitFor(() => lines.filter((l) => l.msg === 'no watch on sys; asking it per request').length >= tries, `${tries} tries without sys`);
  return { watch, socket, log, lines };
}

describe('PromptWatch started before sys', () => {
  it('tries again sooner while sys is not there yet', async () => {
    // A minute between tries at most, but the first ones come after 5, 10, 20 ... ms.
    const { watch, socket, log } = await watchBeforeSys({ firstRetryMs: 5, retryMs: 60_000, unsupportedRetryMs: 60_000 }, 3);
    // sys comes up: the next try opens the stream, with no request asking (watch.current is not read before).
    const sys = await watchOnlySys(socket, log);
    await waitFor(() => sys.watches() === 1, 'the stream to open');
    await waitFor(() => watch.current === 'FROM-WATCH', 'the prompt');
    watch.close(); // before sys stops: its stop would wait out the open stream's grace
  });

  it('opens the stream when a request finds none, not only when its wait is over', async () => {
    // The next try is a minute away.
    const { watch, socket, log } = await watchBeforeSys({ firstRetryMs: 60_000, retryMs: 60_000, unsupportedRetryMs: 60_000 }, 1);
    const sys = await watchOnlySys(socket, log);
    // sys is up now. The first request finds no stream (it asks sys itself) and has it opened.
    expect(watch.current).toBeUndefined();
    await waitFor(() => watch.current === 'FROM-WATCH', 'the stream to open');
    expect(sys.watches()).toBe(1);
    watch.close(); // before sys stops: its stop would wait out the open stream's grace
  });

  it('closed while its stream is open, ends the stream without taking that for a failed try', async () => {
    const { watch, socket, log, lines } = await watchBeforeSys({ firstRetryMs: 5, retryMs: 60_000, unsupportedRetryMs: 60_000 }, 1);
    const sys = await watchOnlySys(socket, log);
    await waitFor(() => watch.current === 'FROM-WATCH', 'the stream to open');
    const failed = (): number => lines.filter((l) => l.msg === 'no watch on sys; asking it per request').length;
    const before = failed();
    watch.close();
    expect(watch.current).toBeUndefined();
    // sys sees the stream go only after the daemon's side has ended its loop (a socket event against microtasks).
    await waitFor(() => sys.gone() === 1, 'sys to see the stream end');
    expect(failed()).toBe(before);
    expect(sys.watches()).toBe(1);
  });
});

/**
 * A sys written by hand on a raw socket: each connection gets `answer(n)` (n counts the
 * connections from 0) once its first frame is in; `seen` lists each connection's first
 * frame type, in the order accepted. Returns the PromptWatch (with `waits`) started on it.
 */
async function watchOnRawSys(
  prefix: string,
  answer: (n: number) => object[],
  waits: ConstructorParameters<typeof PromptWatch>[2],
): Promise<{ watch: PromptWatch; socket: string; seen: string[] } & ReturnType<typeof captureLogger>> {
  const { dir, cleanup } = tempDir(prefix);
  cleanups.push(cleanup);
  const socket = path.join(dir, 'sys.sock');
  const seen: string[] = [];
  const raw = net.createServer((conn) => {
    const at = seen.push('') - 1;
    const decoder = new FrameDecoder({ maxFrameBytes: 1 << 20 });
    conn.on('data', (chunk: Buffer) => {
      decoder.push(chunk);
      const frame = decoder.read();
      if (frame === undefined) return;
      seen[at] = String(frame.type);
      conn.end(Buffer.concat(answer(at).map((reply) => encodeFrame(reply))));
    });
  });
  await new Promise<void>((resolve) => raw.listen(socket, resolve));
  cleanups.push(() => new Promise<void>((resolve) => raw.close(() => resolve())));
  const { file } = writeTestConfig(dir, { sys: { socket } });
  const { log, lines } = captureLogger('daemon', 'debug');
  const watch = new PromptWatch(loadConfig({ path: file, env: {} }).config, log, waits);
  cleanups.push(() => watch.close());
  return { watch, socket, seen, log, lines };
}

describe('PromptWatch against a sys that refuses watch', () => {
  it('tells a contract-only refusal (no code, or UNKNOWN_TYPE) from a passing one, and keeps nothing', async () => {
    // A raw sys: its refusals as a contract-only one would write them, or a ZINO one when overloaded.
    const refusals = [
      { type: 'error', code: 'OVERLOADED', message: 'full' },
      { type: 'error', message: 'unknown request type' },
    ];
    // A short wait after a passing refusal, a long one after a contract-only one: the second attempt comes, a third does not need to.
    const { watch, lines } = await watchOnRawSys('zwatchr', (n) => [refusals[n] ?? { type: 'error', code: 'UNKNOWN_TYPE', message: 'no' }], {
      firstRetryMs: 5,
      retryMs: 5,
      unsupportedRetryMs: 60_000,
    });
    await waitFor(() => lines.filter((l) => l.msg === 'sys refused watch; asking it per request').length === 2, 'two refusals');
    expect(lines.filter((l) => l.msg === 'sys refused watch; asking it per request').map((l) => [l.code, l.unsupported])).toEqual([
      ['OVERLOADED', false],
      [undefined, true],
    ]);
    expect(watch.current).toBeUndefined();
  });

  it.each([
    ['refuses it as a busy one does (OVERLOADED)', [{ type: 'error', code: 'OVERLOADED', message: 'full' }]],
    ['ends the stream as soon as it sent the prompt', [{ type: 'system_prompt', content: 'BRIEF' }, { type: 'done' }]],
  ])('leaves a sys that is there but %s alone until the wait is over, however many requests find no stream', async (_what, replies) => {
    const { watch, socket, seen, lines } = await watchOnRawSys('zwatchl', () => replies, { firstRetryMs: 60_000, retryMs: 60_000, unsupportedRetryMs: 60_000 });
    // Logged as the loop enters its wait, in the same turn.
    const waiting = await waitFor(() => lines.find((l) => l.msg === 'watch on sys: next try after a wait'), 'the first try to end');
    expect(waiting).toMatchObject({ waitMs: 60_000, wakeable: false });
    for (let i = 0; i < 5; i++) expect(watch.current).toBeUndefined();
    // A probe connects after: a try that any of those requests set off would have connected before it.
    await request(socket, { type: 'ping' }).catch(() => undefined);
    expect(seen).toEqual(['watch', 'ping']);
  });
});

describe('nextTry (the waits between tries at the stream)', () => {
  const waits = { firstRetryMs: 25, retryMs: 1000, unsupportedRetryMs: 60_000 };
  const absent: TryOutcome = { absent: true, unsupported: false, lastedMs: undefined };
  /** The waits after `n` tries in a row with `outcome`, from a first try. */
  function waitsAfter(outcome: TryOutcome, n: number): number[] {
    const out: number[] = [];
    let misses = 0;
    for (let i = 0; i < n; i++) {
      const next = nextTry(outcome, misses, waits);
      out.push(next.waitMs);
      misses = next.misses;
    }
    return out;
  }

  it('doubles the wait from the first to the longest while nothing listens, and lets a request cut it short', () => {
    expect(waitsAfter(absent, 8)).toEqual([25, 50, 100, 200, 400, 800, 1000, 1000]);
    expect(nextTry(absent, 3, waits).wakeable).toBe(true);
    expect(nextTry(absent, 1e6, waits).waitMs).toBe(1000);
  });

  it('does not let a request cut short the wait after a sys that is there refused or ended the stream', () => {
    const refused: TryOutcome = { absent: false, unsupported: false, lastedMs: undefined };
    expect(waitsAfter(refused, 3)).toEqual([25, 50, 100]);
    expect(nextTry(refused, 0, waits).wakeable).toBe(false);
    expect(nextTry({ ...refused, lastedMs: 2 }, 0, waits).wakeable).toBe(false);
  });

  it('starts again from the first wait only after a stream that lasted', () => {
    const brief: TryOutcome = { absent: false, unsupported: false, lastedMs: 999 };
    const lasted: TryOutcome = { absent: false, unsupported: false, lastedMs: 1000 };
    expect(waitsAfter(brief, 4)).toEqual([25, 50, 100, 200]);
    expect(nextTry(brief, 4, waits)).toEqual({ waitMs: 400, wakeable: false, misses: 5 });
    expect(nextTry(lasted, 4, waits)).toEqual({ waitMs: 25, wakeable: false, misses: 1 });
  });

  it('waits the longest, not to be cut short, after a sys that does not know watch', () => {
    expect(nextTry({ absent: false, unsupported: true, lastedMs: undefined }, 0, waits)).toEqual({ waitMs: 60_000, wakeable: false, misses: 1 });
  });
});
