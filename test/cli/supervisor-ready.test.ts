/**
 * How `zino up` waits for its services (Supervisor.ready): it pings a service only once its socket file exists.
 * Until a service binds, a ping is a connect that fails, an error and its message, every 20 ms for each of the
 * seven, on the cores they are starting on (docs/benchmarks.md, round 14).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Supervisor } from '../../src/cli/up/supervisor.js';
import { SERVICE_NAMES, createLogger, serve, type ServiceName, type ZinoServer } from '../../src/runtime/index.js';

const dirs: string[] = [];
const servers: ZinoServer[] = [];

afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(servers.splice(0).map((s) => s.close()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function supervisorFor(dir: string): Supervisor {
  const sockets = Object.fromEntries(SERVICE_NAMES.map((name) => [name, path.join(dir, `${name}.sock`)])) as Record<ServiceName, string>;
  return new Supervisor({
    args: [],
    sockets,
    env: {},
    graceMs: 1000,
    onLog: () => undefined,
    relay: () => false,
    onNotice: () => undefined,
  });
}

/** Connections the process opened to a path in `dir`. */
function connectsInto(dir: string): () => number {
  const spy = vi.spyOn(net, 'createConnection');
  return () => spy.mock.calls.filter(([options]) => typeof options === 'object' && String((options as net.IpcNetConnectOpts).path).startsWith(dir)).length;
}

describe('Supervisor.ready', () => {
  it('does not connect to a socket that does not exist yet, and pings each once its service listens', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'zino-ready-'));
    dirs.push(dir);
    const connects = connectsInto(dir);
    const supervisor = supervisorFor(dir);

    // No service has bound: the wait runs out without a single connect attempt.
    await expect(supervisor.ready(150)).rejects.toThrow(/did not answer ping within 150 ms/);
    expect(connects()).toBe(0);

    const log = createLogger('test', { configLevel: 'silent' });
    for (const name of SERVICE_NAMES) servers.push(await serve(path.join(dir, `${name}.sock`), { log, handlers: {} }));
    await supervisor.ready(10_000);
    expect(connects()).toBeGreaterThanOrEqual(SERVICE_NAMES.length);
  });
});
