/**
 * `zino up` with the HTTP front end enabled: it starts, the banner gives its URL and
 * token, an OpenAI client gets answers through it, `zino status` shows it, a crash
 * is restarted, and Ctrl-C stops it with the rest.
 */
import { statSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeTestConfig } from '../../src/testing/suite.js';
import { startSuite, type RunningSuite } from '../../src/testing/up.js';
import { runCli } from '../helpers/cli.js';
import { mockOverrides, useMockLlm } from '../helpers/mock.js';
import { processesMatching } from '../helpers/procs.js';
import { tempDir, waitFor } from '../helpers/util.js';

const llm = useMockLlm();
let suite: RunningSuite;
let file: string;
let dir: string;
let cleanup: () => void;
let port: number;

/** A port nobody listens on right now (the kernel's pick). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: free } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return free;
}

beforeAll(async () => {
  ({ dir, cleanup } = tempDir('zuph'));
  port = await freePort();
  ({ file } = writeTestConfig(dir, mockOverrides(llm.mock, { http: { enabled: true, listen: `127.0.0.1:${port}` } })));
  suite = await startSuite(file);
});

afterAll(async () => {
  const exit = await suite.interrupt();
  expect(exit).toEqual({ code: 0, signal: null });
  expect(processesMatching(`serve http --config ${file}`)).toEqual([]);
  cleanup();
});

describe('zino up with [http] enabled', () => {
  it('prints the URL and the token, which an OpenAI client can use', async () => {
    const out = suite.stdout();
    expect(out).toContain('all 7 services answer, and the HTTP endpoint listens');
    expect(out).toContain(`http:    http://127.0.0.1:${port}/v1`);
    const token = /token: +(\S+)/.exec(out)?.[1] ?? '';
    expect(token).toMatch(/^zino-[\w-]{43}$/);
    const tokenFile = path.join(dir, 'data', 'http.token');
    expect(out).toContain(`(from ${tokenFile})`);
    expect(statSync(tokenFile).mode & 0o777).toBe(0o640);

    llm.script({ rules: [{ reply: 'through zino up' }] });
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: token, maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: 'zino', messages: [{ role: 'user', content: 'hello' }] });
    expect(completion.choices[0]?.message.content).toBe('through zino up');
  });

  it('is shown by zino status', async () => {
    const text = await runCli(['status', '--config', file]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`HTTP: http://127.0.0.1:${port}/v1 answers (suite ok)`);
    const json = await runCli(['status', '--config', file, '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ http: { enabled: true, url: `http://127.0.0.1:${port}/v1`, reachable: true, health: 'ok' } });
  });

  it('is restarted when it crashes', async () => {
    const [pid] = processesMatching(`serve http --config ${file}`);
    expect(pid).toBeDefined();
    process.kill(pid as number, 'SIGKILL');
    await waitFor(() => processesMatching(`serve http --config ${file}`).some((p) => p !== pid), 'a new http process');
    await waitFor(
      () =>
        fetch(`http://127.0.0.1:${port}/healthz`).then(
          (res) => res.status === 200,
          () => false,
        ),
      'the endpoint to answer again',
    );
    await waitFor(
      () => suite.logs.some((l) => typeof l.raw === 'string' && /zino up: http crashed \(killed by SIGKILL\); restarting in/.test(l.raw)),
      'zino up to log the crash',
    );
  });
});

describe('zino status without the endpoint', () => {
  it('says it is off, and still exits 0 when the seven answer', async () => {
    const other = tempDir('zuph2');
    try {
      // The same sockets, [http] left at its default (off), on a port nobody listens on.
      const { file: plain } = writeTestConfig(other.dir, {
        ...Object.fromEntries(['daemon', 'rtr', 'agr', 'sys', 'exc', 'mem', 'ctx'].map((n) => [n, { socket: path.join(dir, 'run', `${n}.sock`) }])),
        http: { listen: `127.0.0.1:${await freePort()}` },
      });
      const result = await runCli(['status', '--config', plain]);
      expect(result.stdout).toContain('HTTP: off ([http] enabled = false');
      expect(result.code).toBe(0);
    } finally {
      other.cleanup();
    }
  });
});
