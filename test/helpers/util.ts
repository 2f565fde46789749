/** Small helpers shared by the tests: temp dirs, captured loggers, polling, a closed port. */
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/runtime/index.js';

/** A fresh directory with a short path (socket paths must stay under 107 bytes). */
export function tempDir(prefix = 'zt'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), `${prefix}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A logger whose JSON lines are kept in `lines` instead of printed. */
export function captureLogger(service = 'test', level = 'debug'): { log: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const log = createLogger(service, { env: { ZINO_LOG_LEVEL: level }, destination: sink });
  return { log, lines };
}

/** What a truthy check returned. */
type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>;

/**
 * Polls `check` until it returns a truthy value or `timeoutMs` passes (then throws with
 * `what`). The default deadline is generous on purpose: on a healthy machine the state
 * comes in milliseconds, and on a loaded one the test should wait, not fail.
 */
export async function waitFor<T>(check: () => T | Promise<T>, what: string, timeoutMs = 30_000, intervalMs = 10): Promise<Truthy<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as Truthy<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** A promise with its resolve function outside, to gate a handler on the test's say-so. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** A loopback port nobody listens on (bound once, then released). */
export async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}
