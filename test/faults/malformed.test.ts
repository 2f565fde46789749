/**
 * Malformed input, every service: 10,000 hostile inputs each, every one answered
 * with an error frame or a closed connection; the service never exits, answers ping
 * afterwards, and its memory stays bounded.
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { FrameDecoder, SERVICE_NAMES, ping, type Frame } from '../../src/runtime/index.js';
import { useFaultSuite, record, rssMiB } from './harness.js';
import { rng } from '../helpers/random.js';
import { CATEGORIES, hostile } from './hostile.js';

const INPUTS_PER_SERVICE = 10_000;
const CONCURRENCY = 16;
/**
 * Memory is bounded when it stops growing: V8 grows its heap to a working size during
 * the first few thousand inputs (about +60 MiB with the huge strings), then stays flat.
 * So the second half of the inputs may add little, and the total stays under a ceiling.
 */
const SECOND_HALF_GROWTH_MIB = 40;
const RSS_CEILING_MIB = 256;

const fs = useFaultSuite('zbad');

/** Sends bytes, half-closes, and collects frames until the server closes (or 30 s pass: a hang, not slowness). */
function send(socketPath: string, bytes: Buffer): Promise<{ frames: Frame[]; closed: boolean; protocolError?: string | undefined }> {
  return new Promise((resolve) => {
    const socket = net.createConnection({ path: socketPath, allowHalfOpen: true });
    const decoder = new FrameDecoder({ maxFrameBytes: 64 * 1024 * 1024 });
    const frames: Frame[] = [];
    let protocolError: string | undefined;
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ frames, closed: false });
    }, 30_000);
    socket.on('connect', () => socket.end(bytes));
    socket.on('data', (chunk: Buffer) => {
      try {
        frames.push(...decoder.pushAndReadAll(chunk));
      } catch (err) {
        protocolError = (err as Error).message;
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ frames, closed: true, protocolError });
    });
  });
}

describe.each(SERVICE_NAMES.map((s) => [s]))('%s under 10,000 hostile inputs', (service) => {
  it('answers every one with an error frame or a closed connection, keeps running, keeps its memory bounded', async () => {
    const socketPath = fs.socket(service);
    const pid = fs.pid(service);
    const rssBefore = rssMiB(pid);
    const random = rng(service.length * 7919 + 17);
    const answered: Record<string, number> = {};
    const failures: string[] = [];
    let next = 0;
    const started = Date.now();
    const worker = (until: number) => async (): Promise<void> => {
      while (next < until) {
        const n = next++;
        const input = hostile(service, n, random, 16 * 1024 * 1024);
        const result = await send(socketPath, input.bytes);
        const ok =
          result.closed &&
          result.protocolError === undefined &&
          (result.frames.length === 0 || (result.frames.length === 1 && result.frames[0]?.type === 'error' && typeof result.frames[0]?.message === 'string'));
        if (ok) answered[input.category] = (answered[input.category] ?? 0) + 1;
        else if (failures.length < 5) failures.push(`${input.category}: ${JSON.stringify(result).slice(0, 300)}`);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker(INPUTS_PER_SERVICE / 2)));
    const rssHalfway = rssMiB(pid);
    await Promise.all(Array.from({ length: CONCURRENCY }, worker(INPUTS_PER_SERVICE)));
    const seconds = (Date.now() - started) / 1000;
    expect(failures).toEqual([]);
    expect(Object.values(answered).reduce((a, b) => a + b, 0)).toBe(INPUTS_PER_SERVICE);
    for (const category of CATEGORIES) expect(answered[category], category).toBeGreaterThan(0);
    // Still the same process (it never exited), still answering.
    expect(fs.pid(service)).toBe(pid);
    await ping(socketPath);
    const rssAfter = rssMiB(pid);
    record(`malformed.${service}.inputs`, INPUTS_PER_SERVICE);
    record(`malformed.${service}.seconds`, Math.round(seconds * 10) / 10, 's');
    record(`malformed.${service}.rss_before`, rssBefore, 'MiB');
    record(`malformed.${service}.rss_halfway`, rssHalfway, 'MiB');
    record(`malformed.${service}.rss_after`, rssAfter, 'MiB');
    expect(rssAfter - rssHalfway).toBeLessThan(SECOND_HALF_GROWTH_MIB);
    expect(rssAfter).toBeLessThan(RSS_CEILING_MIB);
  });
});
