/** Shared set-up of the mem integration tests: a temp dir, a config, real `zino serve mem` processes. */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { RemoteError, ZinoError, request, type Frame } from '../../src/runtime/index.js';
import { startService, writeTestConfig, type StartedService } from '../../src/testing/suite.js';
import { tempDir } from '../helpers/util.js';

/** One test's mem environment. */
export interface MemEnv {
  dir: string;
  dataDir: string;
  configFile: string;
  /** Starts a mem process (stopped by {@link MemEnv.stopAll}). */
  start(): Promise<StartedService>;
  /** Sends one request to the last started mem; an error frame resolves as the frame. */
  call(frame: Frame): Promise<Frame>;
  stopAll(): Promise<void>;
  cleanup(): void;
}

/** Makes a fresh environment. */
export function memEnv(prefix = 'zmem'): MemEnv {
  const { dir, cleanup } = tempDir(prefix);
  const dataDir = path.join(dir, 'data', 'mem');
  const { file } = writeTestConfig(dir);
  const procs: StartedService[] = [];
  return {
    dir,
    dataDir,
    configFile: file,
    async start() {
      const proc = await startService('mem', file);
      procs.push(proc);
      return proc;
    },
    async call(frame) {
      const proc = procs.at(-1);
      if (!proc) throw new Error('mem not started');
      const deadline = Date.now() + 30_000;
      for (let wait = 5; ; wait = Math.min(wait * 2, 200)) {
        try {
          return await request(proc.socket, frame, { timeoutMs: 30_000 });
        } catch (err) {
          if (err instanceof RemoteError) return err.frame;
          // A full accept queue (EAGAIN): mem never took the connection, so trying again
          // cannot store anything twice. A loaded machine gets there with 1,000 clients at once.
          if (err instanceof ZinoError && err.code === 'UPSTREAM_UNAVAILABLE' && /EAGAIN/.test(err.message) && Date.now() < deadline) {
            await new Promise((r) => setTimeout(r, wait));
            continue;
          }
          throw err;
        }
      }
    },
    async stopAll() {
      await Promise.all(procs.splice(0).map((p) => p.stop('SIGKILL')));
    },
    cleanup,
  };
}

/** Every file under `root`, relative, sorted. */
export function listFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (rel: string): void => {
    for (const name of readdirSync(path.join(root, rel))) {
      const child = path.join(rel, name);
      if (statSync(path.join(root, child)).isDirectory()) walk(child);
      else out.push(child);
    }
  };
  walk('');
  return out.sort();
}

/** A user message. */
export const user = (content: string): { role: string; content: string } => ({ role: 'user', content });
/** An assistant message. */
export const assistant = (content: string): { role: string; content: string } => ({ role: 'assistant', content });

/** Every line of a file parses as JSON and the file ends with a newline. */
export function expectWholeLines(file: string): void {
  const text = readFileSync(file, 'utf8');
  expect(text.endsWith('\n')).toBe(true);
  for (const line of text.slice(0, -1).split('\n')) expect((): unknown => JSON.parse(line)).not.toThrow();
}

/** What {@link appendUntilKilled} saw: when each key was sent and when acknowledged, on one logical clock. */
export interface AppendRun {
  sent: Map<string, number>;
  acked: Map<string, number>;
}

/**
 * `clients` clients each append `perClient` exchanges to `channel`, one after another
 * (user `c<c>s<s>`, assistant `reply(key, s)`); mem is SIGKILLed once half of them are
 * acknowledged. Resolves once every client has stopped and mem has died of the SIGKILL.
 */
export async function appendUntilKilled(
  mem: StartedService,
  channel: string,
  clients: number,
  perClient: number,
  reply: (key: string, s: number) => string,
): Promise<AppendRun> {
  let clock = 0;
  const sent = new Map<string, number>();
  const acked = new Map<string, number>();
  let killed = false;
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let s = 0; s < perClient; s++) {
        const key = `c${c}s${s}`;
        sent.set(key, clock++);
        try {
          await request(mem.socket, { type: 'append_history', channel_id: channel, messages: [user(key), assistant(reply(key, s))] });
        } catch {
          return; // mem is gone: this and later requests of the client are not acknowledged
        }
        acked.set(key, clock++);
        if (acked.size >= Math.floor((clients * perClient) / 2) && !killed) {
          killed = true;
          mem.child.kill('SIGKILL');
        }
      }
    }),
  );
  expect(await mem.exited).toEqual({ code: null, signal: 'SIGKILL' });
  return { sent, acked };
}

/**
 * Checks a history read back after {@link appendUntilKilled}: each exchange whole and
 * stored once, every acknowledged one there, one acknowledged before another was sent
 * stored before it, and each client's in the order sent. Returns the keys as stored.
 */
export function expectAcknowledgedHistory(
  messages: readonly { role: string; content: string }[],
  run: AppendRun,
  clients: number,
  reply: (key: string, s: number) => string,
): string[] {
  expect(messages.length % 2).toBe(0);
  const keys: string[] = [];
  for (let i = 0; i < messages.length; i += 2) {
    const key = messages[i]!.content;
    expect(messages[i + 1]).toEqual(assistant(reply(key, Number(key.split('s')[1]))));
    keys.push(key);
  }
  expect(new Set(keys).size).toBe(keys.length);
  for (const key of run.acked.keys()) expect(keys).toContain(key);
  // Acknowledged before another was sent → stored before it.
  const position = new Map(keys.map((k, i) => [k, i]));
  for (const [a, ackedAt] of run.acked) {
    for (const b of keys) if ((run.sent.get(b) as number) > ackedAt) expect(position.get(a) as number).toBeLessThan(position.get(b) as number);
  }
  // Per client: stored in the order sent.
  for (let c = 0; c < clients; c++) {
    const seq = keys.filter((k) => k.startsWith(`c${c}s`)).map((k) => Number(k.split('s')[1]));
    expect(seq).toEqual([...seq].sort((x, y) => x - y));
  }
  return keys;
}
