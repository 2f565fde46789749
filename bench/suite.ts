/**
 * End-to-end benchmarks of the whole suite under `zino up`, against the mock LLM
 * on loopback (targets of issue 18, as ratios to the hop floor of `bench/hops.ts`
 * measured in the same run):
 *
 * - cold start: `zino up` until all seven services answer ping, median of 5
 *   (target ≤ 600 ms), with the CPU `zino up` and each service had used by then (median of 5),
 *   and beside it its floor: seven bare `node` listeners spawned by a parent `node` as `zino up`
 *   spawns the services (`bench/bare-up.ts`), the two taking turns (`cold_start.floor.*`);
 * - the first requests after the last cold start: the first one's TTFT overhead
 *   (≤ 40 ms, against the warm direct p50) and the first 20's p50 against the warm
 *   p50 (≤ 2×), warm meaning the steady window below;
 * - TTFT: first chunk of a short streamed reply through the daemon vs a direct
 *   call to the same mock with the openai SDK, 300 pairs once the JIT has settled
 *   (after 3,000 requests, as the floor, the two taking turns in blocks of 50 through
 *   the warm-up and the window, so that both are read in the same seconds); the overhead's p50 ≤ 1.3× the 6-hop
 *   floor's p50, its p90 ≤ 1.5× the floor's p90. The mock runs as its own process
 *   (`zino mock-llm`), as a real endpoint would, so both paths cross to it the same
 *   way. The same 300 pairs earlier, after 50 requests (names ending in `.early`),
 *   without targets;
 * - CPU per request summed over every process of the suite (the seven and `zino
 *   up`) from /proc over those 300 requests, per process (≤ 1.3× the 7-hop floor);
 * - the same reply through the OpenAI-compatible endpoint (`zino serve http`);
 * - stream throughput: chunks per second of a 20,000-chunk reply end to end vs
 *   direct (target ≥ 50% of direct);
 * - concurrency: 200 concurrent streaming clients vs a lone request, with a reply
 *   paced like a real model (50 chunks, 5 ms apart) (target: all complete, p99 ≤ 6×);
 * - memory of the seven after the whole run: PSS (≤ 160 MB), RSS and anonymous;
 *   again 10 s later (≤ 160 MB), once each service has compacted its heap after five
 *   seconds without connections, and 60 s later, when V8's memory reducer may
 *   have given back more (it does not always run).
 */
import path from 'node:path';
import OpenAI from 'openai';
import { SERVICE_NAMES, ping, stream } from '../src/runtime/index.js';
import type { MockScript } from '../src/testing/mock-llm/script.js';
import { startHttpFrontEnd } from '../src/testing/http.js';
import { writeTestConfig } from '../src/testing/suite.js';
import { CLI_PATH } from '../src/testing/paths.js';
import { startProcess, type RunningProcess } from '../src/testing/process.js';
import { STEADY_AFTER, SteadyFloor, measureHopFloor, measureHopSplit, type Floors } from './hops.js';
import { percentile, record } from './lib.js';
import { cpuMs, cpuPerRequest, cpuSnapshot, findPids, memoryMB, syscalls } from './proc.js';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';

const TTFT_RUNS = 300;
const TTFT_WARMUP = 30;
/** Requests of the suite, or rounds of the floor, in one turn of the steady window (and of the warm-up before it). */
const BLOCK = 50;
const FIRST_RUNS = 20;
const HTTP_RUNS = 60;
const COLD_STARTS = 5;
const BARE_UP = fileURLToPath(new URL('./bare-up.js', import.meta.url));
const STREAM_CHUNKS = 20_000;
const CONCURRENT = 200;

interface Env {
  file: string;
  mock: RemoteMock;
  up: RunningProcess;
  dir: string;
  daemon: string;
  client: OpenAI;
}

/** The mock LLM as its own process, like a real endpoint: `zino mock-llm`. */
interface RemoteMock {
  baseUrl: string;
  proc: RunningProcess;
}

async function startRemoteMock(): Promise<RemoteMock> {
  const proc = startProcess(CLI_PATH, ['mock-llm', '--port', '0'], { quiet: true });
  for (let i = 0; i < 500; i++) {
    const url = /base_url = "(.*)"/.exec(proc.stdout())?.[1];
    if (url) return { baseUrl: url, proc };
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('the mock LLM did not start');
}

async function setScript(mock: RemoteMock, script: MockScript): Promise<void> {
  const res = await fetch(`${mock.baseUrl.replace(/\/v1$/, '')}/_mock/script`, { method: 'POST', body: JSON.stringify(script) });
  if (!res.ok) throw new Error(`cannot set the mock script: ${res.status}`);
}

/**
 * Waits until every socket answers ping. Pings a socket only once its file exists: a ping every 2 ms to a socket not
 * yet there (a connect, an error, its message) cost this process 70–290 ms of CPU per start, taken from the processes
 * starting on the same two cores. A stat every 2 ms costs about a fifth of that (docs/benchmarks.md, round 12).
 */
async function waitForPings(sockets: readonly string[], started: number): Promise<void> {
  await Promise.all(
    sockets.map(async (socket) => {
      for (;;) {
        if (existsSync(socket)) {
          try {
            await ping(socket, { timeoutMs: 1000 });
            return;
          } catch {
            // Bound but not answering yet, or a stale file: try again.
          }
        }
        if (performance.now() - started > 30_000) throw new Error(`${socket} never answered`);
        await new Promise((r) => setTimeout(r, 2));
      }
    }),
  );
}

async function coldStart(file: string, dir: string): Promise<{ up: RunningProcess; ms: number; cpu: Record<string, number> }> {
  const sockets = SERVICE_NAMES.map((name) => path.join(dir, 'run', `${name}.sock`));
  const started = performance.now();
  // Logs at info, as in production, but not parsed by this process: it would compete for the CPU it measures.
  // BENCH_NODE_OPTIONS: Node/V8 flags for `zino up` and the services (NODE_OPTIONS), to compare settings.
  const nodeOptions = process.env.BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } : {};
  const up = startProcess(CLI_PATH, ['up', '--config', file], { env: { ...process.env, ZINO_LOG_LEVEL: 'info', ...nodeOptions }, quiet: true });
  await waitForPings(sockets, started);
  const ms = performance.now() - started;
  // CPU each process used to get there (from /proc): unlike the wall time, it does not grow with the other work on the machine.
  const cpu: Record<string, number> = {};
  if (up.child.pid !== undefined) cpu.up = cpuMs(up.child.pid);
  for (const { pid, cmdline } of findPids(['serve', file])) cpu[cmdline[cmdline.indexOf('serve') + 1] ?? '?'] = cpuMs(pid);
  return { up, ms, cpu };
}

/**
 * The cold start's floor (bench/bare-up.ts): a parent `node` spawning seven bare `node` listeners the way `zino up`
 * spawns the services, waited for the same way. Its time and CPU (the parent and the seven, from /proc), then stopped.
 */
async function bareColdStart(dir: string): Promise<{ ms: number; cpu: number }> {
  const run = mkdtempSync(path.join(dir, 'bare-'));
  const sockets = SERVICE_NAMES.map((name) => path.join(run, `${name}.sock`));
  const started = performance.now();
  const up = startProcess(BARE_UP, ['up', ...sockets], { quiet: true });
  await waitForPings(sockets, started);
  const ms = performance.now() - started;
  let cpu = up.child.pid === undefined ? 0 : cpuMs(up.child.pid);
  for (const socket of sockets) for (const { pid } of findPids([BARE_UP, 'serve', socket])) cpu += cpuMs(pid);
  await up.stop('SIGINT');
  rmSync(run, { recursive: true, force: true });
  return { ms, cpu };
}

/** Time to the first content chunk of a direct streamed call to the mock. */
async function directTtft(client: OpenAI): Promise<number> {
  const started = performance.now();
  const s = await client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'ttft probe' }] });
  let first = 0;
  for await (const chunk of s) {
    if (first === 0 && chunk.choices[0]?.delta?.content) first = performance.now() - started;
  }
  return first;
}

/** Time to the first chunk through the daemon (the whole suite). */
async function suiteTtft(daemon: string, channel?: string): Promise<number> {
  const started = performance.now();
  let first = 0;
  for await (const frame of stream(daemon, { message: 'ttft probe', stream: true, ...(channel ? { channel_id: channel } : {}) })) {
    if (first === 0 && frame.type === 'chunk') first = performance.now() - started;
  }
  return first;
}

/** Time to the first content chunk through the HTTP endpoint (then the daemon and the whole suite), on `user`'s channel. */
async function httpTtft(client: OpenAI): Promise<number> {
  const started = performance.now();
  const s = await client.chat.completions.create({ model: 'zino', stream: true, user: 'bench-ttft-http', messages: [{ role: 'user', content: 'ttft probe' }] });
  let first = 0;
  for await (const chunk of s) {
    if (first === 0 && chunk.choices[0]?.delta?.content) first = performance.now() - started;
  }
  return first;
}

/** Suite TTFT minus warm direct TTFT, on the first requests after a cold start (the JIT is still cold). */
async function firstRequests(env: Env): Promise<number[]> {
  await setScript(env.mock, { rules: [{ reply: 'The short answer is yes, it works.', chunkSize: 4 }] });
  // The direct path warms up first: only the suite's first requests are to be seen cold.
  for (let i = 0; i < FIRST_RUNS; i++) await directTtft(env.client);
  const first: number[] = [];
  for (let i = 0; i < FIRST_RUNS; i++) first.push(await suiteTtft(env.daemon, 'bench-first'));
  return first;
}

/** The figures of one window of {@link TTFT_RUNS} pairs. */
interface TtftWindow {
  o50: number;
  o90: number;
  s50: number;
  s90: number;
  d50: number;
  d90: number;
  /** CPU per request summed over the suite's processes, ms, and each one's. */
  cpu: number;
  each: Record<string, number>;
  /** Write system calls per request, by process. */
  writes: Record<string, number>;
}

/**
 * TTFT through the suite against direct, and the CPU every process of the suite used
 * meanwhile (the direct runs do not touch it), in two windows of {@link TTFT_RUNS} pairs:
 * - early (names ending in `.early`), after the {@link FIRST_RUNS} first requests and
 *   {@link TTFT_WARMUP} pairs (50 requests in all), as rounds 1–6 measured it: the
 *   services' JIT is still compiling then (their CPU per request halves over the next
 *   few thousand requests);
 * - steady, after {@link STEADY_AFTER} requests, the same warm-up as the floor it is
 *   compared with, the two taking turns in blocks of {@link BLOCK} ({@link SteadyFloor}):
 *   the figures with targets.
 */
async function ttft(env: Env, first: number[]): Promise<void> {
  await setScript(env.mock, { rules: [{ reply: 'The short answer is yes, it works.', chunkSize: 4 }] });
  let carried = FIRST_RUNS;
  const pair = async (): Promise<{ direct: number; suite: number }> => {
    carried++;
    return { direct: await directTtft(env.client), suite: await suiteTtft(env.daemon, 'bench-ttft') };
  };
  // The early window as in rounds 1–6: the floor's early phase (a few seconds), 30 pairs, 300 pairs.
  const earlyFloor = await measureHopFloor('early');
  for (let i = 0; i < TTFT_WARMUP; i++) await pair();
  const early = await ttftWindow(env, pair);
  recordWindow(early, earlyFloor, '.early');
  record({ name: 'ttft.overhead.p50_vs_6_hops.early', value: early.o50 / earlyFloor.six.p50, unit: 'x' });
  record({ name: 'ttft.overhead.p90_vs_6_hops.early', value: early.o90 / earlyFloor.six.p90, unit: 'x' });
  // The steady window: the floor's chains and the suite take turns in blocks of BLOCK, through the warm-up to
  // STEADY_AFTER requests each and through the window, so that neither sits idle before its window (after 30 s
  // idle, V8's memory reducer costs the next few hundred requests their warmth: docs/benchmarks.md, round 7) and
  // both are measured in the same seconds. Both paths warm alike: a direct path still compiling would make the
  // suite's overhead look smaller.
  const floor = await SteadyFloor.start();
  let steady: TtftWindow;
  let floors: Floors;
  try {
    while (floor.carried < STEADY_AFTER || carried < STEADY_AFTER) {
      if (floor.carried < STEADY_AFTER) await floor.rounds(BLOCK);
      for (let i = 0; i < BLOCK && carried < STEADY_AFTER; i++) await pair();
    }
    floor.beginWindow();
    steady = await ttftWindow(env, pair, () => floor.rounds(BLOCK));
    floors = floor.endWindow();
  } finally {
    await floor.stop();
  }
  recordWindow(steady, floors, '');
  record({ name: 'ttft.overhead.p50_vs_6_hops', value: steady.o50 / floors.six.p50, unit: 'x', target: '<= 1.3', ok: steady.o50 / floors.six.p50 <= 1.3 });
  record({ name: 'ttft.overhead.p90_vs_6_hops', value: steady.o90 / floors.six.p90, unit: 'x', target: '<= 1.5', ok: steady.o90 / floors.six.p90 <= 1.5 });
  const firstOverhead = (first[0] ?? Number.NaN) - steady.d50;
  const first20 = percentile(first, 50);
  record({
    name: 'first_request.overhead',
    value: firstOverhead,
    unit: 'ms',
    target: '<= 40 ms',
    ok: firstOverhead <= 40,
    details: { first_ms: first.slice(0, 5).map((x) => Math.round(x * 10) / 10) },
  });
  record({
    name: 'first_requests.20.p50_vs_warm',
    value: first20 / steady.s50,
    unit: 'x',
    target: '<= 2',
    ok: first20 / steady.s50 <= 2,
    details: { first20_p50_ms: Math.round(first20 * 100) / 100, vs_early_p50: Math.round((first20 / early.s50) * 100) / 100 },
  });
}

/**
 * {@link TTFT_RUNS} pairs, and their CPU summed over the suite's processes. With `between`, it runs before each
 * block of {@link BLOCK} pairs (the floor's turn); the suite's CPU is taken over the whole window, the floor's
 * blocks included, so that what a service does after a request is counted wherever it falls.
 */
async function ttftWindow(env: Env, pair: () => Promise<{ direct: number; suite: number }>, between?: () => Promise<void>): Promise<TtftWindow> {
  const pids = suitePids(env);
  const before = cpuSnapshot(pids);
  const writesBefore = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, syscalls(pid).writes]));
  const direct: number[] = [];
  const suite: number[] = [];
  for (let i = 0; i < TTFT_RUNS; i++) {
    if (between && i % BLOCK === 0) await between();
    const p = await pair();
    direct.push(p.direct);
    suite.push(p.suite);
  }
  const cpu = cpuPerRequest(before, cpuSnapshot(pids), TTFT_RUNS);
  // Write system calls per request and process: each is a crossing to another process (a frame, a log line).
  const writes = Object.fromEntries(
    Object.entries(pids).map(([name, pid]) => [name, Math.round(((syscalls(pid).writes - (writesBefore[name] ?? 0)) / TTFT_RUNS) * 10) / 10]),
  );
  const d50 = percentile(direct, 50);
  const s50 = percentile(suite, 50);
  return {
    o50: s50 - d50,
    o90: percentile(suite, 90) - percentile(direct, 90),
    s50,
    d50,
    d90: percentile(direct, 90),
    s90: percentile(suite, 90),
    cpu: cpu.total,
    each: cpu.each,
    writes,
  };
}

/** Records a window's TTFT, overhead and CPU per request (names end in `suffix`), and the CPU against the 7-hop floor. */
function recordWindow(w: TtftWindow, floor: Floors, suffix: string): void {
  const name = (figure: string): string => `${figure}${suffix}`;
  record({ name: name('ttft.direct.p50'), value: w.d50, unit: 'ms' });
  record({ name: name('ttft.direct.p90'), value: w.d90, unit: 'ms' });
  record({ name: name('ttft.suite.p50'), value: w.s50, unit: 'ms' });
  record({ name: name('ttft.suite.p90'), value: w.s90, unit: 'ms' });
  record({ name: name('ttft.overhead.p50'), value: w.o50, unit: 'ms', details: { runs: TTFT_RUNS } });
  record({ name: name('ttft.overhead.p90'), value: w.o90, unit: 'ms', details: { runs: TTFT_RUNS } });
  record({ name: name('cpu.per_request'), value: w.cpu, unit: 'ms', details: { requests: TTFT_RUNS, each_ms: w.each, write_syscalls: w.writes } });
  const ratio = w.cpu / floor.seven.cpu;
  if (suffix) record({ name: name('cpu.per_request_vs_7_hops'), value: ratio, unit: 'x' });
  else record({ name: 'cpu.per_request_vs_7_hops', value: ratio, unit: 'x', target: '<= 1.3', ok: ratio <= 1.3 });
}

/** The same short reply through the HTTP endpoint, interleaved with the socket and direct runs. */
async function ttftHttp(env: Env): Promise<void> {
  await setScript(env.mock, { rules: [{ reply: 'The short answer is yes, it works.', chunkSize: 4 }] });
  // The HTTP endpoint, started after the cold start so that it does not weigh on that figure.
  const http = await startHttpFrontEnd(env.file, { env: { ZINO_LOG_LEVEL: 'info' } });
  try {
    const viaHttp = new OpenAI({ baseURL: http.baseUrl, apiKey: http.token, maxRetries: 0 });
    for (let i = 0; i < 5; i++) await httpTtft(viaHttp);
    const suite: number[] = [];
    const overHttp: number[] = [];
    for (let i = 0; i < HTTP_RUNS; i++) {
      suite.push(await suiteTtft(env.daemon, 'bench-ttft'));
      overHttp.push(await httpTtft(viaHttp));
    }
    const s50 = percentile(suite, 50);
    const h50 = percentile(overHttp, 50);
    record({ name: 'ttft.http.p50', value: h50, unit: 'ms' });
    record({ name: 'ttft.http.p90', value: percentile(overHttp, 90), unit: 'ms' });
    record({ name: 'ttft.http_over_socket.p50', value: h50 - s50, unit: 'ms', details: { runs: HTTP_RUNS } });
  } finally {
    await http.stop();
  }
}

async function throughput(env: Env): Promise<void> {
  await setScript(env.mock, { rules: [{ repeatChunk: 'tok ', repeatCount: STREAM_CHUNKS }] });
  const directStarted = performance.now();
  let directChunks = 0;
  const s = await env.client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'stream' }] });
  for await (const chunk of s) if (chunk.choices[0]?.delta?.content) directChunks++;
  const directRate = directChunks / ((performance.now() - directStarted) / 1000);

  const started = performance.now();
  let text = 0;
  let frames = 0;
  for await (const frame of stream(env.daemon, { message: 'stream', stream: true })) {
    if (frame.type === 'chunk') {
      frames++;
      text += String(frame.delta).length;
    }
  }
  const seconds = (performance.now() - started) / 1000;
  // Model chunks delivered per second (the text is 4 characters per model chunk).
  const rate = text / 4 / seconds;
  record({ name: 'stream.direct.chunks_per_s', value: directRate, unit: 'chunks/s', details: { chunks: directChunks } });
  record({ name: 'stream.suite.chunks_per_s', value: rate, unit: 'chunks/s', details: { chunks: text / 4, frames } });
  record({ name: 'stream.suite_vs_direct', value: (rate / directRate) * 100, unit: '%', target: '>= 50 %', ok: rate / directRate >= 0.5 });
}

async function concurrency(env: Env): Promise<void> {
  await setScript(env.mock, { rules: [{ repeatChunk: 'word ', repeatCount: 50, delayMs: 5 }] });
  const one = async (i: number): Promise<{ ms: number; ok: boolean }> => {
    const started = performance.now();
    let text = '';
    let done = false;
    for await (const frame of stream(env.daemon, { message: `client ${i}`, stream: true, channel_id: `bench-${i}` })) {
      if (frame.type === 'chunk') text += String(frame.delta);
      if (frame.type === 'done') done = frame.full_text === text && text === 'word '.repeat(50);
    }
    return { ms: performance.now() - started, ok: done };
  };
  const lone: number[] = [];
  for (let i = 0; i < 10; i++) lone.push((await one(-1)).ms);
  const loneP50 = percentile(lone, 50);
  const results = await Promise.all(Array.from({ length: CONCURRENT }, (_, i) => one(i)));
  const ms = results.map((r) => r.ms);
  const successes = results.filter((r) => r.ok).length;
  const p99 = percentile(ms, 99);
  record({ name: 'concurrent.lone.p50', value: loneP50, unit: 'ms' });
  record({ name: 'concurrent.200.successes', value: successes, unit: 'of 200', target: '= 200', ok: successes === CONCURRENT });
  record({ name: 'concurrent.200.p50', value: percentile(ms, 50), unit: 'ms' });
  record({ name: 'concurrent.200.p99', value: p99, unit: 'ms' });
  record({ name: 'concurrent.200.p99_vs_lone', value: p99 / loneP50, unit: 'x', target: '<= 6', ok: p99 / loneP50 <= 6 });
}

/** The suite's processes by name: the seven services and `zino up` itself. */
function suitePids(env: Env): Record<string, number> {
  const pids: Record<string, number> = {};
  for (const { pid, cmdline } of findPids(['serve', env.file])) {
    const name = cmdline[cmdline.indexOf('serve') + 1];
    if (name && name !== 'http') pids[name] = pid;
  }
  if (env.up.child.pid !== undefined) pids.up = env.up.child.pid;
  return pids;
}

function memory(env: Env, suffix: string): void {
  const pids = suitePids(env);
  const each = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, memoryMB(pid)]));
  const services = Object.entries(each).filter(([name]) => name !== 'up');
  const sum = (key: 'rss' | 'pss' | 'anon'): number => services.reduce((total, [, m]) => total + m[key], 0);
  const per = (key: 'rss' | 'pss' | 'anon'): Record<string, number> =>
    Object.fromEntries(Object.entries(each).map(([n, m]) => [n, Math.round(m[key] * 10) / 10]));
  const pss = sum('pss');
  // RSS counts the pages of the Node binary shared by all seven once per process; PSS shares them out.
  record({
    name: `pss.total_7${suffix}`,
    value: pss,
    unit: 'MB',
    ...(suffix === '' || suffix === '.idle_10s' ? { target: '<= 160 MB', ok: pss <= 160 } : {}),
    details: { services: services.length, each_mb: per('pss') },
  });
  record({ name: `rss.total_7${suffix}`, value: sum('rss'), unit: 'MB', details: { each_mb: per('rss') } });
  record({ name: `anon.total_7${suffix}`, value: sum('anon'), unit: 'MB', details: { each_mb: per('anon') } });
}

/** Runs the suite benchmarks. */
export async function run(): Promise<void> {
  const mock = await startRemoteMock();
  const dir = mkdtempSync(path.join(tmpdir(), 'zbench-'));
  const { file } = writeTestConfig(dir, {
    api: { base_url: mock.baseUrl, key: 'k' },
    service: { model: 'm' },
    exc: { sandbox: 'none' },
    http: { listen: '127.0.0.1:0' },
  });
  try {
    // Cold starts: the first COLD_STARTS - 1 are stopped again; the last one runs the rest of the benchmark.
    const starts: number[] = [];
    const cpus: Record<string, number>[] = [];
    let up: RunningProcess | undefined;
    const floorStarts: { ms: number; cpu: number }[] = [];
    for (let i = 0; i < COLD_STARTS; i++) {
      if (up) await up.stop('SIGINT');
      // The floor and the suite take turns, so that both see the machine as it is at that moment.
      floorStarts.push(await bareColdStart(dir));
      const started = await coldStart(file, dir);
      up = started.up;
      starts.push(started.ms);
      cpus.push(started.cpu);
    }
    if (!up) throw new Error('no cold start');
    const cold = percentile(starts, 50);
    record({ name: 'cold_start.median_5', value: cold, unit: 'ms', target: '<= 600 ms', ok: cold <= 600, details: { each_ms: starts.map(Math.round) } });
    const cpuTotals = cpus.map((each) => Object.values(each).reduce((a, b) => a + b, 0));
    const cpuEach = Object.fromEntries(
      Object.keys(cpus[0] ?? {}).map((name) => [
        name,
        percentile(
          cpus.map((c) => c[name] ?? Number.NaN),
          50,
        ),
      ]),
    );
    record({ name: 'cold_start.cpu_ms', value: percentile(cpuTotals, 50), unit: 'ms', details: { each_ms: cpuEach, runs: cpuTotals } });
    const floorMs = percentile(
      floorStarts.map((f) => f.ms),
      50,
    );
    record({ name: 'cold_start.floor.median_5', value: floorMs, unit: 'ms', details: { each_ms: floorStarts.map((f) => Math.round(f.ms)) } });
    record({
      name: 'cold_start.floor.cpu_ms',
      value: percentile(
        floorStarts.map((f) => f.cpu),
        50,
      ),
      unit: 'ms',
      details: { runs: floorStarts.map((f) => f.cpu) },
    });
    record({ name: 'cold_start.vs_floor', value: cold / floorMs, unit: 'x' });
    const env: Env = {
      file,
      mock,
      up,
      dir,
      daemon: path.join(dir, 'run', 'daemon.sock'),
      client: new OpenAI({ baseURL: mock.baseUrl, apiKey: 'k', maxRetries: 0 }),
    };
    try {
      const first = await firstRequests(env);
      await ttft(env, first);
      // BENCH_SUITE_QUICK=1: the cold starts, the first requests, both floors, TTFT/CPU and the split only (to compare changes quickly).
      if (process.env.BENCH_SUITE_QUICK !== '1') {
        await ttftHttp(env);
        await throughput(env);
        await concurrency(env);
        memory(env, '');
        // Each service compacts its heap once it has had no connection for 5 s (src/runtime/transport/reclaim.ts):
        // the same 10 s after the load. V8's own memory reducer may give back more later (from about 8 s after a
        // collection, in up to three collections; each service in its own time): after 60 s.
        await new Promise((resolve) => setTimeout(resolve, 10_000));
        memory(env, '.idle_10s');
        await new Promise((resolve) => setTimeout(resolve, 50_000));
        memory(env, '.idle_60s');
      }
      // Last, so that its chains do not run between the figures above: the floor split into its parts.
      await measureHopSplit();
    } finally {
      await up.stop('SIGINT');
    }
  } finally {
    await mock.proc.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
