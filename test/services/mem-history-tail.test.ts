/**
 * mem's cached history tail (history.ts, issue 18): a channel answers `get_history` from
 * its newest records kept parsed, filled by a read and extended by appends. Whatever the
 * mix of appends, reads and clears, every answer must be the one a read of the file gives:
 * here checked against a second store opened on the same directory after each read, which
 * has no tail and reads the file.
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { messageBytes, type ChatMessage } from '../../src/runtime/index.js';
import { HistoryStore } from '../../src/services/mem/history.js';
import { TAIL_CACHE_CHARS, TAIL_CACHE_MESSAGES } from '../../src/services/mem/tail.js';
import { captureLogger, tempDir } from '../helpers/util.js';

let dir: string;
let cleanup: () => void;
let store: HistoryStore;
const { log, lines } = captureLogger('mem', 'debug');
beforeEach(() => {
  ({ dir, cleanup } = tempDir('zmemtail'));
  store = new HistoryStore(dir, log);
});
afterEach(async () => {
  await store.close();
  cleanup();
});

/** What a store without a tail reads from the files as they are now. */
async function fromDisk(channel: string, limit: number, maxBytes?: number): Promise<{ messages: ChatMessage[]; omitted: number; bytes: number }> {
  const fresh = new HistoryStore(dir, log);
  try {
    const { messages, omitted, bytes } = await fresh.get(channel, limit, maxBytes);
    return { messages, omitted, bytes };
  } finally {
    await fresh.close();
  }
}

const say = (n: number, text = `message ${n}`): ChatMessage => ({ role: n % 2 ? 'assistant' : 'user', content: text });

describe('mem history: the cached tail', () => {
  it('answers the same last messages again without reading the file, with every append since', async () => {
    for (let i = 0; i < 40; i++) await store.append('c', [say(2 * i), say(2 * i + 1)]);
    const first = await store.get('c', 50);
    expect(first.bytesRead).toBeGreaterThan(0);
    await store.append('c', [say(80), say(81)]);
    const second = await store.get('c', 50);
    expect(second.bytesRead).toBe(0);
    expect(second.messages.map((m) => m.content)).toEqual(Array.from({ length: 50 }, (_, i) => `message ${32 + i}`));
    expect({ messages: second.messages, omitted: second.omitted, bytes: second.bytes }).toEqual(await fromDisk('c', 50));
  });

  it('reads the file for more than the tail holds, and for a whole history it does not hold whole', async () => {
    for (let i = 0; i < 30; i++) await store.append('c', [say(i)]);
    await store.get('c', 10);
    // Ten messages back reached record 20; the rest were never read.
    const all = await store.get('c', 0);
    expect(all.bytesRead).toBeGreaterThan(0);
    expect(all.messages).toHaveLength(30);
    // That read went back to the start: now the tail is the whole history.
    expect((await store.get('c', 0)).bytesRead).toBe(0);
    expect((await store.get('c', 25)).bytesRead).toBe(0);
  });

  it('keeps at most its bounds, and a record over them is read from the file', async () => {
    const big = 'x'.repeat(TAIL_CACHE_CHARS + 1);
    await store.append('c', [say(0)]);
    await store.get('c', 0);
    await store.append('c', [say(1, big)]);
    const read = await store.get('c', 2);
    expect(read.bytesRead).toBeGreaterThan(TAIL_CACHE_CHARS);
    expect(read.messages.map((m) => m.content.length)).toEqual([9, big.length]);
    // The appends after it fill the tail again, up to its bound in messages.
    for (let i = 0; i < TAIL_CACHE_MESSAGES + 10; i++) await store.append('c', [say(i)]);
    expect((await store.get('c', TAIL_CACHE_MESSAGES)).bytesRead).toBe(0);
    expect((await store.get('c', TAIL_CACHE_MESSAGES + 1)).bytesRead).toBeGreaterThan(0);
    expect((await store.get('c', TAIL_CACHE_MESSAGES + 1)).bytesRead).toBeGreaterThan(0);
  });

  it('holds the messages as the file does: role and content only', async () => {
    await store.append('c', [say(0)]);
    await store.get('c', 5);
    await store.append('c', [{ role: 'user', content: 'with extras', name: 'x', extra: 1 } as unknown as ChatMessage]);
    const read = await store.get('c', 5);
    expect(read.bytesRead).toBe(0);
    expect(read.messages).toEqual([say(0), { role: 'user', content: 'with extras' }]);
    expect(read.messages).toEqual((await fromDisk('c', 5)).messages);
  });

  it('is emptied by a clear, and an append after it starts a new history', async () => {
    await store.append('c', [say(0), say(1)]);
    await store.get('c', 5);
    await store.clear('c');
    expect((await store.get('c', 5)).messages).toEqual([]);
    await store.append('c', [say(2)]);
    const read = await store.get('c', 5);
    expect(read).toMatchObject({ messages: [say(2)], omitted: 0, bytesRead: 0 });
    expect(await fromDisk('c', 5)).toMatchObject({ messages: [say(2)], omitted: 0 });
  });

  it('answers as the file does after a write that failed and was rolled back', async () => {
    await store.append('c', [say(0)]);
    await store.get('c', 5); // the tail is filled
    // Every FileHandle's fdatasync fails once: a disk that refuses the write.
    const probe = await open(path.join(dir, 'probe'), 'w');
    const proto = Object.getPrototypeOf(probe) as { datasync: () => Promise<void> };
    await probe.close();
    const real = proto.datasync;
    proto.datasync = () => Promise.reject(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
    try {
      await expect(store.append('c', [say(1)])).rejects.toMatchObject({ code: 'INTERNAL' });
    } finally {
      proto.datasync = real;
    }
    const read = await store.get('c', 5);
    expect(read.messages).toEqual([say(0)]);
    expect(read.bytesRead).toBeGreaterThan(0); // the tail went with the file's handle: the file was read
    await store.append('c', [say(2)]);
    expect((await store.get('c', 5)).messages).toEqual([say(0), say(2)]);
    expect((await fromDisk('c', 5)).messages).toEqual([say(0), say(2)]);
  });

  it('skips a corrupt line once, as the file read does, and says so once', async () => {
    for (let i = 0; i < 4; i++) await store.append('c', [say(i)]);
    await store.close();
    const file = path.join(dir, readdirSync(dir).find((f) => f.endsWith('.jsonl')) as string);
    const text = readFileSync(file, 'utf8').split('\n');
    text[1] = '{"m":[{"role":"user"'; // a line spoiled in the middle, not the torn tail repairTail drops
    writeFileSync(file, text.join('\n'));
    store = new HistoryStore(dir, log);
    const before = lines.filter((l) => l.msg === 'corrupt history line skipped').length;
    const first = await store.get('c', 10);
    await store.append('c', [say(4)]);
    const second = await store.get('c', 10);
    expect(first.messages.map((m) => m.content)).toEqual(['message 0', 'message 2', 'message 3']);
    expect(second.messages.map((m) => m.content)).toEqual(['message 0', 'message 2', 'message 3', 'message 4']);
    expect(second.bytesRead).toBe(0);
    expect(lines.filter((l) => l.msg === 'corrupt history line skipped').length - before).toBe(1);
  });

  it('answers as the file does through a random mix of appends (some at once), reads and clears', async () => {
    // A fixed seed: the same mix every run, and a failure can be replayed.
    let seed = 18;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const texts = ['short', 'naïve café', '…and “quotes”\n', 'emoji 😀', 'L'.repeat(3000), 'H'.repeat(40_000)];
    let n = 0;
    let hits = 0;
    let reads = 0;
    for (let step = 0; step < 600; step++) {
      const channel = rand(3) === 0 ? 'b' : 'a';
      const op = rand(50);
      if (op < 25) {
        // One to three appends at once: mem commits them together, in arrival order.
        await Promise.all(
          Array.from({ length: 1 + rand(3) }, () =>
            store.append(
              channel,
              Array.from({ length: 1 + rand(4) }, () => say(n++, `${n} ${texts[rand(40) === 0 ? 5 : rand(5)] as string}`)),
            ),
          ),
        );
      } else if (op < 49) {
        const limit = [0, 1, 5, 20, 50, 120][rand(6)] as number;
        const maxBytes = [undefined, 50_000, 2_000, 100][rand(4)];
        const got = await store.get(channel, limit, maxBytes);
        reads++;
        if (got.bytesRead === 0) hits++;
        expect(got.bytes).toBe(got.messages.reduce((n, m) => n + messageBytes(m), 0));
        expect({ messages: got.messages, omitted: got.omitted, bytes: got.bytes }, `step ${step}`).toEqual(await fromDisk(channel, limit, maxBytes));
      } else {
        await store.clear(channel);
      }
    }
    // The mix exercised both ways of answering.
    expect(hits).toBeGreaterThan(reads / 5);
    expect(hits).toBeLessThan(reads);
  });
});
