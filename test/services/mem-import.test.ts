import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { assistant, listFiles, memEnv, user, type MemEnv } from './mem-helpers.js';

let env: MemEnv;
beforeEach(() => {
  env = memEnv('zimp');
});
afterEach(async () => {
  await env.stopAll();
  env.cleanup();
});

const general = [user('hello'), assistant('hi there'), user('what is 2+2?'), assistant('4')];
const team = [user('ünïcode — 日本語'), assistant('ok'), { role: 'tool', content: '{"exit_code":0}' }];
const hard = [
  { messages: [user('restart nginx'), assistant('systemctl restart nginx')], tag: 'nginx' },
  { messages: [user('show disk usage'), assistant('df -h')], tag: null },
  { messages: [user('list processes by memory')] },
];

/** Writes a data directory in the contract's layout (what the Python service left behind). */
function writeLegacyLayout(): void {
  mkdirSync(path.join(env.dataDir, 'channels'), { recursive: true });
  writeFileSync(path.join(env.dataDir, 'channels', 'general.json'), JSON.stringify(general, null, 2));
  writeFileSync(path.join(env.dataDir, 'channels', 'Team Chat.json'), JSON.stringify(team));
  writeFileSync(path.join(env.dataDir, 'channels', 'empty.json'), '[]');
  writeFileSync(path.join(env.dataDir, 'hard_memories.json'), JSON.stringify(hard));
  writeFileSync(path.join(env.dataDir, 'soft_memory.txt'), 'prefers short answers\nsecond line');
}

async function expectImported(generalNow = general): Promise<void> {
  expect(await env.call({ type: 'get_history', channel_id: 'general' })).toEqual({ type: 'history', messages: generalNow });
  expect(await env.call({ type: 'get_history', channel_id: 'general', limit: 1 })).toEqual({ type: 'history', messages: generalNow.slice(-1) });
  expect(await env.call({ type: 'get_history', channel_id: 'Team Chat' })).toEqual({ type: 'history', messages: team });
  expect(await env.call({ type: 'get_history', channel_id: 'empty' })).toEqual({ type: 'history', messages: [] });
  const nginx = await env.call({ type: 'search_hard', query: 'nginx' });
  expect(nginx.results).toMatchObject([{ id: 0, tag: 'nginx', messages: hard[0]!.messages }]);
  const disk = await env.call({ type: 'search_hard', query: 'disk usage' });
  expect(disk.results).toMatchObject([{ id: 1, tag: null, messages: hard[1]!.messages }]);
  const procs = await env.call({ type: 'search_hard', query: 'processes memory' });
  expect(procs.results).toMatchObject([{ id: 2 }]);
  expect(await env.call({ type: 'get_soft' })).toEqual({ type: 'soft_memory', content: 'prefers short answers\nsecond line' });
}

describe('mem: import of the contract layout', () => {
  it('reads channels/{id}.json, hard_memories.json and soft_memory.txt without loss, with hard memory ids = array indices', async () => {
    writeLegacyLayout();
    const mem = await env.start();
    await expectImported();
    expect(await env.call({ type: 'store_hard', messages: [user('a new one')] })).toEqual({ type: 'ok', id: 3 });
    expect(mem.logs.find((l) => l.msg === 'legacy data imported')).toMatchObject({ channels: 3, messages: 7, hardEntries: 3 });
    expect(listFiles(env.dataDir)).toEqual([
      'channels/Team Chat.json.imported',
      'channels/empty.json.imported',
      'channels/general.json.imported',
      'hard_memories.json.imported',
      'hard_memories.jsonl',
      'history/%54eam%20%43hat.jsonl',
      'history/general.jsonl',
      'soft_memory.txt',
    ]);
  });

  it('does not import twice: after a restart, nor after a crash between writing the new files and renaming the legacy ones', async () => {
    writeLegacyLayout();
    const mem = await env.start();
    await env.call({ type: 'append_history', channel_id: 'general', messages: [user('new message')] });
    await mem.stop();
    await env.start();
    expect(await env.call({ type: 'get_history', channel_id: 'general' })).toEqual({ type: 'history', messages: [...general, user('new message')] });
    await env.stopAll();
    // Simulate the crash window: the new files hold the import, the legacy files are still in place.
    copyFileSync(path.join(env.dataDir, 'channels', 'general.json.imported'), path.join(env.dataDir, 'channels', 'general.json'));
    copyFileSync(path.join(env.dataDir, 'hard_memories.json.imported'), path.join(env.dataDir, 'hard_memories.json'));
    await env.start();
    await expectImported([...general, user('new message')]);
    expect(await env.call({ type: 'store_hard', messages: [user('next')] })).toEqual({ type: 'ok', id: 3 });
    expect(existsSync(path.join(env.dataDir, 'channels', 'general.json'))).toBe(false);
    expect(existsSync(path.join(env.dataDir, 'hard_memories.json'))).toBe(false);
  });

  it('puts a different legacy file for an existing channel before its newer history, and appends new legacy hard memories after the existing ones', async () => {
    const mem = await env.start();
    await env.call({ type: 'append_history', channel_id: 'general', messages: [user('written by zino')] });
    await env.call({ type: 'store_hard', messages: [user('zino entry')] });
    await mem.stop();
    writeLegacyLayout();
    await env.start();
    expect(await env.call({ type: 'get_history', channel_id: 'general' })).toEqual({ type: 'history', messages: [...general, user('written by zino')] });
    const nginx = await env.call({ type: 'search_hard', query: 'nginx' });
    expect(nginx.results).toMatchObject([{ id: 1, tag: 'nginx' }]);
  });

  it('leaves an unreadable legacy file in place with an error log and still starts', async () => {
    mkdirSync(path.join(env.dataDir, 'channels'), { recursive: true });
    writeFileSync(path.join(env.dataDir, 'hard_memories.json'), '[{"messages": [');
    writeFileSync(path.join(env.dataDir, 'channels', 'x.json'), '{"not": "a list"}');
    const mem = await env.start();
    expect(mem.logs.filter((l) => l.msg === 'legacy file is not JSON; left in place')).toHaveLength(2);
    expect(readFileSync(path.join(env.dataDir, 'hard_memories.json'), 'utf8')).toBe('[{"messages": [');
    expect(await env.call({ type: 'get_history', channel_id: 'x' })).toEqual({ type: 'history', messages: [] });
  });
});
