/** Shared set-up of the mem integration tests: a temp dir, a config, real `zino serve mem` processes. */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
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
