import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/runtime/index.js';
import { SANDBOX_UID, hiddenPaths, reachableBy, sandboxArgv, sandboxUser } from '../../src/services/exc/sandbox.js';
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

  it('skips, for the sandbox user, paths a directory above them keeps it out of (bwrap as that user could not mount over them)', () => {
    const { config } = resolveConfig({}, { file: null, baseDir: root, env: {}, dir: root });
    const nobody = { uid: SANDBOX_UID, gid: SANDBOX_UID };
    const configFile = path.join(root, 'ZINO.toml');
    chmodSync(root, 0o755);
    expect(hiddenPaths(config, configFile, nobody).files).toEqual([configFile]);
    chmodSync(root, 0o700);
    expect(hiddenPaths(config, configFile, nobody)).toEqual({ dirs: [], files: [] });
    // Exc's own user (no runAs) still hides everything.
    expect(hiddenPaths(config, configFile).files).toEqual([configFile]);
  });
});

describe('reachableBy', () => {
  const nobody = { uid: SANDBOX_UID, gid: SANDBOX_UID };
  it('needs search permission on every directory above the path, by the bits that apply to the user', () => {
    const inner = path.join(root, 'data', 'mem');
    chmodSync(root, 0o755);
    expect(reachableBy(inner, nobody)).toBe(true);
    chmodSync(path.join(root, 'data'), 0o750);
    expect(reachableBy(inner, nobody)).toBe(false);
    expect(reachableBy(path.join(root, 'data'), nobody)).toBe(true);
    chmodSync(path.join(root, 'data'), 0o701);
    expect(reachableBy(inner, nobody)).toBe(true);
    chmodSync(root, 0o700);
    expect(reachableBy(inner, nobody)).toBe(false);
    expect(reachableBy(inner, { uid: 0, gid: 0 })).toBe(true);
  });

  it.runIf(process.geteuid?.() === 0)('uses the owner bits alone for the owner', () => {
    chownSync(root, SANDBOX_UID, SANDBOX_UID);
    chmodSync(root, 0o077);
    expect(reachableBy(path.join(root, 'data'), nobody)).toBe(false);
    chmodSync(root, 0o700);
    expect(reachableBy(path.join(root, 'data'), nobody)).toBe(true);
  });

  it('treats a missing directory on the way as a barrier', () => {
    expect(reachableBy(path.join(root, 'gone', 'deeper', 'x'), nobody)).toBe(false);
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
