import { describe, expect, it } from 'vitest';
import { normaliseLevel } from '../../src/runtime/index.js';
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
    log.info({ key: 'sk-secret', api: { key: 'sk-secret2' } }, 'configured');
    expect(JSON.stringify(lines)).not.toContain('sk-secret');
  });
});
