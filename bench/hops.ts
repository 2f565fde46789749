/**
 * The hop floor (issue 18): what process crossings alone cost on this machine, so
 * that the suite's figures can be read as ratios to it, measured in the same run.
 *
 * A chain of bare Node processes (`bench/hop-relay.ts`), each relaying a 5 KB
 * frame to the next over a fresh Unix-socket connection (one request per
 * connection, as the suite's protocol has) and the small reply back; 2 ms idle
 * between requests, as real traffic has. An N-hop chain is N relay processes and
 * N connections (the first from this process). Two chains, 6 and 7 hops, take
 * turns request by request so both see the same moment of the machine.
 *
 * Reported per chain: latency p50/p90 (request sent to reply read, as the client
 * sees it) and CPU per request summed over the chain's processes (utime + stime
 * from /proc/PID/stat; this process, the client, is not counted, as the suite's
 * figure does not count the benchmark), over {@link REQUESTS} requests, in one of two
 * phases, each with chains of its own:
 * - `hops.N.early.*`: after {@link WARMUP} requests, as rounds 1–6 measured it. V8
 *   is still compiling then: a relay's CPU per request falls by half over its first
 *   1,500–2,000 requests as its hot functions reach optimised code;
 * - `hops.N.*`: after {@link STEADY_AFTER} requests, when the JIT has mostly settled (the
 *   suite's targets are ratios to this one, measured after the same warm-up). In `npm run
 *   bench suite`, these chains take turns with the suite in blocks ({@link SteadyFloor}).
 *
 * Then, apart (`measureHopSplit`, after 3,000 requests as the steady floor), two
 * 7-hop chains that split the floor, each in
 * turns with a fresh one:
 * connections kept open between requests (`hops.7.kept.*`), what the floor would be
 * without a connect, an accept and a close per hop (the protocol forbids kept
 * connections: one request per connection; the figure shows how much of the floor
 * that rule is); and the suite's own transport (`bench/zino-relay.ts`,
 * `hops.7.zino.*`), what our server and client add per hop before any service logic.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { percentile, record } from './lib.js';
import { cpuPerRequest, cpuSnapshot } from './proc.js';

const RELAY = fileURLToPath(new URL('./hop-relay.js', import.meta.url));
const ZINO_RELAY = fileURLToPath(new URL('./zino-relay.js', import.meta.url));
const FRAME_BYTES = 5 * 1024;
const WARMUP = 100;
const REQUESTS = 400;
/** Requests a chain has carried before its steady window: the relays' CPU per request has mostly stopped falling by then. */
export const STEADY_AFTER = 3000;
const IDLE_MS = 2;

/** The floor of one chain length, for the suite's ratios. */
export interface HopFloor {
  hops: number;
  p50: number;
  p90: number;
  /** CPU per request summed over the chain, ms. */
  cpu: number;
}

/** `fresh`: the floor; `kept`: connections kept open; `zino`: the suite's own server and client per hop. */
type Relay = 'fresh' | 'kept' | 'zino';

interface Chain {
  hops: number;
  relay: Relay;
  entry: string;
  procs: ChildProcess[];
  /** The client's own connection to a `kept` chain, opened at its first request. */
  kept?: net.Socket;
}

let chainsStarted = 0;

/**
 * Starts a chain and adds it to `chains` at once, so that a caller's `finally` stops
 * whatever did start when a link fails; rejects when a link exits before it is ready.
 */
async function startChain(chains: Chain[], dir: string, hops: number, relay: Relay): Promise<void> {
  const id = ++chainsStarted;
  const sockets = Array.from({ length: hops }, (_, i) => path.join(dir, `c${id}-${i}.sock`));
  const chain: Chain = { hops, relay, entry: sockets[0] as string, procs: [] };
  chains.push(chain);
  await Promise.all(
    sockets.map(
      (socket, i) =>
        new Promise<void>((resolve, reject) => {
          const next = i + 1 < hops ? [sockets[i + 1] as string] : [];
          const args = relay === 'zino' ? [ZINO_RELAY, socket, ...next] : [RELAY, relay, socket, ...next];
          const proc = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'inherit'] });
          chain.procs.push(proc);
          proc.once('error', reject);
          proc.once('exit', (code, signal) => reject(new Error(`${relay} relay ${socket} exited before it was ready (${signal ?? code})`)));
          proc.stdout?.once('data', () => resolve());
        }),
    ),
  );
}

/**
 * One request through a chain: the time from connect (or, on a kept connection,
 * from the write) to the reply frame read, in ms.
 */
function request(chain: Chain, frame: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let socket = chain.kept;
    if (!socket) {
      socket = net.createConnection({ path: chain.entry });
      // A late error after the reply (or between requests on a kept connection) must not crash the bench.
      socket.on('error', () => undefined);
      if (chain.relay === 'kept') chain.kept = socket;
    }
    const connection = socket;
    let have = 0;
    let want = Infinity;
    const onData = (data: Buffer): void => {
      if (have === 0 && data.length >= 4) want = 4 + data.readUInt32BE(0);
      have += data.length;
      if (have < want) return;
      connection.off('data', onData).off('error', reject).off('close', onClose);
      resolve(performance.now() - started);
      if (chain.relay !== 'kept') connection.end();
    };
    const onClose = (): void => reject(new Error(`the ${chain.relay} chain closed the connection before its reply`));
    connection.on('error', reject);
    connection.on('close', onClose);
    connection.on('data', onData);
    connection.write(frame);
  });
}

function frameOf(bytes: number): Buffer {
  const body = Buffer.from(JSON.stringify({ type: 'infer', messages: [{ role: 'system', content: 'x'.repeat(bytes - 60) }] }));
  const frame = Buffer.alloc(4 + body.length);
  frame.writeUInt32BE(body.length, 0);
  body.copy(frame, 4);
  return frame;
}

/** How many requests each chain carries before its window is measured. */
export type Phase = 'early' | 'steady';

/**
 * Runs `chains` in turns, request by request: {@link WARMUP} requests (`early`) or
 * {@link STEADY_AFTER} (`steady`), then the window. Returns each one's figures.
 */
async function measureChains(chains: readonly Chain[], phase: Phase): Promise<HopFloor[]> {
  const frame = frameOf(FRAME_BYTES);
  const warmup = phase === 'early' ? WARMUP : STEADY_AFTER;
  for (let i = 0; i < warmup; i++) {
    for (const chain of chains) {
      await request(chain, frame);
      await sleep(IDLE_MS);
    }
  }
  return measureWindow(chains, frame);
}

/** {@link REQUESTS} requests through each of `chains` in turns: latency and CPU per request of each. */
async function measureWindow(chains: readonly Chain[], frame: Buffer): Promise<HopFloor[]> {
  const before = chains.map((c) => cpuSnapshot(chainPids(c)));
  const times: number[][] = chains.map(() => []);
  for (let i = 0; i < REQUESTS; i++) {
    for (const [k, chain] of chains.entries()) {
      times[k]?.push(await request(chain, frame));
      await sleep(IDLE_MS);
    }
  }
  const after = chains.map((c) => cpuSnapshot(chainPids(c)));
  return chains.map((chain, k): HopFloor => {
    const cpu = cpuPerRequest(before[k] ?? {}, after[k] ?? {}, REQUESTS).total;
    const t = times[k] ?? [];
    return { hops: chain.hops, p50: percentile(t, 50), p90: percentile(t, 90), cpu };
  });
}

/** A chain's processes by link, for {@link cpuSnapshot}. */
function chainPids(chain: Chain): Record<string, number> {
  return Object.fromEntries(chain.procs.map((p, i) => [String(i), p.pid as number]));
}

function recordChain(name: string, f: HopFloor, after: number, requests = REQUESTS): void {
  record({ name: `${name}.p50`, value: f.p50, unit: 'ms', details: { requests, after, frame_bytes: FRAME_BYTES, idle_ms: IDLE_MS } });
  record({ name: `${name}.p90`, value: f.p90, unit: 'ms' });
  record({ name: `${name}.cpu_per_request`, value: f.cpu, unit: 'ms', details: { processes: f.hops } });
}

async function stopChains(chains: readonly Chain[]): Promise<void> {
  for (const chain of chains) {
    chain.kept?.destroy();
    for (const p of chain.procs) p.kill('SIGTERM');
  }
  const running = chains.flatMap((c) => c.procs).filter((p) => p.exitCode === null && p.signalCode === null);
  await Promise.all(running.map((p) => new Promise((resolve) => p.once('exit', resolve))));
}

/** Runs `measure` with a fresh list of chains and a directory for their sockets, and stops them all after. */
async function withChains<T>(measure: (chains: Chain[], dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(path.join(tmpdir(), 'zhops-'));
  const chains: Chain[] = [];
  try {
    return await measure(chains, dir);
  } finally {
    await stopChains(chains);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The 6- and 7-hop floors of one window. */
export interface Floors {
  six: HopFloor;
  seven: HopFloor;
}

/**
 * Measures the 6- and 7-hop floors of `phase`, with fresh chains, the two alone in
 * turns, and records them (`hops.N.early.*` or `hops.N.*`); returns them for ratios.
 */
export function measureHopFloor(phase: Phase): Promise<Floors> {
  return withChains(async (chains, dir) => {
    await startChain(chains, dir, 6, 'fresh');
    await startChain(chains, dir, 7, 'fresh');
    const [six, seven] = (await measureChains(chains, phase)) as [HopFloor, HopFloor];
    const infix = phase === 'early' ? '.early' : '';
    const after = phase === 'early' ? WARMUP : STEADY_AFTER;
    recordChain(`hops.6${infix}`, six, after);
    recordChain(`hops.7${infix}`, seven, after);
    return { six, seven };
  });
}

/**
 * Splits the floor: a 7-hop chain of each kind in turns (`hops.7.ref`, a fresh one
 * again; `hops.7.kept`; `hops.7.zino`), each with its ratio to the fresh chain of the
 * same turns. Run apart from the floor and after the suite's own figures: more
 * processes in turn leave each one's caches colder and raise its CPU per request
 * (in round 6, with six chains in turns, the early floor read 3.1–3.2 ms where it
 * read 1.9–2.5 ms alone), which would flatter every ratio to the floor.
 */
export function measureHopSplit(): Promise<void> {
  return withChains(async (chains, dir) => {
    const relays = ['fresh', 'kept', 'zino'] as const;
    for (const relay of relays) await startChain(chains, dir, 7, relay);
    // The steady window: each kind after its JIT has settled.
    const [ref, ...others] = (await measureChains(chains, 'steady')) as [HopFloor, HopFloor, HopFloor];
    recordChain('hops.7.ref', ref, STEADY_AFTER);
    for (const [k, f] of others.entries()) {
      const name = `hops.7.${relays[k + 1] ?? ''}`;
      recordChain(name, f, STEADY_AFTER);
      record({ name: `${name}.cpu_vs_ref`, value: f.cpu / ref.cpu, unit: 'x' });
      record({ name: `${name}.p50_vs_ref`, value: f.p50 / ref.p50, unit: 'x' });
    }
  });
}

/**
 * The steady 6- and 7-hop floors kept running beside the suite, so that the suite's
 * window and the floor's can take turns in blocks (bench/suite.ts): both then see the
 * machine as it is in the same seconds. Taken one after the other, half a minute apart,
 * the two moved apart on a host whose speed changed within a minute (docs/benchmarks.md,
 * round 13: the suite read 5.7 and 7.7 ms of CPU per request in two runs of one tree while
 * its floor read 3.05 and 2.75 ms). Blocks, not single requests: request by request, each
 * process's caches would be as cold as a chain's among six (round 6), and the small floor
 * would suffer more than the suite, flattering every ratio.
 */
export class SteadyFloor {
  /** Rounds carried so far (a round is one request through each chain). */
  carried = 0;
  private readonly frame = frameOf(FRAME_BYTES);
  private window: { before: Record<string, number>[]; times: number[][]; rounds: number } | undefined;

  private constructor(
    private readonly chains: Chain[],
    private readonly dir: string,
  ) {}

  /** Starts the 6- and 7-hop chains (stop them with {@link stop}). */
  static async start(): Promise<SteadyFloor> {
    const floor = new SteadyFloor([], mkdtempSync(path.join(tmpdir(), 'zhops-')));
    try {
      await startChain(floor.chains, floor.dir, 6, 'fresh');
      await startChain(floor.chains, floor.dir, 7, 'fresh');
    } catch (err) {
      await floor.stop();
      throw err;
    }
    return floor;
  }

  /** `n` rounds, each chain in turn with {@link IDLE_MS} after each request; counted in the window once it has begun. */
  async rounds(n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      for (const [k, chain] of this.chains.entries()) {
        const ms = await request(chain, this.frame);
        this.window?.times[k]?.push(ms);
        await sleep(IDLE_MS);
      }
      this.carried++;
      if (this.window) this.window.rounds++;
    }
  }

  /** Starts the measured window: the CPU of every link from now, and the time of every request. */
  beginWindow(): void {
    this.window = { before: this.chains.map((c) => cpuSnapshot(chainPids(c))), times: this.chains.map(() => []), rounds: 0 };
  }

  /**
   * Ends the window and records its figures (`hops.6.*`, `hops.7.*`). The CPU is each chain's
   * over the whole window, its idle blocks included: what a link does after a request is
   * counted wherever it falls.
   */
  endWindow(): Floors {
    const window = this.window;
    if (!window || window.rounds === 0) throw new Error('the floor window has no requests');
    this.window = undefined;
    const [six, seven] = this.chains.map((chain, k): HopFloor => {
      const cpu = cpuPerRequest(window.before[k] ?? {}, cpuSnapshot(chainPids(chain)), window.rounds).total;
      const t = window.times[k] ?? [];
      return { hops: chain.hops, p50: percentile(t, 50), p90: percentile(t, 90), cpu };
    }) as [HopFloor, HopFloor];
    recordChain('hops.6', six, STEADY_AFTER, window.rounds);
    recordChain('hops.7', seven, STEADY_AFTER, window.rounds);
    return { six, seven };
  }

  async stop(): Promise<void> {
    await stopChains(this.chains);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** `npm run bench hops`: the early floor, the steady floor, then the split. */
export async function run(): Promise<void> {
  await measureHopFloor('early');
  await measureHopFloor('steady');
  await measureHopSplit();
}
