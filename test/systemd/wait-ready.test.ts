/**
 * The units' readiness check (ExecStartPost=): it returns when the service's
 * socket answers ping, and fails when nothing answers within its bound.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main, waitReady } from '../../src/deploy/wait-ready.js';
import { PACKAGE_ROOT } from '../../src/testing/paths.js';
import { startService, writeTestConfig, type StartedService } from '../../src/testing/suite.js';
import { tempDir } from '../helpers/util.js';

const SCRIPT = path.join(PACKAGE_ROOT, 'dist', 'src', 'deploy', 'wait-ready.js');
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('wait-ready', () => {
  it('gives up when nothing answers within the bound', async () => {
    const { dir, cleanup } = tempDir('zwr');
    cleanups.push(cleanup);
    const started = Date.now();
    expect(await waitReady(path.join(dir, 'none.sock'), 300, 20)).toBe(false);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
  });

  it('exits 0 once the service named in the config answers ping', async () => {
    const { dir, cleanup } = tempDir('zwr');
    cleanups.push(cleanup);
    const { file } = writeTestConfig(dir);
    const service: StartedService = await startService('sys', file);
    cleanups.push(async () => {
      expect(await service.stop()).toEqual({ code: 0, signal: null });
    });
    const result = spawnSync(process.execPath, [SCRIPT, 'sys', file], { encoding: 'utf8' });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('on a configuration error waits for the service to fail with 78 itself, then exits 78', async () => {
    const { dir, cleanup } = tempDir('zwr');
    cleanups.push(cleanup);
    const file = path.join(dir, 'ZINO.toml');
    writeFileSync(file, '[sys]\nsocket = 5\n');
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    cleanups.push(() => stderr.mockRestore());
    const started = Date.now();
    expect(await main(['sys', file], 200)).toBe(78);
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
    expect(String(stderr.mock.calls[0]?.[0])).toContain('[sys] socket must be a string');
  });
});
