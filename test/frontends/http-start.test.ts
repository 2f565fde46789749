/**
 * Starting and stopping `zino serve http`: configuration refused with exit 78, an
 * address in use with 73, the token read again on SIGHUP, and SIGTERM letting an
 * answer in progress finish before exiting 0.
 */
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import type { ServiceName } from '../../src/runtime/index.js';
import { startHttpFrontEnd } from '../../src/testing/http.js';
import { CLI_PATH } from '../../src/testing/paths.js';
import { startProcess } from '../../src/testing/process.js';
import { writeTestConfig, type ConfigOverrides, type ServiceGroup } from '../../src/testing/suite.js';
import { startWithMock, useMockLlm } from '../helpers/mock.js';
import { tempDir, waitFor } from '../helpers/util.js';

const llm = useMockLlm();
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A config file in a fresh temp dir. */
function configFile(overrides: ConfigOverrides): { file: string; dir: string } {
  const { dir, cleanup } = tempDir('zhs');
  cleanups.push(cleanup);
  return { file: writeTestConfig(dir, overrides).file, dir };
}

/** Runs `zino serve http` until it exits; returns the exit status and its log. */
async function serveUntilExit(file: string): Promise<{ code: number | null; logs: Record<string, unknown>[] }> {
  const proc = startProcess(CLI_PATH, ['serve', 'http', '--config', file]);
  const { code } = await proc.exited;
  return { code, logs: proc.logs };
}

describe('zino serve http refuses to start', () => {
  it('on a non-loopback address unless allow_non_loopback, and on a listen it cannot read (exit 78)', async () => {
    for (const [listen, reason] of [
      ['0.0.0.0:8088', /is not a loopback address: set \[http\] allow_non_loopback = true/],
      ['somewhere:80', /is not an IP address or localhost/],
      ['127.0.0.1', /must be "host:port"/],
    ] as const) {
      const { code, logs } = await serveUntilExit(configFile({ http: { listen } }).file);
      expect(code, listen).toBe(78);
      expect(String(logs.find((l) => l.msg === 'cannot start')?.reason)).toMatch(reason);
    }
  });

  it('with a token file holding a short token (exit 78)', async () => {
    const { file, dir } = configFile({ http: { listen: '127.0.0.1:0', token_file: 'short.token' } });
    writeFileSync(`${dir}/short.token`, 'abc\n');
    const { code, logs } = await serveUntilExit(file);
    expect(code).toBe(78);
    expect(String(logs.find((l) => l.msg === 'cannot start')?.reason)).toContain('at least 16 characters');
  });

  it('when something else listens on its address (exit 73, which systemd and zino up do not restart)', async () => {
    const other = net.createServer();
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => other.close(() => resolve())));
    const { port } = other.address() as net.AddressInfo;
    const { code, logs } = await serveUntilExit(configFile({ http: { listen: `127.0.0.1:${port}` } }).file);
    expect(code).toBe(73);
    expect(String(logs.find((l) => l.msg === 'cannot start')?.reason)).toContain('already in use');
  });
});

describe('a running zino serve http', () => {
  it('reads its token file again on SIGHUP', async () => {
    const { file, dir } = configFile({ http: { listen: '127.0.0.1:0' } });
    const http = await startHttpFrontEnd(file);
    cleanups.push(async () => void (await http.stop()));
    const models = (token: string): Promise<number> => fetch(`${http.baseUrl}/models`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);
    expect(await models(http.token)).toBe(200);
    writeFileSync(`${dir}/data/http.token`, 'a-brand-new-token-for-the-test\n');
    http.child.kill('SIGHUP');
    await waitFor(async () => (await models('a-brand-new-token-for-the-test')) === 200, 'the new token to be accepted');
    expect(await models(http.token)).toBe(401);
  });

  it('on SIGTERM lets an answer in progress finish, then exits 0', async () => {
    const names: ServiceName[] = ['mem', 'sys', 'ctx', 'rtr', 'exc', 'agr', 'daemon'];
    const started = await startWithMock(llm.mock, names, 'zhst', { http: { listen: '127.0.0.1:0' } });
    const group: ServiceGroup = started.group;
    cleanups.push(started.cleanup, async () => void (await group.stop()));
    const http = await startHttpFrontEnd(group.file);
    cleanups.push(async () => void (await http.stop()));
    llm.script({ rules: [{ reply: 'one two three four five six seven eight', chunkSize: 4, delayMs: 30 }] });
    const client = new OpenAI({ baseURL: http.baseUrl, apiKey: http.token, maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: 'zino', stream: true, messages: [{ role: 'user', content: 'count' }] });
    let text = '';
    let signalled = false;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (!signalled && text !== '') {
        signalled = true;
        http.child.kill('SIGTERM');
      }
    }
    expect(text).toBe('one two three four five six seven eight');
    expect(await http.exited).toEqual({ code: 0, signal: null });
    await waitFor(() => http.logs.some((l) => l.msg === 'shutting down'), 'the front end to log its shutdown');
  });
});
