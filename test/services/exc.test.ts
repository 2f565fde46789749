import { chmodSync, existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { request, type Frame } from '../../src/runtime/index.js';
import { detectSandbox } from '../../src/services/exc/sandbox.js';
import { startService, writeTestConfig, type ConfigOverrides, type StartedService } from '../../src/testing/suite.js';
import { processesMatching } from '../helpers/procs.js';
import { tempDir, waitFor } from '../helpers/util.js';

// The sandbox paths must run in CI (.ci/run installs bubblewrap); locally they need a working bwrap.
const BWRAP = detectSandbox('auto').active;
const sandboxIt = it.runIf(BWRAP || process.env.CI);

const started: { service: StartedService; cleanup: () => void }[] = [];
afterEach(async () => {
  for (const { service, cleanup } of started.splice(0)) {
    expect(await service.stop()).toEqual({ code: 0, signal: null });
    cleanup();
  }
});

async function exc(overrides: ConfigOverrides = {}, env: NodeJS.ProcessEnv = {}): Promise<{ service: StartedService; dir: string }> {
  const { dir, cleanup } = tempDir('zexc');
  // Without a sandbox every run is a host run: allowed here, as these tests are about running (approval has its own).
  const { file } = writeTestConfig(dir, { exc: { sandbox: 'none', timeout: 10 }, approval: { mode: 'allow' }, ...overrides });
  const service = await startService('exc', file, { env });
  started.push({ service, cleanup });
  return { service, dir };
}

function run(service: StartedService, executor: string, code: string, options: { signal?: AbortSignal } = {}): Promise<Frame> {
  return request(service.socket, { type: 'execute', executor, code }, { timeoutMs: 30_000, ...options });
}

/** A unique sleep duration, so the test can find exactly its own processes. */
function uniqueSleep(): string {
  return `1000.${Math.floor(Math.random() * 1e9)}`;
}

describe('exc capabilities', () => {
  it('lists the executors from tools/, the timeout and the sandbox', async () => {
    const { service } = await exc({ exc: { timeout: 12, sandbox: 'none' } });
    const caps = await request(service.socket, { type: 'capabilities' });
    expect(caps).toMatchObject({
      type: 'capabilities',
      timeout: 12,
      max_output_bytes: 1048576,
      sandbox: { mode: 'none', active: false },
      executors: {
        bash: {
          command: ['bash', '--noprofile', '--norc'],
          file_extension: '.sh',
          tool: 'execute_bash',
          static_analysis: expect.arrayContaining(['shellcheck']),
        },
        python3: { command: ['python3', '-u'], file_extension: '.py', tool: 'execute_python3', validator_available: true },
      },
    });
  });
});

describe('exc execute', () => {
  it('runs bash and returns stdout, stderr and the exit code', async () => {
    const { service } = await exc();
    expect(await run(service, 'bash', 'echo out; echo err >&2; exit 3')).toMatchObject({ type: 'result', exit_code: 3, stdout: 'out\n', stderr: 'err\n' });
  });

  it('runs python3', async () => {
    const { service } = await exc();
    expect(await run(service, 'python3', 'import sys\nprint(sum(range(10)))\nsys.exit(0)')).toMatchObject({ exit_code: 0, stdout: '45\n', stderr: '' });
  });

  it('runs a Python program that imports pdb and doctest once (regression: a file named code.py ran twice)', async () => {
    const { service } = await exc();
    expect(await run(service, 'python3', 'import doctest, pdb\nprint("charged the card")')).toMatchObject({ exit_code: 0, stdout: 'charged the card\n' });
  });

  it('reports a signal death as 128 + the signal number', async () => {
    const { service } = await exc();
    expect(await run(service, 'bash', 'kill -KILL $$')).toMatchObject({ exit_code: 137 });
  });

  it('answers an unknown executor with an error result and keeps serving', async () => {
    const { service } = await exc();
    expect(await run(service, 'cobol', 'DISPLAY "HI".')).toEqual({
      type: 'result',
      exit_code: 127,
      stdout: '',
      stderr: 'zino-exc: unknown executor "cobol" (available: bash, python3)',
    });
    expect(await request(service.socket, { type: 'ping' })).toEqual({ type: 'pong' });
  });

  it('runs each program in a fresh private working directory and removes it afterwards', async () => {
    const { service } = await exc();
    const first = await run(service, 'bash', 'pwd; stat -c %a .; ls -A; echo data > file.txt; mkdir -p locked/deep; chmod 000 locked');
    const [dir, mode, listing] = String(first.stdout).split('\n');
    expect(mode).toBe('700');
    expect(listing).toBe('zino_program.sh');
    expect(existsSync(dir ?? '')).toBe(false);
    const second = await run(service, 'bash', 'pwd; ls -A');
    expect(String(second.stdout).split('\n')[0]).not.toBe(dir);
    expect(String(second.stdout).split('\n')[1]).toBe('zino_program.sh');
  });

  it('gives the program none of its own environment (no API key)', async () => {
    const { service } = await exc({}, { LLM_API_KEY: 'sk-must-not-leak', ZINO_CONFIG: '/etc/secret.toml' });
    const result = await run(service, 'bash', 'env');
    expect(result.stdout).not.toContain('sk-must-not-leak');
    expect(result.stdout).not.toContain('ZINO_CONFIG');
    expect(result.stdout).toMatch(/^PATH=/m);
    expect(result.stdout).toMatch(/^HOME=\/tmp\/zino-exc-/m);
  });

  it('rejects a request without executor or code', async () => {
    const { service } = await exc();
    await expect(request(service.socket, { type: 'execute', code: 'ls' })).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: 'missing required field "executor"',
    });
    await expect(request(service.socket, { type: 'execute', executor: 'bash', code: ['ls'] })).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
  });

  it('runs static analysis first as a warning only', async () => {
    const { service } = await exc();
    const result = await run(service, 'bash', 'echo "$undefined_var" done');
    expect(result).toMatchObject({ exit_code: 0, stdout: ' done\n', validation: { ok: false, errors: expect.stringContaining('SC2154') } });
  });
});

/**
 * Waits until no `sleep <marker>` is left. exc answers once it has sent SIGKILL to
 * every leftover; a loaded machine may run the victim a moment later before it dies.
 * A process exc missed would sleep for 1000+ s, so this still fails then.
 */
async function allGone(marker: string): Promise<void> {
  await waitFor(() => processesMatching(`sleep ${marker}`).length === 0, `every "sleep ${marker}" to be gone`);
}

describe('exc limits', () => {
  it('kills the whole process group on timeout, backgrounded grandchildren included', async () => {
    const { service } = await exc({ exc: { timeout: 1, sandbox: 'none' } });
    const marker = uniqueSleep();
    const result = await run(service, 'bash', `sleep ${marker} & sleep ${marker}`);
    expect(result).toMatchObject({ exit_code: 124, timed_out: true, stderr: '[zino-exc: timed out after 1 s; the program was stopped]' });
    await allGone(marker);
  });

  it('kills a program that ignores SIGTERM after the grace period', async () => {
    const { service } = await exc({ exc: { timeout: 1, sandbox: 'none' } });
    const marker = uniqueSleep();
    const result = await run(service, 'bash', `trap '' TERM; sleep ${marker}`);
    expect(result).toMatchObject({ exit_code: 124, timed_out: true });
    await allGone(marker);
  });

  it('leaves nothing running after a normal exit, even processes that left the group', async () => {
    const { service } = await exc();
    const marker = uniqueSleep();
    const result = await run(service, 'bash', `sleep ${marker} & setsid sleep ${marker} & nohup sleep ${marker} >/dev/null 2>&1 & disown; echo spawned`);
    expect(result).toMatchObject({ exit_code: 0, stdout: 'spawned\n' });
    await allGone(marker);
  });

  it('kills the program when the caller disconnects', async () => {
    const { service } = await exc({ exc: { timeout: 60, sandbox: 'none' } });
    const marker = uniqueSleep();
    const controller = new AbortController();
    const pending = run(service, 'bash', `sleep ${marker} & sleep ${marker}`, { signal: controller.signal }).catch((e: unknown) => e);
    await waitFor(() => processesMatching(`sleep ${marker}`).length === 2, 'both sleeps to start');
    controller.abort();
    expect(await pending).toMatchObject({ code: 'CANCELLED' });
    await waitFor(() => processesMatching(`sleep ${marker}`).length === 0, 'the sleeps to be killed', 30_000);
    await waitFor(() => service.logs.some((l) => l.msg === 'request cancelled: client disconnected'), 'exc to log the cancellation');
  });

  it('caps a flood of stdout with a clear marker and stops the program', async () => {
    const { service } = await exc({ exc: { max_output_bytes: 65536, sandbox: 'none' } });
    const result = await run(service, 'bash', 'yes');
    expect(result.truncated).toBe(true);
    const stdout = String(result.stdout);
    expect(stdout.endsWith('\n[zino-exc: output truncated at 65536 bytes; the program was stopped]')).toBe(true);
    expect(stdout.length).toBeLessThanOrEqual(65536 + 80);
    expect(stdout.startsWith('y\ny\n')).toBe(true);
  });

  it('caps stderr too, without splitting a UTF-8 character', async () => {
    const { service } = await exc({ exc: { max_output_bytes: 1025, sandbox: 'none' } });
    const result = await run(service, 'python3', 'import sys\nwhile True: sys.stderr.write("€")');
    const stderr = String(result.stderr);
    expect(result.truncated).toBe(true);
    expect(stderr).toMatch(/^€+\n\[zino-exc: output truncated at 1025 bytes; the program was stopped\]$/);
    expect(stderr).not.toContain('\ufffd');
  });
});

describe('exc validate', () => {
  it('reports shellcheck findings and passes clean code', async () => {
    const { service } = await exc();
    const bad = await request(service.socket, { type: 'validate', executor: 'bash', code: 'rm -rf $dir/*' });
    expect(bad).toMatchObject({ type: 'validation', ok: false, errors: expect.stringMatching(/^zino_program\.sh:1:\d+: warning: .*SC2115/m) });
    expect(await request(service.socket, { type: 'validate', executor: 'bash', code: 'echo "hello"' })).toEqual({ type: 'validation', ok: true, errors: '' });
  });

  it('reports python syntax errors', async () => {
    const { service } = await exc();
    const bad = await request(service.socket, { type: 'validate', executor: 'python3', code: 'def f(:\n  pass' });
    expect(bad).toMatchObject({ ok: false, errors: expect.stringContaining('SyntaxError') });
  });

  it('is ok when no validator is configured or installed', async () => {
    const { dir: toolsRoot, cleanup } = tempDir('ztools');
    try {
      const tools = path.join(toolsRoot, 'tools');
      mkdirSync(tools);
      writeFileSync(path.join(tools, 'sh.json'), JSON.stringify({ meta: { executor: 'sh', file_extension: '.sh' } }));
      writeFileSync(
        path.join(tools, 'bash.json'),
        JSON.stringify({ meta: { executor: 'bash', file_extension: '.sh', static_analysis: 'no-such-linter-xyz' } }),
      );
      const { service } = await exc({ tools: { dir: tools } });
      expect(await request(service.socket, { type: 'validate', executor: 'sh', code: 'rm -rf $x/*' })).toEqual({ type: 'validation', ok: true, errors: '' });
      expect(await request(service.socket, { type: 'validate', executor: 'bash', code: 'rm -rf $x/*' })).toEqual({ type: 'validation', ok: true, errors: '' });
      expect(await request(service.socket, { type: 'capabilities' })).toMatchObject({ executors: { bash: { validator_available: false } } });
    } finally {
      cleanup();
    }
  });
});

describe('exc sandbox', () => {
  /** A TCP server on loopback that the code tries to reach. */
  async function listener(): Promise<{ port: number; close: () => Promise<void> }> {
    const server = net.createServer((s) => s.end('hello from the host\n'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return { port: (server.address() as net.AddressInfo).port, close: () => new Promise((r) => server.close(() => r())) };
  }
  const probe = (port: number) =>
    `import socket\ntry:\n    s = socket.create_connection(("127.0.0.1", ${port}), timeout=3)\n    print("reached:", s.recv(100).decode().strip())\nexcept OSError as e:\n    print("unreachable:", e)`;

  it('without the sandbox the code reaches the network', async () => {
    const { service } = await exc({ exc: { sandbox: 'none' } });
    const server = await listener();
    try {
      expect(await run(service, 'python3', probe(server.port))).toMatchObject({ stdout: 'reached: hello from the host\n', sandboxed: false });
    } finally {
      await server.close();
    }
  });

  sandboxIt('inside the sandbox the network is unreachable, the root read-only and /tmp private', async () => {
    const { service, dir } = await exc({ exc: { sandbox: 'auto' } });
    expect(await request(service.socket, { type: 'capabilities' })).toMatchObject({ sandbox: { mode: 'auto', active: true } });
    const server = await listener();
    try {
      const net = await run(service, 'python3', probe(server.port));
      expect(net).toMatchObject({ sandboxed: true, stdout: expect.stringMatching(/^unreachable: /) });
    } finally {
      await server.close();
    }
    const hostFile = path.join(dir, 'visible-on-host.txt');
    writeFileSync(hostFile, 'x');
    const fs = await run(
      service,
      'bash',
      `touch /etc/zino-was-here 2>&1 | grep -c "Read-only" ; ls ${hostFile} 2>&1 | grep -c "No such file"; echo ok > in-workdir.txt && cat in-workdir.txt`,
    );
    expect(fs.stdout).toBe('1\n1\nok\n');
    expect(existsSync('/etc/zino-was-here')).toBe(false);
  });

  sandboxIt('still kills grandchildren on timeout inside the sandbox', async () => {
    const { service } = await exc({ exc: { sandbox: 'bwrap', timeout: 1 } });
    const marker = uniqueSleep();
    expect(await run(service, 'bash', `sleep ${marker} & sleep ${marker}`)).toMatchObject({ exit_code: 124, timed_out: true, sandboxed: true });
    await allGone(marker);
  });

  it('refuses to execute when the sandbox is required but bubblewrap is missing, and falls back under auto', async () => {
    const { dir: binRoot, cleanup } = tempDir('zbin');
    try {
      // A PATH with bash and python3 but no bwrap; and one with bash alone.
      const link = (bin: string, tools: string[]): string => {
        mkdirSync(bin);
        for (const tool of tools) {
          const found = ['/usr/bin', '/bin', '/usr/local/bin'].map((d) => path.join(d, tool)).find((p) => existsSync(p));
          if (found) symlinkSync(found, path.join(bin, tool));
        }
        return bin;
      };
      // Open: in the landlock view the program runs as a run uid, which looks its command up in this PATH.
      chmodSync(binRoot, 0o755);
      const bin = link(path.join(binRoot, 'bin'), ['bash', 'python3', 'shellcheck']);
      const bashOnly = link(path.join(binRoot, 'bash-only'), ['bash']);
      const required = await exc({ exc: { sandbox: 'bwrap' } }, { PATH: bin });
      expect(await request(required.service.socket, { type: 'capabilities' })).toMatchObject({
        sandbox: { mode: 'bwrap', active: false, reason: '[exc] sandbox = "bwrap" but bubblewrap (bwrap) is not installed' },
      });
      await expect(run(required.service, 'bash', 'echo hi')).rejects.toMatchObject({
        code: 'NOT_CONFIGURED',
        message: '[exc] sandbox = "bwrap" but bubblewrap (bwrap) is not installed',
      });
      if (detectSandbox('landlock').active) {
        // Landlock needs no bubblewrap: auto takes that view.
        const landlock = await exc({ exc: { sandbox: 'auto' } }, { PATH: bin });
        expect(await request(landlock.service.socket, { type: 'capabilities' })).toMatchObject({
          sandbox: { mode: 'auto', active: true, view: 'landlock' },
        });
        expect(await run(landlock.service, 'bash', 'echo hi')).toMatchObject({ stdout: 'hi\n', sandboxed: true });
      }
      const auto = await exc({ exc: { sandbox: 'auto' } }, { PATH: bashOnly });
      expect(await request(auto.service.socket, { type: 'capabilities' })).toMatchObject({
        sandbox: {
          mode: 'auto',
          active: false,
          reason: 'running without a sandbox: bubblewrap (bwrap) is not installed; no landlock view: python3 is not installed',
        },
      });
      expect(await run(auto.service, 'bash', 'echo hi')).toMatchObject({ stdout: 'hi\n', sandboxed: false });
    } finally {
      cleanup();
    }
  });
});
