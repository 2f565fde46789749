/**
 * End-to-end benchmarks of the whole suite under `zino up`, against the mock LLM
 * on loopback:
 *
 * - cold start: `zino up` until all seven services answer ping (target ≤ 1 s);
 * - TTFT: first chunk of a short streamed reply through the daemon vs a direct
 *   call to the same mock with the openai SDK, p50/p90 over 60 runs (target:
 *   overhead ≤ 2 ms p50). The mock runs as its own process (`zino mock-llm`), as a
 *   real endpoint would, so both paths cross to it the same way. Next to them, the
 *   same through the OpenAI-compatible endpoint (`zino serve http`, the openai SDK
 *   as its client), which adds one HTTP hop in front of the daemon;
 * - stream throughput: chunks per second of a 20,000-chunk reply end to end vs
 *   direct (target ≥ 50% of direct);
 * - concurrency: 200 concurrent streaming clients vs a lone request, with a reply
 *   paced like a real model (50 chunks, 5 ms apart) (target: all complete, p99 ≤ 2×);
 * - total RSS of the seven services after the run (target ≤ 400 MB).
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { SERVICE_NAMES, ping, stream } from '../src/runtime/index.js';
import type { MockScript } from '../src/testing/mock-llm/script.js';
import { startHttpFrontEnd } from '../src/testing/http.js';
import { writeTestConfig } from '../src/testing/suite.js';
import { CLI_PATH } from '../src/testing/paths.js';
import { startProcess, type RunningProcess } from '../src/testing/process.js';
import { percentile, record } from './lib.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';

const TTFT_RUNS = 60;
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

async function coldStart(file: string, dir: string): Promise<{ up: RunningProcess; ms: number }> {
  const sockets = SERVICE_NAMES.map((name) => path.join(dir, 'run', `${name}.sock`));
  const started = performance.now();
  // Logs at info, as in production, but not parsed by this process: it would compete for the CPU it measures.
  const up = startProcess(CLI_PATH, ['up', '--config', file], { env: { ...process.env, ZINO_LOG_LEVEL: 'info' }, quiet: true });
  await Promise.all(
    sockets.map(async (socket) => {
      for (;;) {
        try {
          await ping(socket, { timeoutMs: 1000 });
          return;
        } catch {
          if (performance.now() - started > 30_000) throw new Error(`${socket} never answered`);
          await new Promise((r) => setTimeout(r, 2));
        }
      }
    }),
  );
  return { up, ms: performance.now() - started };
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

async function ttft(env: Env): Promise<void> {
  await setScript(env.mock, { rules: [{ reply: 'The short answer is yes, it works.', chunkSize: 4 }] });
  // The HTTP endpoint, started after the cold start so that it does not weigh on that figure.
  const http = await startHttpFrontEnd(env.file, { env: { ZINO_LOG_LEVEL: 'info' } });
  try {
    const viaHttp = new OpenAI({ baseURL: http.baseUrl, apiKey: http.token, maxRetries: 0 });
    for (let i = 0; i < 5; i++) {
      await directTtft(env.client);
      await suiteTtft(env.daemon);
      await httpTtft(viaHttp);
    }
    const direct: number[] = [];
    const suite: number[] = [];
    const overHttp: number[] = [];
    for (let i = 0; i < TTFT_RUNS; i++) {
      direct.push(await directTtft(env.client));
      suite.push(await suiteTtft(env.daemon, 'bench-ttft'));
      overHttp.push(await httpTtft(viaHttp));
    }
    const d50 = percentile(direct, 50);
    const s50 = percentile(suite, 50);
    const h50 = percentile(overHttp, 50);
    record({ name: 'ttft.direct.p50', value: d50, unit: 'ms' });
    record({ name: 'ttft.direct.p90', value: percentile(direct, 90), unit: 'ms' });
    record({ name: 'ttft.suite.p50', value: s50, unit: 'ms' });
    record({ name: 'ttft.suite.p90', value: percentile(suite, 90), unit: 'ms' });
    record({ name: 'ttft.overhead.p50', value: s50 - d50, unit: 'ms', target: '<= 2 ms', ok: s50 - d50 <= 2, details: { runs: TTFT_RUNS } });
    record({ name: 'ttft.http.p50', value: h50, unit: 'ms' });
    record({ name: 'ttft.http.p90', value: percentile(overHttp, 90), unit: 'ms' });
    record({ name: 'ttft.http_over_socket.p50', value: h50 - s50, unit: 'ms', details: { runs: TTFT_RUNS } });
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
  record({ name: 'concurrent.200.p99_vs_lone', value: p99 / loneP50, unit: 'x', target: '<= 2', ok: p99 / loneP50 <= 2 });
}

/** A process's memory from /proc/PID/smaps_rollup, in MB: rss, pss (shared pages split among sharers), anon. */
function memoryMB(pid: number): { rss: number; pss: number; anon: number } {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
  const mb = (k: number): number => (k * 1024) / 1e6;
  return { rss: mb(kb('Rss')), pss: mb(kb('Pss')), anon: mb(kb('Anonymous')) };
}

function servicePids(file: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (cmd.includes(' serve ') && cmd.includes(file)) pids.push(Number(entry));
    } catch {
      // gone
    }
  }
  return pids;
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
    const { up, ms } = await coldStart(file, dir);
    record({ name: 'cold_start', value: ms, unit: 'ms', target: '<= 1000 ms', ok: ms <= 1000 });
    const env: Env = {
      file,
      mock,
      up,
      dir,
      daemon: path.join(dir, 'run', 'daemon.sock'),
      client: new OpenAI({ baseURL: mock.baseUrl, apiKey: 'k', maxRetries: 0 }),
    };
    try {
      await ttft(env);
      await throughput(env);
      await concurrency(env);
      const pids = servicePids(file);
      const each = pids.map(memoryMB);
      const sum = (key: 'rss' | 'pss' | 'anon'): number => each.reduce((total, m) => total + m[key], 0);
      const rss = sum('rss');
      record({
        name: 'rss.total_7',
        value: rss,
        unit: 'MB',
        target: '<= 400 MB',
        ok: rss <= 400,
        details: { services: pids.length, each_mb: each.map((m) => Math.round(m.rss)) },
      });
      // RSS counts the pages of the Node binary shared by all seven once per process; PSS shares them out.
      record({ name: 'pss.total_7', value: sum('pss'), unit: 'MB', details: { each_mb: each.map((m) => Math.round(m.pss)) } });
      record({ name: 'anon.total_7', value: sum('anon'), unit: 'MB', details: { each_mb: each.map((m) => Math.round(m.anon)) } });
    } finally {
      await up.stop('SIGINT');
    }
  } finally {
    await mock.proc.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
