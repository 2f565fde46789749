/**
 * The Landlock view's launcher (src/services/exc/landlock/zino-sandbox.py) on its
 * own: which paths its walk grants (`--dry-run`, over a temp tree), what each of its
 * layers refuses without the others (Landlock's TCP rule without the seccomp
 * filter), exit statuses, and clear refusals of bad arguments. Through exc it is
 * tested in test/faults/sandbox-landlock.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detectSandbox, landlockLauncher } from '../../src/services/exc/sandbox.js';
import { which } from '../../src/services/exc/which.js';
import { countingListener } from '../helpers/views.js';

const PYTHON = which('python3');
const LANDLOCK = detectSandbox('landlock').active;

function launch(args: string[], input?: string): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(PYTHON as string, ['-I', '-S', '-B', landlockLauncher(), ...args], { encoding: 'utf8', input: input ?? '', timeout: 30_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe.runIf(PYTHON)('the allowlist walk (--dry-run)', () => {
  let root: string;
  beforeAll(() => {
    // root/
    //   work/            the working directory: every right
    //   zino/            ancestor of hidden paths: walked into
    //     data/          hidden
    //     run/           hidden
    //     ZINO.toml      hidden file
    //     notes.txt      a sibling: granted on its own
    //     logs/          a sibling directory: granted whole
    //     link -> data   a symlink: skipped
    //   zino-exc-1-a/    another run's working directory (prefix): hidden
    //   other.txt        granted on its own (root/ is walked: the prefix's directory)
    root = mkdtempSync(path.join(tmpdir(), 'zll-walk-'));
    for (const dir of ['work', 'zino/data', 'zino/run', 'zino/logs', 'zino-exc-1-a']) mkdirSync(path.join(root, dir), { recursive: true });
    for (const file of ['zino/ZINO.toml', 'zino/notes.txt', 'zino/data/mem.jsonl', 'other.txt']) writeFileSync(path.join(root, file), 'x');
    symlinkSync(path.join(root, 'zino/data'), path.join(root, 'zino/link'));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const rules = (): Map<string, string> => {
    const zino = path.join(root, 'zino');
    const { status, stdout, stderr } = launch([
      ...['--workdir', path.join(root, 'work'), '--dry-run'],
      ...['--hide', path.join(zino, 'data'), '--hide', path.join(zino, 'run'), '--hide', path.join(zino, 'ZINO.toml')],
      ...['--hide-prefix', path.join(root, 'zino-exc-'), '--'],
    ]);
    expect(status, stderr).toBe(0);
    const map = new Map<string, string>();
    for (const line of stdout.split('\n').slice(1).filter(Boolean)) {
      const space = line.indexOf(' ');
      map.set(line.slice(space + 1), line.slice(0, space));
    }
    return map;
  };

  it('grants read and execute on every sibling of a hidden path, and on nothing hidden, above or linked', () => {
    const map = rules();
    const under = [...map.keys()].filter((p) => p.startsWith(`${root}/`)).sort();
    expect(under).toEqual([path.join(root, 'other.txt'), path.join(root, 'work'), path.join(root, 'zino/logs'), path.join(root, 'zino/notes.txt')]);
    expect(map.get(path.join(root, 'zino/logs'))).toBe('execute,read_file');
    expect(map.get(path.join(root, 'zino/notes.txt'))).toBe('execute,read_file');
    // Ancestors are walked, never granted whole (that would grant what they hide).
    for (const ancestor of ['/', path.dirname(root), root, path.join(root, 'zino')]) expect(map.has(ancestor)).toBe(false);
  });

  it('gives the working directory every handled right and /dev/null read and write, not READ_DIR anywhere', () => {
    const map = rules();
    const work = map.get(path.join(root, 'work')) ?? '';
    for (const right of ['read_file', 'write_file', 'execute', 'remove_file', 'remove_dir', 'make_reg', 'make_dir', 'make_sym']) expect(work).toContain(right);
    expect(map.get('/dev/null')).toMatch(/^write_file,read_file/);
    expect([...map.values()].some((r) => r.includes('read_dir'))).toBe(false);
    // Entries of / that hide nothing are granted whole.
    expect(map.get('/usr')).toBe('execute,read_file');
    expect(map.get('/etc')).toBe('execute,read_file');
  });
});

describe.runIf(PYTHON && LANDLOCK)('the launcher', () => {
  let work: string;
  beforeAll(() => {
    work = mkdtempSync(path.join(tmpdir(), 'zll-run-'));
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it("exits with the program's status, 128 + N for a signal, 127 when it is not found", () => {
    expect(launch(['--workdir', work, '--', 'sh', '-c', 'exit 3']).status).toBe(3);
    expect(launch(['--workdir', work, '--', 'sh', '-c', 'kill -TERM $$']).status).toBe(128 + 15);
    const missing = launch(['--workdir', work, '--', 'zino-no-such-program']);
    expect(missing).toMatchObject({ status: 127, stderr: 'zino-sandbox: zino-no-such-program: command not found\n' });
  });

  it('refuses TCP by Landlock alone (no seccomp filter given), while the listener is there', async () => {
    const listener = await countingListener();
    try {
      const port = listener.port;
      const code = `import socket\ntry:\n    socket.create_connection(("127.0.0.1", ${port}), timeout=5)\n    print("reached")\nexcept OSError as e:\n    print("denied", e.errno)`;
      const result = spawnSync(PYTHON as string, ['-I', '-S', '-B', landlockLauncher(), '--workdir', work, '--', PYTHON as string, '-c', code], {
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(result.stdout).toBe('denied 13\n');
      expect(listener.accepted()).toBe(0);
    } finally {
      await listener.close();
    }
  });

  it('refuses bad arguments with one clear line and status 125', () => {
    const cases: [string[], string][] = [
      [['--', 'true'], '--workdir is required'],
      [['--workdir', work], 'no "--" before the program'],
      [['--workdir', work, 'true'], "unknown option 'true'"],
      [['--workdir', 'relative', '--', 'true'], '--workdir must be an absolute path'],
      [['--workdir', work, '--bogus', '--', 'true'], "unknown option '--bogus'"],
      [['--workdir', work, '--user', 'x:y', '--', 'true'], "--user must be UID:GID[:GID,...] (not root, not -1), got 'x:y'"],
      [['--workdir', work, '--user', '-1:-1', '--', 'true'], "--user must be UID:GID[:GID,...] (not root, not -1), got '-1:-1'"],
      [['--workdir', work, '--user', '0:0', '--', 'true'], "--user must be UID:GID[:GID,...] (not root, not -1), got '0:0'"],
      [['--workdir', work, '--grace-ms', '-1', '--', 'true'], "--grace-ms must be a number, got '-1'"],
      [['--workdir', work, '--'], 'no program after --'],
      [['--workdir', work, '--seccomp-fd', '0', '--', 'true'], 'the seccomp filter is 3 bytes'],
    ];
    for (const [args, message] of cases) {
      const result = launch(args, 'abc');
      expect(result.status, args.join(' ')).toBe(125);
      expect(result.stderr.startsWith(`zino-sandbox: ${message}`), result.stderr).toBe(true);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
    }
  });
});
