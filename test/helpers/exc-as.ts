/**
 * A real exc started as root or as an ordinary user (uid 65534, from a copy of the
 * package that user can read), in a directory outside /tmp: the sandbox tests
 * (test/faults/sandbox-*.test.ts) run their programs through it and compare what
 * they see with what the test sees.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CLI_ENTRY, ping, request, type Frame } from '../../src/runtime/index.js';
import type { SandboxMode } from '../../src/runtime/index.js';
import { CLI_PATH, PACKAGE_ROOT } from '../../src/testing/paths.js';
import { writeTestConfig } from '../../src/testing/suite.js';
import { waitFor } from './util.js';

export const NOBODY = 65534;

/** Where a copy of the package `nobody` can read lives: the checkout when it is readable, else an installed copy. */
export function packageForNobody(): { cli: string; root: string; cleanup: () => void } {
  const readable = spawnSync('runuser', ['-u', 'nobody', '--', 'test', '-r', CLI_PATH]).status === 0;
  const toolsReadable = spawnSync('runuser', ['-u', 'nobody', '--', 'test', '-r', path.join(PACKAGE_ROOT, 'tools', 'bash.json')]).status === 0;
  const launcherReadable =
    spawnSync('runuser', ['-u', 'nobody', '--', 'test', '-r', path.join(PACKAGE_ROOT, 'dist/src/services/exc/landlock/zino-sandbox.py')]).status === 0;
  if (readable && toolsReadable && launcherReadable) return { cli: CLI_PATH, root: PACKAGE_ROOT, cleanup: () => undefined };
  const dir = mkdtempSync(path.join(tmpdir(), 'zesc-pkg-'));
  chmodSync(dir, 0o755);
  const prefix = '/opt/zino';
  const install = spawnSync(process.execPath, [CLI_PATH, 'install-systemd', '--root', dir, '--prefix', prefix, '--node', process.execPath], {
    encoding: 'utf8',
    env: { ...process.env, ZINO_CONFIG: '', ZINO_DIR: '' },
  });
  if (install.status !== 0) throw new Error(`cannot install a copy for nobody: ${install.stdout}${install.stderr}`);
  const root = path.join(dir, prefix);
  return { cli: path.join(root, CLI_ENTRY), root, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A running exc, its directory (outside /tmp, so its paths are hidden rather than merely private) and a host /tmp marker. */
export interface Exc {
  dir: string;
  file: string;
  socket: string;
  child: ChildProcess;
  tmpMarker: string;
  stop(): Promise<void>;
}

/** How to start it. */
export interface ExcOptions {
  /** exc's directory is 0700, as a checkout under root's home (or CI's /check) is: the sandbox user cannot enter it. */
  closed?: boolean;
  /** @default "bwrap" */
  sandbox?: SandboxMode;
  /** `[exc] timeout`, seconds. @default 20 */
  timeout?: number;
  /** Written as `[api] key`, and into `DIR/root-only.txt` (0600 root): no program may read it. */
  secret: string;
}

export async function startExc(as: 'self' | 'nobody', options: ExcOptions): Promise<Exc> {
  const pkg = as === 'nobody' ? packageForNobody() : { cli: CLI_PATH, root: PACKAGE_ROOT, cleanup: () => undefined };
  const dir = mkdtempSync('/var/tmp/zesc-');
  const { file } = writeTestConfig(dir, {
    api: { base_url: 'http://127.0.0.1:9', key: options.secret },
    exc: { sandbox: options.sandbox ?? 'bwrap', timeout: options.timeout ?? 20 },
    tools: { dir: path.join(pkg.root, 'tools') },
    skills: { dir: path.join(pkg.root, 'skills') },
    sys: { template: path.join(pkg.root, 'SYSTEM.md') },
  });
  // A file only root may read, next to the config (not hidden: the uid must keep it out).
  writeFileSync(path.join(dir, 'root-only.txt'), options.secret, { mode: 0o600 });
  chmodSync(dir, options.closed ? 0o700 : 0o755);
  if (as === 'nobody') {
    chownSync(dir, NOBODY, NOBODY);
    chownSync(file, NOBODY, NOBODY);
  }
  const tmpMarker = path.join(tmpdir(), `zesc-host-tmp-${process.pid}-${Math.floor(Math.random() * 1e9)}`);
  writeFileSync(tmpMarker, 'x');
  const socket = path.join(dir, 'run', 'exc.sock');
  const ids = as === 'nobody' ? { uid: NOBODY, gid: NOBODY } : {};
  const child = spawn(process.execPath, [pkg.cli, 'serve', 'exc', '--config', file], {
    ...ids,
    cwd: '/',
    env: { ...process.env, ZINO_LOG_LEVEL: 'warn', ZINO_CONFIG: '', ZINO_DIR: '' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const cleanup = (): void => {
    rmSync(dir, { recursive: true, force: true });
    rmSync(tmpMarker, { force: true });
    pkg.cleanup();
  };
  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`exc exited with ${child.exitCode}: ${stderr}`);
        return ping(socket, { timeoutMs: 500 }).then(
          () => true,
          () => false,
        );
      },
      `exc (${as}) to answer ping`,
      30_000,
      50,
    );
  } catch (err) {
    child.kill('SIGKILL');
    await exited;
    cleanup();
    throw err;
  }
  return {
    dir,
    file,
    socket,
    child,
    tmpMarker,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      cleanup();
    },
  };
}

/** One `execute` through `exc`'s socket. */
export function executeIn(exc: Pick<Exc, 'socket'>, executor: string, code: string, signal?: AbortSignal): Promise<Frame> {
  return request(exc.socket, { type: 'execute', executor, code }, { timeoutMs: 60_000, ...(signal ? { signal } : {}) });
}
