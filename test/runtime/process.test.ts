import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { request } from '../../src/runtime/index.js';
import { startProcess, waitForPing, type RunningProcess } from '../../src/testing/process.js';
import { tempDir, waitFor } from '../helpers/util.js';

const FIXTURE = path.join(__dirname, '../fixtures/service.mjs');
let dir: string;
let cleanup: () => void;
let proc: RunningProcess | undefined;

beforeEach(() => {
  ({ dir, cleanup } = tempDir('zproc'));
});
afterEach(async () => {
  await proc?.stop('SIGKILL');
  proc = undefined;
  cleanup();
});

async function startFixture(graceMs = 10_000): Promise<string> {
  const socketPath = path.join(dir, 'run', 'fixture.sock');
  proc = startProcess(FIXTURE, [socketPath, String(graceMs)]);
  await waitForPing(socketPath, { proc });
  return socketPath;
}

describe('a service process', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('on %s finishes the in-flight request, removes its socket and exits 0', async (signal) => {
    const socketPath = await startFixture();
    const reply = request(socketPath, { type: 'sleep', ms: 400 });
    await waitFor(() => proc!.logs.some((l) => l.msg === 'sleep started'), 'the request to start');
    const exit = proc!.stop(signal);
    expect(await reply).toEqual({ type: 'result', slept: 400 });
    expect(await exit).toEqual({ code: 0, signal: null });
    expect(existsSync(socketPath)).toBe(false);
    expect(proc!.logs.map((l) => l.msg)).toEqual(expect.arrayContaining(['listening', 'shutting down', 'stopped']));
  });

  it('cancels a request that outlives the shutdown grace and still exits 0', async () => {
    const socketPath = await startFixture(200);
    const reply = request(socketPath, { type: 'sleep', ms: 60_000 }).catch((err: unknown) => err);
    await waitFor(() => proc!.logs.some((l) => l.msg === 'sleep started'), 'the request to start');
    const exit = await proc!.stop('SIGTERM');
    expect(await reply).toMatchObject({ code: 'SHUTTING_DOWN' });
    expect(exit).toEqual({ code: 0, signal: null });
    expect(existsSync(socketPath)).toBe(false);
  });

  it('queues a burst of 1,000 connections while it cannot accept, instead of refusing them with EAGAIN', async () => {
    // Regression: with Node's default backlog of 511, connections beyond it failed at once with EAGAIN
    // whenever the service was busy. The process is stopped, so only the kernel's accept queue holds them.
    const socketPath = await startFixture();
    proc!.child.kill('SIGSTOP');
    const sockets: net.Socket[] = [];
    try {
      const outcomes = await Promise.all(
        Array.from(
          { length: 1000 },
          () =>
            new Promise<string>((resolve) => {
              const socket = net.createConnection({ path: socketPath });
              sockets.push(socket);
              socket.once('connect', () => resolve('connected'));
              socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
            }),
        ),
      );
      expect(outcomes.filter((o) => o !== 'connected')).toEqual([]);
    } finally {
      for (const socket of sockets) socket.destroy();
      proc!.child.kill('SIGCONT');
    }
    expect(await request(socketPath, { type: 'ping' })).toEqual({ type: 'pong' });
  });

  it('runs the reload hook on SIGHUP and keeps serving', async () => {
    const socketPath = await startFixture();
    proc!.child.kill('SIGHUP');
    await waitFor(() => proc!.logs.some((l) => l.msg === 'reload hook ran'), 'the reload hook');
    expect(await request(socketPath, { type: 'ping' })).toEqual({ type: 'pong' });
  });

  it('writes JSON log lines with the service name on stderr', async () => {
    await startFixture();
    // Ping may answer before the 'listening' line has reached us through the pipe.
    const listening = await waitFor(() => proc!.logs.find((l) => l.msg === 'listening'), 'the listening line');
    expect(listening).toMatchObject({ service: 'fixture', level: 'info', pid: proc!.child.pid });
    expect(typeof listening?.time).toBe('string');
  });
});
