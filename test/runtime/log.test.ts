import { describe, expect, it } from 'vitest';
import { isoTime, normaliseLevel, redactSecrets } from '../../src/runtime/index.js';
import { createLogger } from '../../src/runtime/index.js';
import { Writable } from 'node:stream';

function capture(env: NodeJS.ProcessEnv, configLevel?: string) {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _e, done) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  const log = createLogger('mem', { env, configLevel, destination });
  return { log, lines };
}

describe('createLogger', () => {
  it('takes the level from ZINO_LOG_LEVEL before [logging] level, and info by default', () => {
    expect(capture({ ZINO_LOG_LEVEL: 'debug' }, 'error').log.level).toBe('debug');
    expect(capture({}, 'error').log.level).toBe('error');
    expect(capture({}).log.level).toBe('info');
  });

  it("accepts Python's level names in any case", () => {
    expect(capture({ ZINO_LOG_LEVEL: 'WARNING' }).log.level).toBe('warn');
    expect(capture({}, 'CRITICAL').log.level).toBe('fatal');
    expect(normaliseLevel('Info')).toBe('info');
    expect(normaliseLevel('verbose')).toBeUndefined();
  });

  it('warns about an unknown level and falls back', () => {
    const { log, lines } = capture({ ZINO_LOG_LEVEL: 'loud' }, 'debug');
    expect(log.level).toBe('debug');
    expect(lines[0]).toMatchObject({ level: 'warn', msg: 'ZINO_LOG_LEVEL is not a log level; ignored', value: 'loud' });
  });

  it('writes JSON lines with the service name, and children carry request_id', () => {
    const { log, lines } = capture({});
    log.child({ request_id: 'r1', type: 'get_history' }).info({ channel: 'c' }, 'request done');
    expect(lines[0]).toMatchObject({ service: 'mem', level: 'info', request_id: 'r1', type: 'get_history', channel: 'c', msg: 'request done' });
  });

  it("logs an error's class as written, also one the bundle names after esbuild's inner class name", () => {
    // What esbuild emits without keepNames for a class that refers to itself (the openai SDK's APIError).
    const APIError = class _APIError extends Error {
      static make(): Error {
        return new _APIError('the endpoint answered 500');
      }
    };
    class ZinoLikeError extends Error {}
    const { log, lines } = capture({});
    log.error({ err: APIError.make() }, 'failed');
    log.error({ err: new ZinoLikeError('x') }, 'failed');
    expect(APIError.name).toBe('_APIError');
    expect(lines.map((l) => (l.err as { type: string }).type)).toEqual(['APIError', 'ZinoLikeError']);
  });

  it('never writes an API key', () => {
    const { log, lines } = capture({});
    const fields = {
      key: 'sk-secret',
      api_key: 'sk-secret-b',
      apiKey: 'sk-secret-c',
      api: { key: 'sk-secret2', base_url: 'http://127.0.0.1:1/v1' },
      provider: { api_key: 'sk-secret3', name: 'openrouter' },
      headers: { authorization: 'Bearer sk-secret4', accept: 'text/event-stream' },
      count: 3,
    };
    const before = JSON.stringify(fields);
    log.info(fields, 'configured');
    const child = log.child({ request_id: 'r1' });
    child.error({ err: Object.assign(new Error('refused'), { key: 'sk-secret5' }), other: { key: 'sk-secret6', apiKey: 'sk-secret7' } }, 'failed');
    // Something not error-like under `err` is written as it is, censored, and left as it was.
    const notAnError = { key: 'sk-secret8', base_url: 'x' };
    log.warn({ err: notAnError }, 'odd');
    log.warn({ err: null }, 'odder');
    expect(notAnError.key).toBe('sk-secret8');
    expect(JSON.stringify(lines)).not.toContain('sk-secret');
    expect(lines[0]).toMatchObject({
      key: '[redacted]',
      api_key: '[redacted]',
      apiKey: '[redacted]',
      api: { key: '[redacted]', base_url: 'http://127.0.0.1:1/v1' },
      provider: { api_key: '[redacted]', name: 'openrouter' },
      headers: { authorization: '[redacted]', accept: 'text/event-stream' },
      count: 3,
    });
    expect(lines[1]).toMatchObject({ err: { message: 'refused', key: '[redacted]' }, other: { key: '[redacted]', apiKey: '[redacted]' }, request_id: 'r1' });
    expect(lines[2]).toMatchObject({ err: { key: '[redacted]', base_url: 'x' }, msg: 'odd' });
    expect(lines[3]).toMatchObject({ err: null, msg: 'odder' });
    // What was logged is left as it was.
    expect(JSON.stringify(fields)).toBe(before);
  });

  it('leaves a line without secrets as it is, the very object', () => {
    const fields = { examples: 8, missing: [], nested: { role: 'user' }, headers: { accept: 'x' }, nothing: null };
    expect(redactSecrets(fields)).toBe(fields);
  });

  it("writes the time as pino's isoTime does", () => {
    // Across second and millisecond boundaries, in order and out of it (the second is cached).
    const times = [0, 1, 9, 10, 99, 100, 999, 1000, 1_764_384_465_123, 1_764_384_465_999, 1_764_384_466_000, 1_764_384_465_007, 951_782_400_000 - 1];
    for (const now of times) expect(isoTime(now)).toBe(`,"time":"${new Date(now).toISOString()}"`);
    const { log, lines: written } = capture({});
    log.info('now');
    expect(written[0]?.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });
});
