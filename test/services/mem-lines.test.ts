import { open, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { linesBackward, linesForward, repairTail } from '../../src/services/mem/lines.js';
import { OpQueue } from '../../src/services/mem/queue.js';
import { captureLogger, tempDir } from '../helpers/util.js';

let dir: string;
let cleanup: () => void;
beforeEach(() => ({ dir, cleanup } = tempDir('zlines')));
afterEach(() => cleanup());

async function collect(gen: AsyncGenerator<{ text: Buffer; start: number }>): Promise<{ text: string; start: number }[]> {
  const out: { text: string; start: number }[] = [];
  for await (const l of gen) out.push({ text: l.text.toString('utf8'), start: l.start });
  return out;
}

describe('JSON Lines readers', () => {
  it('read the same lines forwards and backwards, whatever the block size (lines across blocks, multi-byte characters)', async () => {
    const lines = Array.from({ length: 50 }, (_, i) => `{"n":${i},"s":"${'ü'.repeat(i % 7)}${'x'.repeat((i * 13) % 40)}"}`);
    const file = path.join(dir, 'f.jsonl');
    await writeFile(file, lines.map((l) => `${l}\n`).join(''));
    const handle = await open(file, 'r');
    try {
      const { size } = await handle.stat();
      for (const block of [1, 2, 3, 7, 64, 100_000]) {
        const back = await collect(linesBackward(handle, size, undefined, block));
        expect(back.map((l) => l.text).reverse()).toEqual(lines);
        const fwd = await collect(linesForward(handle, 0, size, undefined, block));
        expect(fwd).toEqual([...back].reverse());
      }
    } finally {
      await handle.close();
    }
  });

  it('backwards with the default blocks (a 16 KiB tail read on the event loop, then up to 64 KiB ones) yields every line once and reads each byte once', async () => {
    // Line lengths chosen to end and straddle the 16 KiB and 64 KiB boundaries, some longer than a block.
    const sizes = [10, 16 * 1024 - 30, 40, 48 * 1024 + 5, 3, 70 * 1024, 1, 200 * 1024, 15, 64 * 1024 - 1, 64 * 1024, 64 * 1024 + 1, 16 * 1024, 7];
    const lines = sizes.map((n, i) => `{"i":${i},"s":"${String.fromCharCode(97 + (i % 26)).repeat(n)}"}`);
    const file = path.join(dir, 'long.jsonl');
    await writeFile(file, lines.map((l) => `${l}\n`).join(''));
    const handle = await open(file, 'r');
    try {
      const { size } = await handle.stat();
      for (let drop = 0; drop < lines.length; drop++) {
        // Every prefix of the file, so each line in turn is the last one (read in the tail block).
        const kept = lines.slice(0, lines.length - drop);
        const end = kept.reduce((n, l) => n + Buffer.byteLength(l) + 1, 0);
        const stats = { bytesRead: 0 };
        const back = await collect(linesBackward(handle, end, stats));
        expect(back.map((l) => l.text).reverse()).toEqual(kept);
        expect(back.at(-1)?.start).toBe(0);
        expect(stats.bytesRead).toBe(end - 1); // the final newline is not read
      }
      expect(size).toBeGreaterThan(400 * 1024);
      // The last short lines come from the 16 KiB tail alone.
      const stats = { bytesRead: 0 };
      let last = '';
      for await (const line of linesBackward(handle, size, stats)) {
        last = line.text.toString('utf8');
        break;
      }
      expect(last).toBe(lines.at(-1));
      expect(stats.bytesRead).toBe(16 * 1024);
    } finally {
      await handle.close();
    }
    // Lines past the tail block: the rest of the last 64 KiB comes next, so no more bytes are read than with 64 KiB blocks alone.
    const small = path.join(dir, 'small.jsonl');
    await writeFile(small, '{"x":1}\n'.repeat(100_000));
    const h = await open(small, 'r');
    try {
      const stats = { bytesRead: 0 };
      let n = 0;
      for await (const _ of linesBackward(h, 800_000, stats)) if (++n === 3000) break; // 24,000 bytes
      expect(stats.bytesRead).toBe(64 * 1024);
    } finally {
      await h.close();
    }
  });

  it('backwards reading of the last lines touches only the tail', async () => {
    const file = path.join(dir, 'big.jsonl');
    await writeFile(file, '{"x":1}\n'.repeat(200_000));
    const handle = await open(file, 'r');
    try {
      const { size } = await handle.stat();
      const stats = { bytesRead: 0 };
      let n = 0;
      for await (const _ of linesBackward(handle, size, stats)) if (++n === 10) break;
      expect(stats.bytesRead).toBeLessThanOrEqual(64 * 1024);
      expect(size).toBeGreaterThan(1_000_000);
    } finally {
      await handle.close();
    }
  });

  it('reports bytes after the last newline as a torn tail instead of a line', async () => {
    const file = path.join(dir, 't.jsonl');
    await writeFile(file, '{"a":1}\n{"b":');
    const handle = await open(file, 'r');
    const torn: number[] = [];
    try {
      const lines = await collect(linesForward(handle, 0, 13, (bytes, offset) => torn.push(bytes, offset)));
      expect(lines.map((l) => l.text)).toEqual(['{"a":1}']);
      expect(torn).toEqual([5, 8]);
    } finally {
      await handle.close();
    }
  });
});

describe('torn tail repair', () => {
  it.each([
    ['a partial last line', '{"a":1}\n{"b":2}\n{"c":', '{"a":1}\n{"b":2}\n'],
    ['a last line that does not parse', '{"a":1}\n{"b":2}\n{"c\u0000\u0000\n', '{"a":1}\n{"b":2}\n'],
    ['a file that is one partial line', '{"a":', ''],
    ['a whole file', '{"a":1}\n{"b":2}\n', '{"a":1}\n{"b":2}\n'],
  ])('handles %s: keeps every complete line before it', async (_what, content, expected) => {
    const file = path.join(dir, 'r.jsonl');
    await writeFile(file, content);
    const { log, lines } = captureLogger();
    const handle = await open(file, 'r+');
    try {
      const size = await repairTail(handle, Buffer.byteLength(content), log, file);
      expect(size).toBe(Buffer.byteLength(expected));
    } finally {
      await handle.close();
    }
    expect(await readFile(file, 'utf8')).toBe(expected);
    const warned = lines.filter((l) => l.msg === 'torn last line dropped');
    expect(warned).toHaveLength(content === expected ? 0 : 1);
  });
});

describe('operation queue', () => {
  it('commits consecutive appends together, in arrival order, and runs tasks in their place in line', async () => {
    const batches: number[][] = [];
    const order: string[] = [];
    const queue = new OpQueue<number, number>(async (items) => {
      batches.push(items);
      order.push(`commit ${items.join(',')}`);
      await new Promise((r) => setTimeout(r, 5));
      return items.map((i) => i * 10);
    });
    const a = queue.append(1);
    const b = queue.append(2);
    const c = queue.append(3);
    const t = queue.exclusive(async () => order.push('task'));
    const d = queue.append(4);
    expect(await Promise.all([a, b, c, d])).toEqual([10, 20, 30, 40]);
    await t;
    expect(order).toEqual(['commit 1', 'commit 2,3', 'task', 'commit 4']);
    await queue.drained();
    expect(queue.idle).toBe(true);
  });

  it('rejects every append of a failed commit and keeps going', async () => {
    let fail = true;
    const queue = new OpQueue<number, number>(async (items) => {
      if (fail) {
        fail = false;
        throw new Error('disk full');
      }
      return items;
    });
    const a = queue.append(1);
    await expect(a).rejects.toThrow('disk full');
    expect(await queue.append(2)).toBe(2);
  });
});
