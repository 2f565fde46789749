/**
 * The units' readiness check (ExecStartPost=): it returns when the service's
 * socket answers ping, and fails when nothing answers within its bound.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitReady } from '../../src/deploy/wait-ready.js';
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

  it('exits 78 on a configuration error, like the service itself', () => {
    const { dir, cleanup } = tempDir('zwr');
    cleanups.push(cleanup);
    const file = path.join(dir, 'ZINO.toml');
    writeFileSync(file, '[sys]\nsocket = 5\n');
    const result = spawnSync(process.execPath, [SCRIPT, 'sys', file], { encoding: 'utf8' });
    expect(result.status).toBe(78);
    expect(result.stderr).toContain('[sys] socket must be a string');
  });
});
