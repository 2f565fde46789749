/**
 * Every start-up failure ends with a message naming the path, the right exit code,
 * and never a spin (issue 13, point 9). `[mem] data_dir` under /proc made Node's
 * recursive mkdir loop forever at full CPU, deaf to SIGTERM; a data dir that is a
 * file exited 1 (a crash to restart) instead of 78; `--dir FILE` was reported as
 * "another ZINO suite uses these sockets". Each case runs the real CLI; a spin is
 * SIGKILLed by spawnSync's timeout and fails the test instead of hanging it.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CLI_PATH } from '../../src/testing/paths.js';
import { tempDir } from '../helpers/util.js';

let dir: string;
let cleanup: () => void;
beforeEach(() => ({ dir, cleanup } = tempDir('zstart')));
afterEach(() => cleanup());

const NOBODY = 65534;
/** Root, and `nobody` can run the CLI from this checkout: the EACCES case runs mem as nobody. */
const AS_NOBODY = process.geteuid?.() === 0 && spawnSync('runuser', ['-u', 'nobody', '--', 'test', '-r', CLI_PATH]).status === 0;

/** Runs `zino ...args`; a process still alive after 30 s is SIGKILLed (signal 'SIGKILL', status null). */
function zino(args: string[], ids: { uid?: number; gid?: number } = {}): { status: number | null; signal: NodeJS.Signals | null; stderr: string } {
  const result = spawnSync(process.execPath, [CLI_PATH, ...args], {
    ...ids,
    encoding: 'utf8',
    timeout: 30_000,
    killSignal: 'SIGKILL',
    cwd: dir,
    env: { ...process.env, ZINO_CONFIG: '', ZINO_DIR: '' },
  });
  return { status: result.status, signal: result.signal, stderr: result.stderr };
}

/** `zino serve mem` with `data_dir` and a socket in the temp directory. */
function serveMem(dataDir: string, socket = path.join(dir, 'mem.sock')): ReturnType<typeof zino> {
  const file = path.join(dir, 'ZINO.toml');
  writeFileSync(file, `[mem]\ndata_dir = ${JSON.stringify(dataDir)}\nsocket = ${JSON.stringify(socket)}\n`);
  return zino(['serve', 'mem', '--config', file]);
}

describe('start-up failures', () => {
  it('[mem] data_dir under /proc exits 78 naming the path instead of spinning', () => {
    const result = serveMem('/proc/zino-test/data');
    expect(result.signal).toBeNull();
    expect(result.stderr).toContain('[mem] data_dir /proc/zino-test/data cannot be used');
    expect(result.status).toBe(78);
  });

  it('[mem] data_dir under /sys (EPERM) exits 78 naming the path', () => {
    const result = serveMem('/sys/zino-test/data');
    expect(result.signal).toBeNull();
    expect(result.stderr).toContain('[mem] data_dir /sys/zino-test/data cannot be used');
    expect(result.status).toBe(78);
  });

  it.each([
    ['is a regular file', (file: string) => file],
    ['lies under a regular file (ENOTDIR)', (file: string) => path.join(file, 'data')],
  ])('[mem] data_dir that %s exits 78 naming the path', (_name, dataDir) => {
    const file = path.join(dir, 'plain-file');
    writeFileSync(file, 'not a directory\n');
    const result = serveMem(dataDir(file));
    expect(result.stderr).toContain(`[mem] data_dir ${dataDir(file)} cannot be used`);
    expect(result.stderr).toContain('ENOTDIR');
    expect(result.status).toBe(78);
  });

  it.runIf(AS_NOBODY)('[mem] data_dir its user may not create (EACCES) exits 78 naming the path', () => {
    chmodSync(dir, 0o755);
    const locked = path.join(dir, 'locked');
    mkdirSync(locked, { mode: 0o700 });
    const run = path.join(dir, 'run');
    mkdirSync(run);
    chownSync(run, NOBODY, NOBODY);
    const file = path.join(dir, 'ZINO.toml');
    writeFileSync(file, `[mem]\ndata_dir = "${locked}/data"\nsocket = "${run}/mem.sock"\n`, { mode: 0o644 });
    const result = zino(['serve', 'mem', '--config', file], { uid: NOBODY, gid: NOBODY });
    expect(result.stderr).toContain(`[mem] data_dir ${locked}/data cannot be used`);
    expect(result.stderr).toContain('EACCES');
    expect(result.status).toBe(78);
  });

  it('a socket path longer than sun_path exits 78 naming the key and the path', () => {
    const socket = path.join(dir, `${'s'.repeat(120)}.sock`);
    const result = serveMem(path.join(dir, 'data'), socket);
    expect(result.stderr).toContain('[mem] socket is');
    expect(result.stderr).toContain(socket);
    expect(result.status).toBe(78);
  });

  it('a socket directory under /proc exits 78 naming the socket', () => {
    const result = serveMem(path.join(dir, 'data'), '/proc/zino-test/mem.sock');
    expect(result.signal).toBeNull();
    expect(result.stderr).toContain('/proc/zino-test/mem.sock');
    expect(result.status).toBe(78);
  });

  it.each([['serve', 'mem'], ['up']])('`zino %s --dir FILE` says FILE is not a directory (exit 78)', (...command) => {
    const file = path.join(dir, 'plain-file');
    writeFileSync(file, 'not a directory\n');
    const result = zino([...command, '--dir', file]);
    expect(result.stderr).toContain(`--dir ${file} is not a directory`);
    expect(result.stderr).not.toContain('another ZINO suite');
    expect(result.status).toBe(78);
  });

  it('a --dir whose run sockets would be too long exits 78 naming --dir', () => {
    const long = path.join(dir, 'd'.repeat(100));
    const result = zino(['serve', 'mem', '--dir', long]);
    expect(result.stderr).toContain(`[daemon] socket (from --dir/$ZINO_DIR ${long})`);
    expect(result.status).toBe(78);
  });
});
