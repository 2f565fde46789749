/**
 * The stalled-frame attack of issue 13 (point 4) against real services: 150
 * connections each announce a 16 MiB frame, send half of it (8 MiB) and stall. Per
 * service, with the default `[limits] max_receive_bytes` (64 MiB) and, for
 * comparison, with a budget large enough to take every frame (as before the budget
 * existed): how many connections were refused with OVERLOADED, the peak RSS while
 * they stalled, ping's round trip meanwhile, and the RSS once the connections have
 * closed — polled until it stops falling, to see whether the memory comes back.
 *
 * RSS is read from /proc/<pid>/status (Linux only). Nothing here is asserted; the
 * figures go to docs/reliability.md.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ping, type ServiceName } from '../src/runtime/index.js';
import { startService, writeTestConfig } from '../src/testing/suite.js';
import { record } from './lib.js';

const MiB = 1024 * 1024;
const CONNECTIONS = 150;
const FRAME_BYTES = 16 * MiB;
const SENT_BYTES = 8 * MiB;
/** After the close, RSS is sampled until it has not fallen for this long (or {@link SETTLE_MAX_MS}). */
const SETTLE_QUIET_MS = 5000;
const SETTLE_MAX_MS = 60_000;

function rssMiB(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

const round = (x: number): number => Math.round(x * 10) / 10;

interface Stalled {
  socket: net.Socket;
  /** Resolves when the 8 MiB were handed to the kernel, or the server closed the connection first. */
  settled: Promise<'stalled' | 'refused'>;
}

/** Connects, announces a 16 MiB frame and sends 8 MiB of it. One shared body buffer: the bench itself stays small. */
function stall(socketPath: string, body: Buffer): Stalled {
  const socket = net.createConnection({ path: socketPath, allowHalfOpen: true });
  const header = Buffer.alloc(4);
  header.writeUInt32BE(FRAME_BYTES);
  const settled = new Promise<'stalled' | 'refused'>((resolve) => {
    let refused = false;
    socket.on('data', () => (refused = true)); // the only thing a service sends here is an error frame
    socket.on('error', () => resolve('refused'));
    socket.on('end', () => resolve('refused'));
    socket.on('close', () => resolve(refused ? 'refused' : 'stalled'));
    socket.once('connect', () => {
      socket.write(header);
      socket.write(body, (err) => resolve(err || refused ? 'refused' : 'stalled'));
    });
  });
  return { socket, settled };
}

async function attack(name: ServiceName, label: string, maxReceiveBytes: number | undefined): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'zstall-'));
  try {
    const { file, config } = writeTestConfig(dir, maxReceiveBytes === undefined ? {} : { limits: { max_receive_bytes: maxReceiveBytes } });
    const service = await startService(name, file, { env: { ZINO_LOG_LEVEL: 'warn' } });
    const pid = service.child.pid as number;
    try {
      await sleep(500);
      const before = rssMiB(pid);
      let peak = before;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          peak = Math.max(peak, rssMiB(pid));
          await sleep(20);
        }
      })();
      const body = Buffer.alloc(SENT_BYTES, 0x20);
      const started = performance.now();
      const attackers = Array.from({ length: CONNECTIONS }, () => stall(config[name].socket, body));
      const pings: number[] = [];
      let settledCount = 0;
      const outcomes = Promise.all(attackers.map((a) => a.settled.finally(() => settledCount++)));
      while (settledCount < CONNECTIONS) {
        pings.push(await ping(config[name].socket, { timeoutMs: 60_000 }));
        await sleep(50);
      }
      const results = await outcomes;
      const attackMs = performance.now() - started;
      await sleep(500);
      peak = Math.max(peak, rssMiB(pid));
      const stalledRss = rssMiB(pid);
      for (const a of attackers) a.socket.destroy();
      // Settle: sample until RSS has not fallen for a while.
      const closedAt = performance.now();
      let low = rssMiB(pid);
      let lowAt = performance.now();
      const samples: [number, number][] = [];
      while (performance.now() - lowAt < SETTLE_QUIET_MS && performance.now() - closedAt < SETTLE_MAX_MS) {
        await sleep(250);
        const now = rssMiB(pid);
        samples.push([Math.round(performance.now() - closedAt), round(now)]);
        if (now < low - 1) {
          low = now;
          lowAt = performance.now();
        }
      }
      sampling = false;
      await sampler;
      const after = rssMiB(pid);
      const pingAfter = await ping(config[name].socket, { timeoutMs: 10_000 });
      const refused = results.filter((r) => r === 'refused').length;
      const details = {
        service: name,
        budget: label,
        connections: CONNECTIONS,
        stalled: CONNECTIONS - refused,
        refused,
        beforeMiB: round(before),
        whileStalledMiB: round(stalledRss),
        peakMiB: round(peak),
        afterCloseMiB: round(after),
        settledAfterMs: Math.round(lowAt - closedAt),
        pingMaxMs: round(Math.max(...pings)),
        pings: pings.length,
        pingAfterMs: round(pingAfter),
        attackMs: Math.round(attackMs),
        samples: samples.filter((_, i) => i % 4 === 0),
      };
      record({ name: `stall.${name}.${label}.peak_rss`, value: peak, unit: 'MiB', details });
      record({
        name: `stall.${name}.${label}.rss_after_close`,
        value: after,
        unit: 'MiB',
        details: { beforeMiB: round(before), settledAfterMs: details.settledAfterMs },
      });
      record({ name: `stall.${name}.${label}.ping_max`, value: Math.max(...pings), unit: 'ms', details: { pings: pings.length } });
    } finally {
      await service.stop('SIGTERM');
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Runs the attack on mem and sys, with the default budget and with one that takes every frame. */
export async function run(): Promise<void> {
  for (const name of ['mem', 'sys'] as const) {
    await attack(name, 'default', undefined);
    await attack(name, 'unbounded', CONNECTIONS * FRAME_BYTES);
  }
}
