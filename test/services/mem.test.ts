import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { assistant, listFiles, memEnv, user, type MemEnv } from './mem-helpers.js';

let env: MemEnv;
beforeEach(() => {
  env = memEnv();
});
afterEach(async () => {
  await env.stopAll();
  env.cleanup();
});

describe('mem: chat history', () => {
  it('appends, reads all (limit absent or 0) or the last N, and clears', async () => {
    await env.start();
    expect(await env.call({ type: 'append_history', channel_id: 'c1', messages: [user('one'), assistant('two')] })).toEqual({ type: 'ok' });
    expect(await env.call({ type: 'append_history', channel_id: 'c1', messages: [user('three')] })).toEqual({ type: 'ok' });
    const all = [user('one'), assistant('two'), user('three')];
    expect(await env.call({ type: 'get_history', channel_id: 'c1' })).toEqual({ type: 'history', messages: all });
    expect(await env.call({ type: 'get_history', channel_id: 'c1', limit: 0 })).toEqual({ type: 'history', messages: all });
    expect(await env.call({ type: 'get_history', channel_id: 'c1', limit: null })).toEqual({ type: 'history', messages: all });
    expect(await env.call({ type: 'get_history', channel_id: 'c1', limit: 2 })).toEqual({ type: 'history', messages: all.slice(1) });
    expect(await env.call({ type: 'get_history', channel_id: 'c1', limit: 99 })).toEqual({ type: 'history', messages: all });
    expect(await env.call({ type: 'clear_history', channel_id: 'c1' })).toEqual({ type: 'ok' });
    expect(await env.call({ type: 'get_history', channel_id: 'c1' })).toEqual({ type: 'history', messages: [] });
    expect(await env.call({ type: 'append_history', channel_id: 'c1', messages: [user('after clear')] })).toEqual({ type: 'ok' });
    expect(await env.call({ type: 'get_history', channel_id: 'c1' })).toEqual({ type: 'history', messages: [user('after clear')] });
  });

  it('reads a channel never written as empty, clears it without error, and creates no file for it', async () => {
    await env.start();
    expect(await env.call({ type: 'get_history', channel_id: 'nobody', limit: 5 })).toEqual({ type: 'history', messages: [] });
    expect(await env.call({ type: 'clear_history', channel_id: 'nobody' })).toEqual({ type: 'ok' });
    expect(listFiles(path.join(env.dataDir, 'history'))).toEqual([]);
  });

  it('keeps every message of one request together and keeps histories, cleared ones included, across a restart', async () => {
    const mem = await env.start();
    await env.call({ type: 'append_history', channel_id: 'keep', messages: [user('q'), assistant('a')] });
    await env.call({ type: 'append_history', channel_id: 'gone', messages: [user('x')] });
    await env.call({ type: 'clear_history', channel_id: 'gone' });
    expect(await mem.stop()).toEqual({ code: 0, signal: null });
    expect(existsSync(mem.socket)).toBe(false);
    await env.start();
    expect(await env.call({ type: 'get_history', channel_id: 'keep' })).toEqual({ type: 'history', messages: [user('q'), assistant('a')] });
    expect(await env.call({ type: 'get_history', channel_id: 'gone' })).toEqual({ type: 'history', messages: [] });
  });

  it('stores every one of 1,000 concurrent appends to one channel exactly once, the messages of each request together', async () => {
    await env.start();
    const replies = await Promise.all(
      Array.from({ length: 1000 }, (_, i) => env.call({ type: 'append_history', channel_id: 'busy', messages: [user(`q${i}`), assistant(`a${i}`)] })),
    );
    expect(replies.every((r) => r.type === 'ok')).toBe(true);
    const { messages } = (await env.call({ type: 'get_history', channel_id: 'busy' })) as unknown as { messages: { content: string }[] };
    expect(messages).toHaveLength(2000);
    const seen = new Set<string>();
    for (let i = 0; i < messages.length; i += 2) {
      const n = messages[i]!.content.slice(1);
      expect(messages[i + 1]).toEqual(assistant(`a${n}`));
      seen.add(n);
    }
    expect(seen.size).toBe(1000);
  });

  it('keeps ids that try traversal or collision apart, each in its own file inside data_dir/history', async () => {
    const ids = [
      '../x',
      '../../../../tmp/evil',
      '/etc/passwd',
      '/abs/path',
      'a/b',
      'a_b',
      'a%2Fb',
      'a%2fb',
      'a\\b',
      '.',
      '..',
      '...',
      'Chat',
      'chat',
      'CHAT',
      'nul\u0000byte',
      'nul',
      'ü',
      'u\u0308',
      ' ',
      'x'.repeat(256),
      `${'x'.repeat(255)}y`,
      '日本語'.repeat(28),
    ];
    await env.start();
    for (const [i, id] of ids.entries()) {
      expect(await env.call({ type: 'append_history', channel_id: id, messages: [user(`message ${i}`)] })).toEqual({ type: 'ok' });
    }
    const check = async (): Promise<void> => {
      for (const [i, id] of ids.entries()) {
        expect(await env.call({ type: 'get_history', channel_id: id })).toEqual({ type: 'history', messages: [user(`message ${i}`)] });
      }
    };
    await check();
    const files = listFiles(env.dir).filter((f) => !f.startsWith('run/') && f !== 'ZINO.toml');
    expect(files.filter((f) => f.startsWith('data/mem/history/'))).toHaveLength(ids.length);
    expect(files.filter((f) => !f.startsWith('data/mem/history/'))).toEqual(['data/mem/hard_memories.jsonl']);
    for (const f of files) expect(path.basename(f)).toMatch(/^[a-z0-9_%A-F~-]+\.jsonl$/);
    expect(existsSync('/tmp/evil.jsonl')).toBe(false);
    // Clearing one of a colliding pair leaves the other alone.
    await env.call({ type: 'clear_history', channel_id: 'a/b' });
    expect(await env.call({ type: 'get_history', channel_id: 'a_b' })).toEqual({ type: 'history', messages: [user(`message ${ids.indexOf('a_b')}`)] });
    expect(await env.call({ type: 'get_history', channel_id: 'a/b' })).toEqual({ type: 'history', messages: [] });
  });

  it('refuses empty, over-long (257 bytes) and malformed channel ids with INVALID_REQUEST and stores nothing', async () => {
    await env.start();
    for (const channel_id of ['', 'x'.repeat(257), 'ü'.repeat(129), 'lone\uD800']) {
      for (const type of ['append_history', 'get_history', 'clear_history']) {
        const reply = await env.call({ type, channel_id, messages: [user('x')] });
        expect(reply).toMatchObject({ type: 'error', code: 'INVALID_REQUEST' });
      }
    }
    expect(listFiles(path.join(env.dataDir, 'history'))).toEqual([]);
  });
});

describe('mem: hard memories', () => {
  const entries = [
    { messages: [user('how do I restart the nginx web server?'), assistant('systemctl restart nginx')], tag: 'nginx' },
    { messages: [user('list the files in my home directory'), assistant('ls -la ~')], tag: 'files' },
    { messages: [user('check the free disk space'), assistant('df -h')] },
    { messages: [user('restart postgres'), assistant('systemctl restart postgresql')], tag: null },
    { messages: [user('wie viel Speicher ist frei? ünïcode')], tag: 'größe' },
  ];

  async function seed(): Promise<void> {
    for (const [i, e] of entries.entries()) expect(await env.call({ type: 'store_hard', ...e })).toEqual({ type: 'ok', id: i });
  }

  it('stores entries with ids in order and ranks them by TF-IDF cosine, scores rounded to 4 places', async () => {
    await env.start();
    await seed();
    const reply = await env.call({ type: 'search_hard', query: 'restarting nginx', top_k: 5 });
    expect(reply.type).toBe('hard_memories');
    const results = reply.results as { messages: unknown[]; score: number; id: number; tag: string | null }[];
    expect(results.map((r) => r.id)).toEqual([0, 3]);
    expect(results[0]).toMatchObject({ messages: entries[0]!.messages, tag: 'nginx' });
    for (const r of results) {
      expect(r.score).toBeGreaterThan(0);
      expect(r.score).toBeLessThanOrEqual(1);
      expect(Math.round(r.score * 10_000)).toBe(r.score * 10_000);
    }
    expect(results[0]!.score).toBeGreaterThan(results[1]!.score);
  });

  it('searches the tag and non-English words, defaults top_k to 3, and finds nothing for an empty or stop-word query', async () => {
    await env.start();
    await seed();
    const byTag = await env.call({ type: 'search_hard', query: 'files' });
    expect((byTag.results as { id: number }[])[0]?.id).toBe(1);
    const unicode = await env.call({ type: 'search_hard', query: 'ÜNÏCODE größe' });
    expect((unicode.results as { id: number }[]).map((r) => r.id)).toEqual([4]);
    const many = await env.call({ type: 'search_hard', query: 'restart nginx files disk free' });
    expect(many.results).toHaveLength(3);
    for (const query of ['', '   ', 'the and of', '?!']) {
      expect(await env.call({ type: 'search_hard', query })).toEqual({ type: 'hard_memories', results: [] });
    }
  });

  it('orders equal scores by ascending id', async () => {
    await env.start();
    for (let i = 0; i < 4; i++) await env.call({ type: 'store_hard', messages: [user(i === 1 ? 'cherry banana' : 'apple banana kiwi')] });
    const reply = await env.call({ type: 'search_hard', query: 'apple banana', top_k: 3 });
    const results = reply.results as { id: number; score: number }[];
    expect(results.map((r) => r.id)).toEqual([0, 2, 3]);
    expect(new Set(results.map((r) => r.score)).size).toBe(1);
  });

  it('returns at most 1,000 results however large top_k is', async () => {
    await env.start();
    // In batches: 1,005 connects at once can overflow the listen backlog on a loaded machine.
    for (let i = 0; i < 1005; i += 50) {
      await Promise.all(Array.from({ length: Math.min(50, 1005 - i) }, () => env.call({ type: 'store_hard', messages: [user('same words again')] })));
    }
    const reply = await env.call({ type: 'search_hard', query: 'same words', top_k: 1_000_000 });
    expect((reply.results as unknown[]).length).toBe(1000);
  });

  it('rebuilds the index from disk at start: same results, ids stable, new ids continue', async () => {
    const mem = await env.start();
    await seed();
    const before = await env.call({ type: 'search_hard', query: 'restart the server', top_k: 5 });
    expect(await mem.stop()).toEqual({ code: 0, signal: null });
    const again = await env.start();
    expect(await env.call({ type: 'search_hard', query: 'restart the server', top_k: 5 })).toEqual(before);
    expect(await env.call({ type: 'store_hard', messages: [user('new')] })).toEqual({ type: 'ok', id: entries.length });
    expect(again.logs.find((l) => l.msg === 'hard memory index built')).toMatchObject({ entries: entries.length });
  });
});

describe('mem: soft memory', () => {
  it('is empty at first, replaced by set_soft, and kept across a restart with no temporary file left', async () => {
    const mem = await env.start();
    expect(await env.call({ type: 'get_soft' })).toEqual({ type: 'soft_memory', content: '' });
    expect(await env.call({ type: 'set_soft', content: 'first' })).toEqual({ type: 'ok' });
    expect(await env.call({ type: 'set_soft', content: 'prefers short answers; ünïcode ok' })).toEqual({ type: 'ok' });
    expect(await env.call({ type: 'get_soft' })).toEqual({ type: 'soft_memory', content: 'prefers short answers; ünïcode ok' });
    await mem.stop();
    await env.start();
    expect(await env.call({ type: 'get_soft' })).toEqual({ type: 'soft_memory', content: 'prefers short answers; ünïcode ok' });
    expect(listFiles(env.dataDir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    expect(await env.call({ type: 'set_soft', content: '' })).toEqual({ type: 'ok' });
    expect(await env.call({ type: 'get_soft' })).toEqual({ type: 'soft_memory', content: '' });
  });
});

describe('mem: bad input', () => {
  it('answers every malformed request with INVALID_REQUEST and stores nothing', async () => {
    await env.start();
    const bad = [
      { type: 'append_history', messages: [user('x')] },
      { type: 'append_history', channel_id: 5, messages: [user('x')] },
      { type: 'append_history', channel_id: 'b' },
      { type: 'append_history', channel_id: 'b', messages: 'hello' },
      { type: 'append_history', channel_id: 'b', messages: { role: 'user', content: 'x' } },
      { type: 'append_history', channel_id: 'b', messages: [user('ok'), { role: 'user' }] },
      { type: 'append_history', channel_id: 'b', messages: [user('ok'), { role: 'user', content: 5 }] },
      { type: 'append_history', channel_id: 'b', messages: [{ role: '', content: 'x' }] },
      { type: 'append_history', channel_id: 'b', messages: [null] },
      { type: 'get_history' },
      { type: 'get_history', channel_id: 'b', limit: -1 },
      { type: 'get_history', channel_id: 'b', limit: 1.5 },
      { type: 'get_history', channel_id: 'b', limit: '3' },
      { type: 'clear_history' },
      { type: 'search_hard' },
      { type: 'search_hard', query: 5 },
      { type: 'search_hard', query: 'x', top_k: 0 },
      { type: 'search_hard', query: 'x', top_k: -2 },
      { type: 'search_hard', query: 'x', top_k: 1.5 },
      { type: 'search_hard', query: 'x', top_k: '3' },
      { type: 'search_hard', query: 'x', top_k: true },
      { type: 'store_hard' },
      { type: 'store_hard', messages: [user('x'), { role: 'user', content: null }] },
      { type: 'store_hard', messages: [user('x')], tag: 5 },
      { type: 'set_soft' },
      { type: 'set_soft', content: 7 },
    ];
    for (const frame of bad) {
      const reply = await env.call(frame);
      expect(reply, JSON.stringify(frame)).toMatchObject({ type: 'error', code: 'INVALID_REQUEST', message: expect.any(String) });
    }
    expect(await env.call({ type: 'get_history', channel_id: 'b' })).toEqual({ type: 'history', messages: [] });
    expect(await env.call({ type: 'get_soft' })).toEqual({ type: 'soft_memory', content: '' });
    expect(await env.call({ type: 'store_hard', messages: [user('first real entry')] })).toEqual({ type: 'ok', id: 0 });
    expect(listFiles(path.join(env.dataDir, 'history'))).toEqual([]);
  });
});
