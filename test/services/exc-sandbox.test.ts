import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/runtime/index.js';
import { SANDBOX_UID, hiddenPaths, sandboxArgv, sandboxUser } from '../../src/services/exc/sandbox.js';
import { utf8Boundary, BoundedCapture } from '../../src/services/exc/capture.js';

let root: string;
beforeEach(() => {
  // Outside /tmp on purpose (paths under /tmp are private in the sandbox anyway), and not
  // under the checkout, which CI may have cloned into /tmp.
  root = mkdtempSync('/var/tmp/zino-hidden-');
  mkdirSync(path.join(root, 'run'), { recursive: true });
  mkdirSync(path.join(root, 'data', 'mem'), { recursive: true });
  writeFileSync(path.join(root, 'ZINO.toml'), '');
});
afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

describe('hiddenPaths', () => {
  it("hides ZINO's sockets, memory and config file from sandboxed code", () => {
    const { config } = resolveConfig({}, { file: null, baseDir: root, env: {}, dir: root });
    const hidden = hiddenPaths(config, path.join(root, 'ZINO.toml'));
    expect(hidden.dirs.sort()).toEqual([path.join(root, 'data', 'mem'), path.join(root, 'run')].sort());
    expect(hidden.files).toEqual([path.join(root, 'ZINO.toml')]);
  });

  it('skips paths that do not exist or sit under /tmp', () => {
    const { config } = resolveConfig({}, { file: null, baseDir: '/tmp/x', env: {}, dir: '/tmp/zino-nowhere' });
    expect(hiddenPaths(config, '/tmp/zino-nowhere/ZINO.toml')).toEqual({ dirs: [], files: [] });
  });
});

describe('sandboxArgv', () => {
  it('builds a bwrap command with no network, a read-only root, sized private /tmp and /dev/shm, read-only hiding, and the workdir', () => {
    const argv = sandboxArgv('/usr/bin/bwrap', '/tmp/zino-exc-1', ['bash', 'code.sh'], { dirs: ['/run/zino'], files: ['/etc/zino/ZINO.toml'] }, 4096);
    expect(argv.join(' ')).toBe(
      '/usr/bin/bwrap --die-with-parent --new-session --unshare-all --ro-bind / / --dev /dev --size 4096 --tmpfs /dev/shm --proc /proc --size 4096 --tmpfs /tmp ' +
        '--tmpfs /run/zino --remount-ro /run/zino --ro-bind /dev/null /etc/zino/ZINO.toml --bind /tmp/zino-exc-1 /tmp/zino-exc-1 --chdir /tmp/zino-exc-1 -- bash code.sh',
    );
  });
});

describe('sandboxUser', () => {
  it('runs sandboxed programs as nobody when exc is root, as exc itself otherwise', () => {
    expect(SANDBOX_UID).toBe(65534);
    expect(sandboxUser(0)).toEqual({ uid: 65534, gid: 65534 });
    expect(sandboxUser(1000)).toBeUndefined();
    expect(sandboxUser(65534)).toBeUndefined();
  });
});

describe('BoundedCapture', () => {
  it('keeps at most the limit and reports the overflow', () => {
    const capture = new BoundedCapture(5);
    expect(capture.push(Buffer.from('abc'))).toBe(true);
    expect(capture.push(Buffer.from('defg'))).toBe(false);
    expect(capture.text()).toBe('abcde');
    expect(capture.total).toBe(7);
  });

  it('never ends inside a multi-byte character', () => {
    const bytes = Buffer.from('a€🎉');
    expect(utf8Boundary(bytes.subarray(0, 2))).toBe(1);
    expect(utf8Boundary(bytes.subarray(0, 4))).toBe(4);
    expect(utf8Boundary(bytes.subarray(0, 6))).toBe(4);
    expect(utf8Boundary(bytes)).toBe(8);
  });
});
