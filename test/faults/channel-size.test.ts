/**
 * A channel must not outgrow the frame limit and brick itself (issue 13, point 10):
 * with a history over 16 MiB, `get_history` with limit 0 failed ("reply exceeds
 * the frame limit") and so did the next ask on that channel. Now mem answers with
 * the most recent messages that fit (saying how many it left out), the ask still
 * answers, and a message over `[daemon] max_message_bytes` is refused up front.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { MEM } from '../../src/protocol/mem.js';
import { DEFAULT_MAX_FRAME_BYTES, Endpoint, RemoteError, request } from '../../src/runtime/index.js';
import { CLI_PATH } from '../../src/testing/paths.js';
import { useFaultSuite } from './harness.js';

const run = promisify(execFile);

const MiB = 1024 * 1024;
const fault = useFaultSuite('zchan');

function mem(): Endpoint<typeof MEM> {
  return new Endpoint(MEM, fault.socket('mem'), { timeoutMs: 120_000 });
}

describe('a channel over the frame limit', () => {
  it('still answers get_history (most recent messages that fit) and the next ask', async () => {
    const channel = 'huge';
    // Four records of ~5 MiB each, 20 MiB in all: more than one frame can hold.
    for (let i = 0; i < 4; i++) {
      await mem().request('append_history', { channel_id: channel, messages: [{ role: 'user', content: `${i}:${'x'.repeat(5 * MiB)}` }] });
    }

    const all = await request(fault.socket('mem'), { type: 'get_history', channel_id: channel, limit: 0 }, { timeoutMs: 120_000 });
    expect(all.type).toBe('history');
    const messages = all.messages as { content: string }[];
    // The most recent ones, oldest first, and the reply says what it left out.
    expect(messages.map((m) => m.content.slice(0, 2))).toEqual(['1:', '2:', '3:']);
    expect(all).toMatchObject({ truncated: true, omitted: 1 });
    expect(Buffer.byteLength(JSON.stringify(all))).toBeLessThanOrEqual(DEFAULT_MAX_FRAME_BYTES);

    // What fits is answered exactly as the contract says, without the extra fields.
    const two = await request(fault.socket('mem'), { type: 'get_history', channel_id: channel, limit: 2 }, { timeoutMs: 120_000 });
    expect((two.messages as { content: string }[]).map((m) => m.content.slice(0, 2))).toEqual(['2:', '3:']);
    expect(two).not.toHaveProperty('truncated');

    // `zino mem history` shows the messages that fit and says that older ones were left out.
    const cli = await run(process.execPath, [CLI_PATH, 'mem', 'history', channel, '--config', fault.file], {
      maxBuffer: 64 * MiB,
      timeout: 120_000,
      env: { ...process.env, ZINO_CONFIG: '', ZINO_DIR: '' },
    });
    expect(cli.stderr).toContain('1 older message left out');
    expect(cli.stdout.startsWith(`user: 1:`)).toBe(true);

    fault.script({ rules: [{ match: 'still there?', reply: 'yes' }] });
    const reply = await request(fault.socket('daemon'), { message: 'still there?', channel_id: channel }, { timeoutMs: 120_000 });
    expect(reply).toMatchObject({ type: 'response', content: 'yes' });
    // The exchange was stored: the channel keeps working.
    const last = await request(fault.socket('mem'), { type: 'get_history', channel_id: channel, limit: 2 }, { timeoutMs: 120_000 });
    expect(last.messages).toEqual([
      { role: 'user', content: 'still there?' },
      { role: 'assistant', content: 'yes' },
    ]);
  });

  it('refuses a message over [daemon] max_message_bytes, naming the bound, and stores nothing', async () => {
    const channel = 'big-message';
    const err = await request(fault.socket('daemon'), { message: 'y'.repeat(10 * MiB), channel_id: channel }, { timeoutMs: 120_000 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(RemoteError);
    expect((err as RemoteError).code).toBe('INVALID_REQUEST');
    expect((err as RemoteError).message).toContain('[daemon] max_message_bytes');
    expect((err as RemoteError).message).toContain(String(MiB));
    const history = await request(fault.socket('mem'), { type: 'get_history', channel_id: channel }, { timeoutMs: 120_000 });
    expect(history.messages).toEqual([]);
  });
});
