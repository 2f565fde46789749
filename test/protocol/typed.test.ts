/**
 * Typed messages: handlers and callers are typed from one table per service. The
 * `@ts-expect-error` lines are the proof that a wrong reply, a wrong progress frame,
 * a field the message does not have, or a wrong request body does not compile
 * (`tsc -p tsconfig.test.json` fails if any of them does compile).
 */
import { describe, expect, it } from 'vitest';
import {
  ERROR_CODES,
  Endpoint,
  RemoteError,
  ZinoError,
  bindHandlers,
  errorFrame,
  isErrorCode,
  requireString,
  type HandlersOf,
  type MessageHandler,
} from '../../src/runtime/index.js';
import { AGR } from '../../src/protocol/agr.js';
import { DAEMON } from '../../src/protocol/daemon.js';
import { MEM } from '../../src/protocol/mem.js';

describe('typed handlers', () => {
  it('reject at compile time a reply, a progress frame or a field their message does not have', () => {
    // A correct handler compiles.
    const good: MessageHandler<typeof MEM.get_soft> = () => ({ type: 'soft_memory', content: '' });
    // @ts-expect-error get_soft answers soft_memory, not ok
    const wrongType: MessageHandler<typeof MEM.get_soft> = () => ({ type: 'ok' });
    // @ts-expect-error soft_memory needs its content
    const missingField: MessageHandler<typeof MEM.get_soft> = () => ({ type: 'soft_memory' });
    // @ts-expect-error store_hard answers an id that is a number
    const wrongField: MessageHandler<typeof MEM.store_hard> = () => ({ type: 'ok', id: 'seven' });
    const progress: MessageHandler<typeof AGR.run> = async (_request, ctx) => {
      await ctx.send({ type: 'chunk', delta: 'text' });
      // @ts-expect-error run has no progress frame of type "surprise"
      await ctx.send({ type: 'surprise' });
      return { type: 'result', content: '', iterations: 1 };
    };
    const readsUndeclared: MessageHandler<typeof MEM.set_soft> = (request) => {
      // @ts-expect-error set_soft has no field "contents" (only "content")
      requireString(request, 'contents');
      return { type: 'ok' };
    };
    expect([good, wrongType, missingField, wrongField, progress, readsUndeclared]).toHaveLength(6);
  });

  it('route every message by its wire type, and the daemon\'s ask as the untyped request', () => {
    const handlers: HandlersOf<typeof DAEMON> = {
      ask: () => ({ type: 'response', content: 'hi' }),
      status: () => ({ type: 'status', version: 'x', services: {} }),
    };
    const bound = bindHandlers(DAEMON)(handlers);
    expect(Object.keys(bound.handlers)).toEqual(['status']);
    expect(bound.untyped).toBe(handlers.ask);
  });

  it('refuse to bind a table with a message that has no handler', () => {
    // The type already forbids it; a table built at run time could still try.
    const partial = { status: () => ({ type: 'status', version: 'x', services: {} }) } as unknown as HandlersOf<typeof DAEMON>;
    expect(() => bindHandlers(DAEMON)(partial)).toThrow(/no handler for message "ask"/);
  });
});

describe('typed calls', () => {
  it('take the request body of their message and nothing else', () => {
    const mem = new Endpoint(MEM, '/nonexistent/mem.sock');
    const calls = [
      () => mem.request('get_history', { channel_id: 'c', limit: 5 }),
      // @ts-expect-error get_history needs a channel_id
      () => mem.request('get_history', { limit: 5 }),
      // @ts-expect-error mem has no message "forget"
      () => mem.request('forget', {}),
    ];
    expect(calls).toHaveLength(3);
  });

  it('reject with UPSTREAM_UNAVAILABLE, phase connect and the errno when nothing listens', async () => {
    const mem = new Endpoint(MEM, '/nonexistent/mem.sock', { name: 'mem' });
    await expect(mem.request('get_soft', {})).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', detail: { phase: 'connect', errno: 'ENOENT', service: 'mem' } });
  });
});

describe('error codes and detail', () => {
  it('derive the code union and its guard from one list', () => {
    for (const code of ERROR_CODES) expect(isErrorCode(code)).toBe(true);
    expect(isErrorCode('NOT_A_CODE')).toBe(false);
    expect(new Set(ERROR_CODES).size).toBe(ERROR_CODES.length);
  });

  it('carry detail on the wire and back', () => {
    const frame = errorFrame(new ZinoError('UPSTREAM_UNAVAILABLE', 'cannot connect', { detail: { phase: 'connect', errno: 'ECONNREFUSED', service: 'mem' } }));
    expect(frame).toEqual({ type: 'error', message: 'cannot connect', code: 'UPSTREAM_UNAVAILABLE', detail: { phase: 'connect', errno: 'ECONNREFUSED', service: 'mem' } });
    const remote = new RemoteError(JSON.parse(JSON.stringify(frame)) as Record<string, unknown>);
    expect(remote).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', detail: { phase: 'connect', errno: 'ECONNREFUSED', service: 'mem' } });
  });

  it('leave detail off when there is none, and drop malformed remote detail', () => {
    expect(errorFrame(new ZinoError('TIMEOUT', 'slow'))).toEqual({ type: 'error', message: 'slow', code: 'TIMEOUT' });
    expect(new RemoteError({ type: 'error', message: 'x', code: 'TIMEOUT', detail: { phase: 'nowhere', errno: 5 } }).detail).toEqual({});
    expect(new RemoteError({ type: 'error', message: 'x', code: 'MADE_UP' }).code).toBe('UPSTREAM_ERROR');
  });
});
