/**
 * Durability: SIGKILL of mem while many clients append concurrently. After
 * `zino up` has restarted it, every acknowledged message is present, in order per
 * channel; the only other messages are ones whose acknowledgement was lost.
 */
import { describe, expect, it } from 'vitest';
import { request, type ChatMessage } from '../../src/runtime/index.js';
import { record, useFaultSuite } from './harness.js';

const CLIENTS = 24;
const APPENDS = 60;

const fs = useFaultSuite('zdur');

describe('SIGKILL of mem during concurrent appends', () => {
  it('loses no acknowledged message and keeps each channel in order', async () => {
    const acked: string[][] = Array.from({ length: CLIENTS }, () => []);
    const failed: string[][] = Array.from({ length: CLIENTS }, () => []);
    let total = 0;
    let kills = 0;
    const client = async (c: number): Promise<void> => {
      for (let i = 0; i < APPENDS; i++) {
        const content = `client ${c} message ${i}`;
        try {
          await request(fs.socket('mem'), { type: 'append_history', channel_id: `dur-${c}`, messages: [{ role: 'user', content }] }, { timeoutMs: 5000 });
          acked[c]?.push(content);
        } catch {
          failed[c]?.push(content);
          // mem is restarting: wait a little, as a real client would.
          await new Promise((r) => setTimeout(r, 100));
        }
        total++;
      }
    };
    const killer = async (): Promise<void> => {
      // Kill mem twice, each time in the middle of the traffic.
      for (const at of [CLIENTS * APPENDS * 0.25, CLIENTS * APPENDS * 0.6]) {
        while (total < at) await new Promise((r) => setTimeout(r, 1));
        process.kill(fs.pid('mem'), 'SIGKILL');
        kills++;
        await fs.waitUntilBack('mem', Date.now());
      }
    };
    await Promise.all([...Array.from({ length: CLIENTS }, (_, c) => client(c)), killer()]);
    expect(kills).toBe(2);

    let lost = 0;
    let ackedCount = 0;
    for (let c = 0; c < CLIENTS; c++) {
      const reply = await request(fs.socket('mem'), { type: 'get_history', channel_id: `dur-${c}` });
      const stored = (reply.messages as ChatMessage[]).map((m) => m.content);
      // Acknowledged messages: all present, in the order they were acknowledged.
      const storedAcked = stored.filter((m) => acked[c]?.includes(m));
      expect(storedAcked).toEqual(acked[c]);
      lost += (acked[c]?.length ?? 0) - storedAcked.length;
      ackedCount += acked[c]?.length ?? 0;
      // Anything else stored was sent but not acknowledged (the crash took the reply).
      for (const m of stored.filter((m) => !acked[c]?.includes(m))) expect(failed[c]).toContain(m);
      // Nothing twice.
      expect(new Set(stored).size).toBe(stored.length);
    }
    expect(failed.flat().length).toBeGreaterThan(0);
    record('durability.appends', CLIENTS * APPENDS);
    record('durability.acknowledged', ackedCount);
    record('durability.unacknowledged', failed.flat().length);
    record('durability.mem_kills', kills);
    record('durability.acknowledged_lost', lost);
    expect(lost).toBe(0);
  });
});
