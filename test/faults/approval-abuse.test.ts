/**
 * Approval abuse (issue 14): unknown and hostile `approve` frames, answers after
 * expiry, a thousand approvals pending at once. Nothing crashes, every bad answer
 * gets an error frame with a stable code, and no host run happens without a yes.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ping, request, stream, type Frame } from '../../src/runtime/index.js';
import { startService, writeTestConfig } from '../../src/testing/suite.js';
import { tempDir, waitFor } from '../helpers/util.js';
import { record, rssMiB, useFaultSuite } from './harness.js';

const fs = useFaultSuite('zabuse', { approval: { mode: 'ask' } });

/** The audit log's records. */
function audit(file: string): Frame[] {
  return existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Frame)
    : [];
}
const auditFile = (): string => path.join(fs.dir, 'data', 'audit.jsonl');

/** A host run waiting for approval on exc's own socket: its approval frame, and how its stream ended. */
interface Waiting {
  approval: Frame;
  end: Promise<Frame | { type: 'thrown'; code: unknown }>;
  controller: AbortController;
}

async function openApproval(code: string, requestId: string): Promise<Waiting> {
  const controller = new AbortController();
  const frames = stream(
    fs.socket('exc'),
    { type: 'execute', executor: 'bash', code, host: true, approvals: true, request_id: requestId },
    { signal: controller.signal },
  );
  const first = await frames.next();
  if (first.done || first.value.type !== 'approval_required') throw new Error(`expected an approval, got ${JSON.stringify(first.value)}`);
  const end = (async () => {
    try {
      for await (const frame of frames) return frame;
      return { type: 'thrown' as const, code: 'NO_FRAME' };
    } catch (err) {
      return { type: 'thrown' as const, code: (err as { code?: unknown }).code };
    }
  })();
  return { approval: first.value, end, controller };
}

describe('hostile approve frames', () => {
  it('are refused with a stable code by the daemon and by exc, and leave pending approvals alone', async () => {
    const proofs = [0, 1, 2].map((i) => path.join(fs.dir, `hostile-proof-${i}`));
    const waiting = await Promise.all(proofs.map((p, i) => openApproval(`touch ${p}`, `hostile-${i}`)));
    const pids = { daemon: fs.pid('daemon'), exc: fs.pid('exc') };
    const real = String(waiting[0]?.approval.id);
    const frames: Frame[] = [
      { type: 'approve' },
      { type: 'approve', id: 5, decision: 'allow' },
      { type: 'approve', id: null, decision: 'allow' },
      { type: 'approve', id: [real], decision: 'allow' },
      { type: 'approve', id: { id: real }, decision: 'allow' },
      { type: 'approve', id: '', decision: 'allow' },
      { type: 'approve', id: 'x'.repeat(1024 * 1024), decision: 'allow' },
      { type: 'approve', id: '../../etc/passwd', decision: 'allow' },
      { type: 'approve', id: '__proto__', decision: 'allow' },
      { type: 'approve', id: 'constructor', decision: 'allow' },
      { type: 'approve', id: `${real} `, decision: 'allow' },
      // Ids are lower-case hex: an upper-case copy is another id, when the id has a letter at all (1 in about 110 has none).
      ...(real.toUpperCase() === real ? [] : [{ type: 'approve', id: real.toUpperCase(), decision: 'allow' }]),
      { type: 'approve', id: real, decision: 'ALLOW' },
      { type: 'approve', id: real, decision: 'yes' },
      { type: 'approve', id: real, decision: true },
      { type: 'approve', id: real, decision: 1 },
      { type: 'approve', id: real, decision: null },
      { type: 'approve', id: real },
      { type: 'approve', id: real, decision: 'allow', note: 5 },
      { type: 'approve', id: real, decision: 'allow', note: 'n'.repeat(10_000) },
      { type: 'approvals', id: 7 },
      { type: 'approvals', id: 'ffffffffff' },
    ];
    for (const service of ['daemon', 'exc'] as const) {
      for (const frame of frames) {
        const reply = await request(fs.socket(service), frame).then(
          (ok) => ok,
          (err: { code?: unknown }) => ({ type: 'error', code: err.code }),
        );
        expect(reply.type, `${service} ${JSON.stringify(frame).slice(0, 120)}`).toBe('error');
        expect(['INVALID_REQUEST', 'APPROVAL_UNKNOWN']).toContain(reply.code);
      }
    }
    // All three still wait, untouched; nothing ran.
    const listed = await request(fs.socket('daemon'), { type: 'approvals' });
    expect((listed.pending as Frame[]).map((p) => p.id).sort()).toEqual(waiting.map((w) => w.approval.id).sort());
    for (const w of waiting) w.controller.abort();
    for (const w of waiting) expect(await w.end).toMatchObject({ type: 'thrown', code: 'CANCELLED' });
    await waitFor(() => audit(auditFile()).filter((r) => String(r.request_id).startsWith('hostile-')).length === 3, 'three cancellations in the audit log');
    expect(
      audit(auditFile())
        .filter((r) => String(r.request_id).startsWith('hostile-'))
        .map((r) => r.how),
    ).toEqual(['cancelled', 'cancelled', 'cancelled']);
    for (const p of proofs) expect(existsSync(p)).toBe(false);
    expect({ daemon: fs.pid('daemon'), exc: fs.pid('exc') }).toEqual(pids);
    await ping(fs.socket('exc'));
  });
});

describe('a thousand pending approvals', () => {
  it('are listed, answered or cancelled one by one, and only those with a yes run', async () => {
    const N = 1000;
    const excPid = fs.pid('exc');
    const rssBefore = rssMiB(excPid);
    const dir = path.join(fs.dir, 'many');
    const proof = (i: number): string => path.join(dir, `proof-${i}`);
    // A run that happened leaves its file here.
    mkdirSync(dir);
    const started = Date.now();
    const waiting = await Promise.all(Array.from({ length: N }, (_, i) => openApproval(`touch ${proof(i)}`, `many-${i}`)));
    record('approvals: 1,000 pending opened', Date.now() - started, 'ms');
    const listed = await request(fs.socket('daemon'), { type: 'approvals' });
    expect((listed.pending as Frame[]).length + Number(listed.omitted ?? 0)).toBe(N);
    expect(listed.omitted ?? 0).toBe(0);
    record('approvals: exc RSS with 1,000 pending', rssMiB(excPid), 'MiB');

    // Every hundredth gets a yes, the odd ones a no, the rest are cancelled by their callers.
    const allowed = new Set(Array.from({ length: N / 100 }, (_, k) => k * 100));
    const denied = new Set(Array.from({ length: N }, (_, i) => i).filter((i) => !allowed.has(i) && i % 2 === 1));
    for (const i of allowed)
      expect(await request(fs.socket('daemon'), { type: 'approve', id: waiting[i]?.approval.id, decision: 'allow' })).toEqual({ type: 'ok' });
    for (const i of denied)
      expect(await request(fs.socket('daemon'), { type: 'approve', id: waiting[i]?.approval.id, decision: 'deny', note: `no ${i}` })).toEqual({ type: 'ok' });
    waiting.forEach((w, i) => {
      if (!allowed.has(i) && !denied.has(i)) w.controller.abort();
    });
    const ends = await Promise.all(waiting.map((w) => w.end));
    ends.forEach((end, i) => {
      if (allowed.has(i)) expect(end, `run ${i}`).toMatchObject({ type: 'result', exit_code: 0, decision: 'approved' });
      else if (denied.has(i))
        expect(end, `run ${i}`).toMatchObject({
          type: 'error',
          code: 'APPROVAL_DENIED',
          message: expect.stringContaining(`the operator denied this: no ${i}`),
        });
      else expect(end, `run ${i}`).toMatchObject({ type: 'thrown', code: 'CANCELLED' });
    });
    await waitFor(async () => ((await request(fs.socket('daemon'), { type: 'approvals' })).pending as Frame[]).length === 0, 'every approval to be settled');
    // Second answers are all refused.
    for (const i of [0, 1, 2, 3]) {
      await expect(request(fs.socket('daemon'), { type: 'approve', id: waiting[i]?.approval.id, decision: 'allow' })).rejects.toMatchObject({
        code: 'APPROVAL_SETTLED',
      });
    }

    expect(readdirSync(dir).sort()).toEqual([...allowed].map((i) => `proof-${i}`).sort());
    await waitFor(
      () => audit(auditFile()).filter((r) => String(r.request_id).startsWith('many-')).length === N + allowed.size,
      'every decision and run in the audit log',
    );
    const records = audit(auditFile()).filter((r) => String(r.request_id).startsWith('many-'));
    const count = (event: string, how: string): number => records.filter((r) => r.event === event && r.how === how).length;
    expect({
      approved: count('decision', 'approved'),
      ran: count('run', 'approved'),
      denied: count('decision', 'denied'),
      cancelled: count('decision', 'cancelled'),
    }).toEqual({ approved: allowed.size, ran: allowed.size, denied: denied.size, cancelled: N - allowed.size - denied.size });
    expect(fs.pid('exc')).toBe(excPid);
    record('approvals: exc RSS growth over 1,000 approvals', Math.round((rssMiB(excPid) - rssBefore) * 10) / 10, 'MiB');
  });
});

describe('answers after expiry', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it('are refused with APPROVAL_EXPIRED, and the run never happens', async () => {
    const { dir, cleanup } = tempDir('zexp');
    const { file, config } = writeTestConfig(dir, { exc: { sandbox: 'none' }, approval: { mode: 'ask', timeout_s: 1 } });
    const exc = await startService('exc', file);
    cleanups.push(cleanup, async () => void (await exc.stop()));
    const proofs = Array.from({ length: 20 }, (_, i) => path.join(dir, `late-${i}`));
    const ids: string[] = [];
    const ends = await Promise.all(
      proofs.map(async (p, i) => {
        const frames: Frame[] = [];
        for await (const frame of stream(exc.socket, {
          type: 'execute',
          executor: 'bash',
          code: `touch ${p}`,
          host: true,
          approvals: true,
          request_id: `late-${i}`,
        })) {
          if (frame.type === 'approval_required') ids.push(String(frame.id));
          frames.push(frame);
        }
        return frames.at(-1);
      }),
    );
    for (const end of ends)
      expect(end).toMatchObject({ type: 'error', code: 'APPROVAL_DENIED', message: expect.stringContaining('nobody approved this host run within 1 s') });
    for (const id of ids) {
      await expect(request(exc.socket, { type: 'approve', id, decision: 'allow' })).rejects.toMatchObject({ code: 'APPROVAL_EXPIRED' });
    }
    for (const p of proofs) expect(existsSync(p)).toBe(false);
    const records = audit(config.exc.audit_log);
    expect(records).toHaveLength(20);
    expect(new Set(records.map((r) => `${String(r.event)} ${String(r.how)}`))).toEqual(new Set(['decision timeout']));
  });
});
