import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { request } from '../../src/runtime/index.js';
import { appendUntilKilled, assistant, expectAcknowledgedHistory, expectWholeLines, memEnv, user, type MemEnv } from './mem-helpers.js';

let env: MemEnv;
beforeEach(() => {
  env = memEnv('zdur');
});
afterEach(async () => {
  await env.stopAll();
  env.cleanup();
});

describe('mem: crash safety', () => {
  it('loses no acknowledged message when SIGKILLed during 1,000 concurrent appends, and keeps acknowledged order', async () => {
    const mem = await env.start();
    const CLIENTS = 50;
    const reply = (key: string): string => `re ${key}`;
    const run = await appendUntilKilled(mem, 'crash', CLIENTS, 20, reply);
    expect(run.acked.size).toBeGreaterThanOrEqual(500);

    await env.start();
    const { messages } = (await env.call({ type: 'get_history', channel_id: 'crash' })) as unknown as { messages: { role: string; content: string }[] };
    expectAcknowledgedHistory(messages, run, CLIENTS, reply);
    expectWholeLines(path.join(env.dataDir, 'history', 'crash.jsonl'));
  });

  it('loses no acknowledged append or store when SIGKILLed with 1,000 requests in flight at once', async () => {
    const mem = await env.start();
    const acked: string[] = [];
    const ids: number[] = [];
    const stores = new Map<number, number>();
    let killed = false;
    const kill = (): void => {
      if (!killed && acked.length + ids.length >= 300) {
        killed = true;
        mem.child.kill('SIGKILL');
      }
    };
    await Promise.all(
      Array.from({ length: 1000 }, async (_, i) => {
        try {
          if (i % 4 === 3) {
            const reply = await request(mem.socket, { type: 'store_hard', messages: [user(`memory ${i}`)], tag: `t${i}` });
            ids.push(reply.id as number);
            stores.set(i, reply.id as number);
          } else {
            await request(mem.socket, { type: 'append_history', channel_id: `ch${i % 3}`, messages: [user(`m${i}`)] });
            acked.push(`m${i}`);
          }
          kill();
        } catch {
          // not acknowledged
        }
      }),
    );
    await mem.exited;
    await env.start();
    const stored = new Set<string>();
    for (let ch = 0; ch < 3; ch++) {
      const reply = (await env.call({ type: 'get_history', channel_id: `ch${ch}` })) as unknown as { messages: { content: string }[] };
      for (const m of reply.messages) {
        expect(stored.has(m.content)).toBe(false);
        stored.add(m.content);
      }
    }
    for (const key of acked) expect(stored.has(key)).toBe(true);
    // Every acknowledged hard memory id is there and searchable; the next id follows the last stored one.
    expect(ids.length).toBeGreaterThan(0);
    for (const [i, id] of stores) {
      const reply = await env.call({ type: 'search_hard', query: `t${i}`, top_k: 1 });
      expect(reply.results).toMatchObject([{ id, tag: `t${i}`, messages: [user(`memory ${i}`)] }]);
    }
    const next = await env.call({ type: 'store_hard', messages: [user('after the crash')] });
    expect(next.id as number).toBeGreaterThanOrEqual(ids.length === 0 ? 0 : Math.max(...ids) + 1);
    expectWholeLines(path.join(env.dataDir, 'hard_memories.jsonl'));
  });

  it('drops a torn last history line with a warning, keeps the earlier lines, and starts the next append on a fresh line', async () => {
    const file = path.join(env.dataDir, 'history', 'torn.jsonl');
    mkdirSync(path.dirname(file), { recursive: true });
    const good = [[user('one')], [assistant('two')], [user('three'), assistant('four')]];
    writeFileSync(file, good.map((m) => `${JSON.stringify({ m })}\n`).join(''));
    appendFileSync(file, '{"m":[{"role":"user","content":"half wri');
    const mem = await env.start();
    expect(await env.call({ type: 'get_history', channel_id: 'torn' })).toEqual({ type: 'history', messages: good.flat() });
    const warning = mem.logs.find((l) => l.msg === 'torn last line dropped');
    expect(warning).toMatchObject({ level: 'warn', file, droppedBytes: 40 });
    expect(await env.call({ type: 'append_history', channel_id: 'torn', messages: [user('five')] })).toEqual({ type: 'ok' });
    expect(await env.call({ type: 'get_history', channel_id: 'torn', limit: 2 })).toEqual({ type: 'history', messages: [assistant('four'), user('five')] });
    expectWholeLines(file);
    expect(readFileSync(file, 'utf8').split('\n')).toHaveLength(5);
    // A restart finds nothing to repair.
    await mem.stop();
    const again = await env.start();
    expect(await env.call({ type: 'get_history', channel_id: 'torn' })).toEqual({ type: 'history', messages: [...good.flat(), user('five')] });
    expect(again.logs.some((l) => l.msg === 'torn last line dropped')).toBe(false);
  });

  it('appends after a restart and a first read at the end of the file (regression: a handle opened r+ by a read wrote at offset 0)', async () => {
    const first = await env.start();
    await env.call({ type: 'append_history', channel_id: 'r', messages: [user('one')] });
    await env.call({ type: 'append_history', channel_id: 'r', messages: [user('two')] });
    await first.stop();
    await env.start();
    expect(await env.call({ type: 'get_history', channel_id: 'r' })).toEqual({ type: 'history', messages: [user('one'), user('two')] });
    await env.call({ type: 'append_history', channel_id: 'r', messages: [user('three')] });
    expect(await env.call({ type: 'get_history', channel_id: 'r' })).toEqual({ type: 'history', messages: [user('one'), user('two'), user('three')] });
    expectWholeLines(path.join(env.dataDir, 'history', 'r.jsonl'));
  });

  it('drops a torn or garbage last line of the hard memory store at start; ids continue after the last whole entry', async () => {
    mkdirSync(env.dataDir, { recursive: true });
    const file = path.join(env.dataDir, 'hard_memories.jsonl');
    const lines = [0, 1].map((id) => `${JSON.stringify({ id, messages: [user(`entry ${id} nginx`)], tag: null })}\n`);
    writeFileSync(file, `${lines.join('')}{"id":2,"messages":[{"role":"us\u0000\u0000\n`);
    const mem = await env.start();
    expect(mem.logs.find((l) => l.msg === 'torn last line dropped')).toMatchObject({ level: 'warn', file });
    const reply = await env.call({ type: 'search_hard', query: 'nginx' });
    expect((reply.results as { id: number }[]).map((r) => r.id)).toEqual([0, 1]);
    expect(await env.call({ type: 'store_hard', messages: [user('next')] })).toEqual({ type: 'ok', id: 2 });
    expectWholeLines(file);
  });

  it('skips a corrupt line in the middle of a file with an error log, keeping the lines after it and the ids of later entries', async () => {
    mkdirSync(path.join(env.dataDir, 'history'), { recursive: true });
    writeFileSync(path.join(env.dataDir, 'history', 'mid.jsonl'), `${JSON.stringify({ m: [user('a')] })}\nnot json\n${JSON.stringify({ m: [user('b')] })}\n`);
    writeFileSync(
      path.join(env.dataDir, 'hard_memories.jsonl'),
      `${JSON.stringify({ id: 0, messages: [user('alpha')], tag: null })}\ngarbage\n${JSON.stringify({ id: 2, messages: [user('gamma')], tag: null })}\n`,
    );
    const mem = await env.start();
    expect(await env.call({ type: 'get_history', channel_id: 'mid' })).toEqual({ type: 'history', messages: [user('a'), user('b')] });
    expect(await env.call({ type: 'get_history', channel_id: 'mid', limit: 2 })).toEqual({ type: 'history', messages: [user('a'), user('b')] });
    expect((await env.call({ type: 'search_hard', query: 'gamma' })).results).toMatchObject([{ id: 2, messages: [user('gamma')] }]);
    expect(await env.call({ type: 'store_hard', messages: [user('delta')] })).toEqual({ type: 'ok', id: 3 });
    expect(mem.logs.filter((l) => l.level === 'error').map((l) => l.msg)).toEqual(
      expect.arrayContaining(['corrupt hard memory line skipped', 'corrupt history line skipped']),
    );
  });
});
