/**
 * Typed messages: handlers and callers are typed from one table per service. The
 * `@ts-expect-error` lines are the proof that a wrong reply, a wrong progress frame,
 * a field the message does not have, or a wrong request body does not compile
 * (`tsc -p tsconfig.test.json` fails if any of them does compile).
 */
import net from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ERROR_CODES,
  Endpoint,
  RemoteError,
  ZinoError,
  bindHandlers,
  encodeFrame,
  errorFrame,
  message,
  isErrorCode,
  requireString,
  type HandlersOf,
  type MessageHandler,
} from '../../src/runtime/index.js';
import { AGR } from '../../src/protocol/agr.js';
import { DAEMON } from '../../src/protocol/daemon.js';
import { MEM } from '../../src/protocol/mem.js';
import { RTR } from '../../src/protocol/rtr.js';
import { tempDir } from '../helpers/util.js';

/** A peer that answers any request with `frames`, written as they are (no framing checks of ours). */
async function fakePeer(frames: object[]): Promise<{ socket: string; close: () => void }> {
  const { dir, cleanup } = tempDir('ztyped');
  const socket = path.join(dir, 'peer.sock');
  const server = net.createServer((conn) => {
    conn.once('data', () => conn.end(Buffer.concat(frames.map((f) => encodeFrame(f)))));
  });
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  return { socket, close: () => server.close(() => cleanup()) };
}
const peers: (() => void)[] = [];
afterEach(() => {
  for (const close of peers.splice(0)) close();
});

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

  it('reject at compile time a message table that leaves out a reply type', () => {
    interface Ask {
      type: 'q';
    }
    interface A {
      type: 'a';
    }
    interface B {
      type: 'b';
    }
    const complete = message<Ask, A | B>('q', { a: true, b: true });
    // @ts-expect-error the reply "b" is missing from the table
    const incomplete = message<Ask, A | B>('q', { a: true });
    expect(complete.replies).toEqual(['a', 'b']);
    expect(incomplete.replies).toEqual(['a']);
  });

  it("route every message by its wire type, and the daemon's ask as the untyped request", () => {
    const handlers: HandlersOf<typeof DAEMON> = {
      ask: () => ({ type: 'response', content: 'hi' }),
      status: () => ({ type: 'status', version: 'x', services: {} }),
      approve: () => ({ type: 'ok' }),
      approvals: () => ({ type: 'approvals', pending: [] }),
    };
    const bound = bindHandlers(DAEMON)(handlers);
    expect(Object.keys(bound.handlers)).toEqual(['status', 'approve', 'approvals']);
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
    await expect(mem.request('get_soft', {})).rejects.toMatchObject({
      code: 'UPSTREAM_UNAVAILABLE',
      detail: { phase: 'connect', errno: 'ENOENT', service: 'mem' },
    });
  });
});

describe('replies from peers that are not ZINO', () => {
  it("take a contract rtr's capabilities reply, which has no type", async () => {
    const peer = await fakePeer([{ streaming: true, model: 'contract-model' }]);
    peers.push(peer.close);
    const rtr = new Endpoint(RTR, peer.socket);
    expect(await rtr.request('capabilities', {})).toEqual({ type: 'capabilities', streaming: true, model: 'contract-model' });
  });

  it('reject a one-frame call with the remote error, or with UPSTREAM_ERROR for a frame its message does not answer with', async () => {
    const failing = await fakePeer([{ type: 'error', code: 'INVALID_REQUEST', message: 'field "channel_id" is missing' }]);
    const wrong = await fakePeer([{ type: 'chunk', delta: 'a' }]);
    peers.push(failing.close, wrong.close);
    const error = await new Endpoint(MEM, failing.socket).request('get_soft', {}).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(RemoteError);
    expect(error).toMatchObject({ code: 'INVALID_REQUEST', message: 'field "channel_id" is missing' });
    await expect(new Endpoint(MEM, wrong.socket, { name: 'mem' }).request('get_soft', {})).rejects.toMatchObject({
      code: 'UPSTREAM_ERROR',
      message: 'mem answered get_soft with a frame of type "chunk"',
    });
  });

  it('fail a stream of a message the protocol does not have when it is first read, not when it is made', async () => {
    const rtr = new Endpoint(RTR, '/nonexistent/rtr.sock', { name: 'rtr' });
    // @ts-expect-error rtr has no message "forget"
    const frames = rtr.stream('forget', {});
    await expect(frames.next()).rejects.toMatchObject({ code: 'INTERNAL', message: 'rtr has no message "forget"' });
  });

  it('skip a progress frame without a type, and make a malformed error frame well-formed', async () => {
    const peer = await fakePeer([{ type: 'chunk', delta: 'a' }, { note: 'no type' }, { type: 'error', message: 42, code: 'MADE_UP', detail: 'x' }]);
    peers.push(peer.close);
    const frames: unknown[] = [];
    for await (const frame of new Endpoint(RTR, peer.socket).stream('infer', { messages: [], temperature: 0, top_p: 1, stream: true })) frames.push(frame);
    expect(frames).toEqual([
      { type: 'chunk', delta: 'a' },
      { type: 'error', message: 'remote error', code: 'UPSTREAM_ERROR' },
    ]);
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
    expect(frame).toEqual({
      type: 'error',
      message: 'cannot connect',
      code: 'UPSTREAM_UNAVAILABLE',
      detail: { phase: 'connect', errno: 'ECONNREFUSED', service: 'mem' },
    });
    const remote = new RemoteError(JSON.parse(JSON.stringify(frame)) as Record<string, unknown>);
    expect(remote).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', detail: { phase: 'connect', errno: 'ECONNREFUSED', service: 'mem' } });
  });

  it('leave detail off when there is none, and drop malformed remote detail', () => {
    expect(errorFrame(new ZinoError('TIMEOUT', 'slow'))).toEqual({ type: 'error', message: 'slow', code: 'TIMEOUT' });
    expect(new RemoteError({ type: 'error', message: 'x', code: 'TIMEOUT', detail: { phase: 'nowhere', errno: 5 } }).detail).toEqual({});
    expect(new RemoteError({ type: 'error', message: 'x', code: 'MADE_UP' }).code).toBe('UPSTREAM_ERROR');
  });
});
