/**
 * The fault suite's harness: a mock LLM and a whole suite under `zino up` in a
 * temp dir; finding a service's pid; reading its RSS; recording figures for
 * docs/reliability.md (as JSON lines in $ZINO_RELIABILITY_REPORT when it is set).
 */
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { ping, type ServiceName } from '../../src/runtime/index.js';
import { startMockLlm, type MockLlm } from '../../src/testing/mock-llm/server.js';
import type { MockScript } from '../../src/testing/mock-llm/script.js';
import { writeTestConfig, type ConfigOverrides } from '../../src/testing/suite.js';
import { startSuite, type RunningSuite } from '../../src/testing/up.js';
import { mockOverrides } from '../helpers/mock.js';
import { processesMatching } from '../helpers/procs.js';
import { tempDir, waitFor } from '../helpers/util.js';

/** A running suite with its mock. */
export interface FaultSuite {
  mock: MockLlm;
  suite: RunningSuite;
  dir: string;
  file: string;
  socket(name: ServiceName): string;
  /** The pid of the running `zino serve <name>`. */
  pid(name: ServiceName): number;
  script(value: MockScript): void;
  /** Waits (up to 30 s by default) until `name` answers ping again; returns how long that took from `since` (ms), a figure to record. */
  waitUntilBack(name: ServiceName, since: number, timeoutMs?: number): Promise<number>;
  close(): Promise<void>;
}

/** Starts the mock and `zino up` in a fresh temp dir. */
export async function startFaultSuite(prefix: string, overrides: ConfigOverrides = {}): Promise<FaultSuite> {
  const mock = await startMockLlm();
  const { dir, cleanup } = tempDir(prefix);
  const { file } = writeTestConfig(dir, mockOverrides(mock, overrides));
  const suite = await startSuite(file, { env: { ZINO_LOG_LEVEL: 'warn' } });
  const socket = (name: ServiceName): string => path.join(dir, 'run', `${name}.sock`);
  return {
    mock,
    suite,
    dir,
    file,
    socket,
    pid(name) {
      const [pid] = processesMatching(`serve ${name} --config ${file}`);
      if (pid === undefined) throw new Error(`${name} is not running`);
      return pid;
    },
    script(value) {
      mock.reset(value);
    },
    async waitUntilBack(name, since, timeoutMs = 30_000) {
      await waitFor(
        async () =>
          ping(socket(name), { timeoutMs: 500 }).then(
            () => true,
            () => false,
          ),
        `${name} to answer ping again`,
        timeoutMs,
        5,
      );
      return Date.now() - since;
    },
    async close() {
      const exit = await suite.interrupt();
      await mock.close();
      cleanup();
      if (exit.code !== 0) throw new Error(`zino up exited with ${JSON.stringify(exit)}`);
    },
  };
}

/**
 * Starts a fault suite before this file's tests and closes it after them. The
 * returned object is valid inside tests and hooks (it forwards to the running suite).
 */
export function useFaultSuite(prefix: string, overrides: ConfigOverrides = {}): FaultSuite {
  let running: FaultSuite | undefined;
  beforeAll(async () => {
    running = await startFaultSuite(prefix, overrides);
  });
  afterAll(async () => {
    await running?.close();
  });
  const get = (): FaultSuite => {
    if (!running) throw new Error('the fault suite is not started yet');
    return running;
  };
  return {
    get mock() {
      return get().mock;
    },
    get suite() {
      return get().suite;
    },
    get dir() {
      return get().dir;
    },
    get file() {
      return get().file;
    },
    socket: (name) => get().socket(name),
    pid: (name) => get().pid(name),
    script: (value) => get().script(value),
    waitUntilBack: (name, since, timeoutMs) => get().waitUntilBack(name, since, timeoutMs),
    close: () => get().close(),
  };
}

/** Resident set size of `pid` in MiB. */
export function rssMiB(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Math.round((Number(kb) / 1024) * 10) / 10;
}

/** Records a figure for docs/reliability.md. */
export function record(name: string, value: number | string, unit = ''): void {
  const file = process.env.ZINO_RELIABILITY_REPORT;
  if (file) appendFileSync(file, `${JSON.stringify({ name, value, unit })}\n`);
}
