/**
 * The privileged runner's check of a host run against the audit log (record.ts):
 * only an `allow` decision for a host run of exactly this code and executor, under
 * this id, recent, lets it run; anything else is refused with the reason.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkRecord } from '../../src/services/exc/runner/record.js';
import { tempDir } from '../helpers/util.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

const NOW = Date.parse('2026-01-02T03:04:05.000Z');
const code = 'id -u';
const sha = createHash('sha256').update(code, 'utf8').digest('hex');

function decision(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    time: new Date(NOW - 1000).toISOString(),
    id: 'd-1',
    event: 'decision',
    request_id: 'r-1',
    executor: 'bash',
    where: 'host',
    code,
    code_bytes: code.length,
    code_sha256: sha,
    decision: 'allow',
    how: 'approved',
    ...overrides,
  };
}

function log(...records: Record<string, unknown>[]): string {
  const { dir, cleanup } = tempDir('zrec');
  cleanups.push(cleanup);
  const file = path.join(dir, 'audit.jsonl');
  writeFileSync(file, records.map((r) => `${JSON.stringify(r)}\n`).join(''), { mode: 0o600 });
  return file;
}

const claim = { id: 'd-1', executor: 'bash', sha256: sha };

describe('checkRecord', () => {
  it('allows a run whose allow decision for a host run of this code is in the log', async () => {
    const file = log({ ...decision({ id: 'other' }) }, decision(), { ...decision({ id: 'other' }), event: 'run' });
    expect(await checkRecord(claim, { auditFile: file, now: NOW })).toBeUndefined();
  });

  it('finds the decision in the rotated file when the log was just rotated', async () => {
    const file = log();
    writeFileSync(`${file}.1`, `${JSON.stringify(decision())}\n`);
    expect(await checkRecord(claim, { auditFile: file, now: NOW })).toBeUndefined();
  });

  it('refuses a decision whose run the log already holds (a replay after a runner restart), in either file', async () => {
    const ran = { ...decision(), event: 'run', exit_code: 0, uid: 0 };
    expect(await checkRecord(claim, { auditFile: log(decision(), ran), now: NOW })).toMatch(/already used: the audit log holds its run/);
    // Rotated between the decision and its run: the decision in .1, the run in the new file.
    const file = log(ran);
    writeFileSync(`${file}.1`, `${JSON.stringify(decision())}\n`);
    expect(await checkRecord(claim, { auditFile: file, now: NOW })).toMatch(/already used/);
    // Another id's run does not count.
    expect(await checkRecord(claim, { auditFile: log(decision(), { ...ran, id: 'd-2' }), now: NOW })).toBeUndefined();
  });

  it('refuses a decision for another id', async () => {
    const file = log(decision({ id: 'd-2' }));
    expect(await checkRecord(claim, { auditFile: file, now: NOW })).toMatch(/no decision with id "d-1"/);
  });

  it('refuses a decision for other code (another SHA-256)', async () => {
    const file = log(decision({ code_sha256: 'a'.repeat(64) }));
    expect(await checkRecord(claim, { auditFile: file, now: NOW })).toMatch(/other code/);
  });

  it('refuses a denied decision, even next to an allow under the same id', async () => {
    expect(await checkRecord(claim, { auditFile: log(decision({ decision: 'deny', how: 'denied' })), now: NOW })).toMatch(/refused the run \(denied\)/);
    expect(await checkRecord(claim, { auditFile: log(decision(), decision({ decision: 'deny', how: 'denied' })), now: NOW })).toMatch(/refused/);
  });

  it('refuses a sandboxed run, another executor, a stale decision, and a line that is only a run record', async () => {
    expect(await checkRecord(claim, { auditFile: log(decision({ where: 'sandbox' })), now: NOW })).toMatch(/not for a host run/);
    expect(await checkRecord(claim, { auditFile: log(decision({ executor: 'python3' })), now: NOW })).toMatch(/executor "python3"/);
    expect(await checkRecord(claim, { auditFile: log(decision()), now: NOW + 3_600_000 })).toMatch(/not fresh/);
    expect(await checkRecord(claim, { auditFile: log({ ...decision(), event: 'run' }), now: NOW })).toMatch(/no decision/);
  });

  it('refuses when the log is missing', async () => {
    const { dir, cleanup } = tempDir('zrec');
    cleanups.push(cleanup);
    expect(await checkRecord(claim, { auditFile: path.join(dir, 'none.jsonl'), now: NOW })).toMatch(/cannot be read \(ENOENT\)/);
  });

  it('reads only the tail: a decision further back than tailBytes is not found, a partial first line is skipped', async () => {
    const filler = Array.from({ length: 50 }, (_, i) => decision({ id: `f-${i}` }));
    const file = log(decision(), ...filler);
    expect(await checkRecord(claim, { auditFile: file, now: NOW, tailBytes: 4096 })).toMatch(/no decision/);
    expect(await checkRecord(claim, { auditFile: file, now: NOW })).toBeUndefined();
  });
});
