/**
 * `forget_hard` (issue 15, point 10): a hard memory is deleted from the index and
 * from the disk, stays deleted across a restart, and its id is never given again.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { memEnv, type MemEnv } from './mem-helpers.js';

let env: MemEnv;
beforeEach(() => {
  env = memEnv('zfgt');
});
afterEach(async () => {
  await env.stopAll();
  env.cleanup();
});

const user = (content: string) => ({ role: 'user', content });
const ids = (reply: Record<string, unknown>): number[] => (reply.results as { id: number }[]).map((r) => r.id);
const file = (): string => readFileSync(path.join(env.dataDir, 'hard_memories.jsonl'), 'utf8');

describe('mem: forget_hard', () => {
  it('removes the entry from searches and its text from the disk, for good, keeping the ids', async () => {
    const mem = await env.start();
    for (const text of ['the vault password is swordfish', 'the backup server is vault', 'restart nginx with systemctl']) {
      await env.call({ type: 'store_hard', messages: [user(text)] });
    }
    expect(ids(await env.call({ type: 'search_hard', query: 'vault', top_k: 5 }))).toEqual([0, 1]);
    expect(await env.call({ type: 'forget_hard', id: 0 })).toEqual({ type: 'ok', id: 0 });
    expect(ids(await env.call({ type: 'search_hard', query: 'vault', top_k: 5 }))).toEqual([1]);
    expect(await env.call({ type: 'search_hard', query: 'swordfish' })).toEqual({ type: 'hard_memories', results: [] });
    expect(file()).not.toContain('swordfish');
    // The last entry too: its id must not be handed out again after a restart.
    expect(await env.call({ type: 'forget_hard', id: 2 })).toEqual({ type: 'ok', id: 2 });
    expect(await mem.stop()).toEqual({ code: 0, signal: null });
    await env.start();
    expect(ids(await env.call({ type: 'search_hard', query: 'vault nginx swordfish', top_k: 5 }))).toEqual([1]);
    expect(await env.call({ type: 'store_hard', messages: [user('a new one')] })).toEqual({ type: 'ok', id: 3 });
    expect(file().split('\n').filter(Boolean)).toHaveLength(4);
  });

  it('refuses an id with no entry, or not an id, with INVALID_REQUEST', async () => {
    await env.start();
    await env.call({ type: 'store_hard', messages: [user('keep me')] });
    await env.call({ type: 'forget_hard', id: 0 });
    for (const id of [0, 1, 99]) {
      expect(await env.call({ type: 'forget_hard', id })).toMatchObject({
        type: 'error',
        code: 'INVALID_REQUEST',
        message: `no hard memory has id ${id} (never stored, or already forgotten)`,
      });
    }
    for (const id of [-1, 1.5, '0', null]) {
      expect(await env.call({ type: 'forget_hard', id })).toMatchObject({ type: 'error', code: 'INVALID_REQUEST' });
    }
  });
});
