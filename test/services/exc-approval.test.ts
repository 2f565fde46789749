/** The pieces of supervised action, without processes: the policy, the approval book, the audit log. */
import { mkdirSync, readFileSync, statSync, writeFileSync, chmodSync } from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApprovalBook } from '../../src/services/exc/approvals.js';
import { AUDIT_CODE_BYTES, AuditLog, codeFields, type AuditRecord } from '../../src/services/exc/audit.js';
import { listApprovals } from '../../src/services/exc/listing.js';
import { compileRules, decideHostRun, matchRule, personDenial, type ApprovalPolicy } from '../../src/services/exc/policy.js';
import { tempDir } from '../helpers/util.js';

describe('allow rules', () => {
  const rules = compileRules(['uptime', '/usr/bin/df', '/systemctl restart (nginx|php-fpm)/']);

  it('match an executable by the first word, with any plain arguments', () => {
    expect(matchRule(rules, 'uptime')).toBe(1);
    expect(matchRule(rules, '  uptime -p\n')).toBe(1);
    expect(matchRule(rules, '/usr/bin/df -h /var')).toBe(2);
    // Exact: another path to the same program is another word.
    expect(matchRule(rules, 'df -h')).toBeUndefined();
    expect(matchRule(rules, 'uptimex')).toBeUndefined();
  });

  it('match a regex against the whole command only', () => {
    expect(matchRule(rules, 'systemctl restart nginx')).toBe(3);
    expect(matchRule(rules, 'systemctl restart nginx2')).toBeUndefined();
    expect(matchRule(rules, 'sudo systemctl restart nginx')).toBeUndefined();
  });

  it.each([
    'uptime; rm -rf /',
    'uptime && reboot',
    'uptime | sh',
    'uptime $(reboot)',
    'uptime `reboot`',
    'uptime > /etc/passwd',
    "uptime 'a b'",
    'uptime *',
    'uptime\nreboot',
    'uptime ~',
  ])('never match a command with shell syntax: %j', (code) => {
    expect(matchRule(rules, code)).toBeUndefined();
  });
});

describe('decideHostRun', () => {
  const policy = (over: Partial<ApprovalPolicy> = {}): ApprovalPolicy => ({ mode: 'ask', unattended: 'deny', rules: [], ...over });
  const facts = { code: 'touch /tmp/x', canAsk: true, noSandbox: false };

  it('asks a person when the caller can relay the question', () => {
    expect(decideHostRun(policy(), facts)).toEqual({ verdict: 'ask' });
  });

  it('applies unattended when it cannot', () => {
    expect(decideHostRun(policy(), { ...facts, canAsk: false })).toMatchObject({ verdict: 'deny', how: 'unattended:deny' });
    expect(decideHostRun(policy({ unattended: 'allow' }), { ...facts, canAsk: false })).toEqual({ verdict: 'allow', how: 'unattended:allow' });
  });

  it('allows under mode allow, and by rule before asking', () => {
    expect(decideHostRun(policy({ mode: 'allow' }), facts)).toEqual({ verdict: 'allow', how: 'policy:allow' });
    expect(decideHostRun(policy({ rules: compileRules(['hostname', 'touch']) }), facts)).toEqual({ verdict: 'allow', how: 'rule:2' });
  });

  it('denies everything under mode deny, rules included, and says why', () => {
    const denied = decideHostRun(policy({ mode: 'deny', rules: compileRules(['touch']) }), facts);
    expect(denied).toMatchObject({ verdict: 'deny', how: 'policy:deny', message: expect.stringContaining('[approval] mode = "deny"') });
    const noSandbox = decideHostRun(policy({ mode: 'deny' }), { ...facts, noSandbox: true });
    expect(noSandbox).toMatchObject({ message: expect.stringContaining('no sandbox can be used') });
  });

  it("tells the model the operator's note", () => {
    expect(personDenial('denied', 'not on a Friday', 300)).toMatch(/^the operator denied this: not on a Friday\. It was not run/);
    expect(personDenial('denied', undefined, 300)).toMatch(/^the operator denied this \(no reason given\)/);
    expect(personDenial('timeout', undefined, 42)).toContain('within 42 s');
  });
});

describe('ApprovalBook', () => {
  const ask = { executor: 'bash', code: 'touch /tmp/x', reason: 'r', requestId: 'req-1', noSandbox: false };

  it('settles an approval with the first answer and refuses a second one', async () => {
    const book = new ApprovalBook({ timeoutMs: 60_000 });
    const { frame, outcome } = book.open(ask, new AbortController().signal);
    expect(frame).toMatchObject({ type: 'approval_required', executor: 'bash', code: 'touch /tmp/x', reason: 'r', request_id: 'req-1' });
    expect(frame.id).toMatch(/^[0-9a-f]{10}$/);
    expect(book.list().map((p) => p.id)).toEqual([frame.id]);
    book.answer(frame.id, 'allow');
    await expect(outcome).resolves.toEqual({ decision: 'allow', how: 'approved', id: frame.id });
    expect(book.size).toBe(0);
    expect(() => book.answer(frame.id, 'deny')).toThrow(expect.objectContaining({ code: 'APPROVAL_SETTLED' }));
  });

  it('passes a denial note on', async () => {
    const book = new ApprovalBook({ timeoutMs: 60_000 });
    const { frame, outcome } = book.open(ask, new AbortController().signal);
    book.answer(frame.id, 'deny', 'use the staging host');
    await expect(outcome).resolves.toEqual({ decision: 'deny', how: 'denied', id: frame.id, note: 'use the staging host' });
  });

  it('turns an unanswered approval into a denial, and says so to a late answer', async () => {
    const book = new ApprovalBook({ timeoutMs: 20 });
    const { frame, outcome } = book.open(ask, new AbortController().signal);
    await expect(outcome).resolves.toMatchObject({ decision: 'deny', how: 'timeout' });
    expect(() => book.answer(frame.id, 'allow')).toThrow(expect.objectContaining({ code: 'APPROVAL_EXPIRED' }));
  });

  it('cancels with the request, after which an answer is refused', async () => {
    const book = new ApprovalBook({ timeoutMs: 60_000 });
    const controller = new AbortController();
    const { frame, outcome } = book.open(ask, controller.signal);
    controller.abort();
    await expect(outcome).rejects.toMatchObject({ code: 'CANCELLED' });
    expect(book.size).toBe(0);
    expect(() => book.answer(frame.id, 'allow')).toThrow(expect.objectContaining({ code: 'APPROVAL_SETTLED', message: expect.stringContaining('cancelled') }));
  });

  it('does not know ids it never gave, or forgot', async () => {
    const book = new ApprovalBook({ timeoutMs: 60_000, remember: 1 });
    expect(() => book.answer('0000000000', 'allow')).toThrow(expect.objectContaining({ code: 'APPROVAL_UNKNOWN' }));
    const first = book.open(ask, new AbortController().signal);
    book.answer(first.frame.id, 'allow');
    const second = book.open(ask, new AbortController().signal);
    book.answer(second.frame.id, 'allow');
    await Promise.all([first.outcome, second.outcome]);
    expect(() => book.answer(first.frame.id, 'allow')).toThrow(expect.objectContaining({ code: 'APPROVAL_UNKNOWN' }));
    expect(() => book.answer(second.frame.id, 'allow')).toThrow(expect.objectContaining({ code: 'APPROVAL_SETTLED' }));
  });

  it('lists programs cut, one whole by id, within half a frame', () => {
    const book = new ApprovalBook({ timeoutMs: 60_000 });
    const long = 'x'.repeat(10_000);
    const opened = Array.from({ length: 5 }, () => book.open({ ...ask, code: long }, new AbortController().signal));
    for (const o of opened) o.outcome.catch(() => undefined);
    const all = listApprovals(book, undefined, 16 * 1024 * 1024);
    expect(all.pending).toHaveLength(5);
    expect(all.pending[0]).toMatchObject({ code_bytes: 10_000, code_truncated: true });
    expect(all.pending[0]?.code).toHaveLength(4096);
    const one = listApprovals(book, opened[2]?.frame.id, 16 * 1024 * 1024);
    expect(one.pending).toEqual([expect.objectContaining({ id: opened[2]?.frame.id, code: long })]);
    const small = listApprovals(book, undefined, 20_000);
    expect(small.pending).toHaveLength(2);
    expect(small.omitted).toBe(3);
  });
});

describe('AuditLog', () => {
  let dir: string;
  let cleanup: () => void;
  beforeEach(() => ({ dir, cleanup } = tempDir('zaud')));
  afterEach(() => cleanup());

  const record = (n: number, code = 'echo hi'): AuditRecord => ({
    time: new Date().toISOString(),
    id: `id-${n}`,
    event: 'run',
    request_id: 'r',
    executor: 'bash',
    where: 'sandbox',
    decision: 'allow',
    how: 'sandboxed',
    ...codeFields(code),
  });
  const lines = (file: string): AuditRecord[] =>
    readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as AuditRecord);

  it('appends JSON lines to a 0600 file in a 0700 directory it creates', async () => {
    const file = path.join(dir, 'new', 'audit.jsonl');
    const log = new AuditLog(file, 1024 * 1024);
    await log.append(record(1));
    await log.append(record(2));
    await log.close();
    expect(lines(file).map((r) => r.id)).toEqual(['id-1', 'id-2']);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
  });

  it('takes an existing file back to 0600 and appends to it', async () => {
    const file = path.join(dir, 'audit.jsonl');
    writeFileSync(file, `${JSON.stringify(record(0))}\n`);
    chmodSync(file, 0o644);
    const log = new AuditLog(file, 1024 * 1024);
    await log.append(record(1));
    await log.close();
    expect(lines(file).map((r) => r.id)).toEqual(['id-0', 'id-1']);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('rotates to .1 at the size bound, keeping one previous file', async () => {
    const file = path.join(dir, 'audit.jsonl');
    const log = new AuditLog(file, 1000);
    for (let i = 0; i < 30; i++) await log.append(record(i));
    await log.close();
    const current = lines(file);
    const previous = lines(`${file}.1`);
    expect(statSync(file).size).toBeLessThanOrEqual(1000);
    expect(statSync(`${file}.1`).size).toBeLessThanOrEqual(1000);
    // Nothing lost at the seam, newest last.
    const ids = [...previous, ...current].map((r) => Number(r.id.slice(3)));
    expect(ids).toEqual(ids.map((_, i) => ids[0]! + i));
    expect(ids.at(-1)).toBe(29);
  });

  it('writes concurrent appends whole, one per line', async () => {
    const file = path.join(dir, 'audit.jsonl');
    const log = new AuditLog(file, 1024 * 1024);
    await Promise.all(Array.from({ length: 50 }, (_, i) => log.append(record(i, 'y'.repeat(3000)))));
    await log.close();
    expect(lines(file)).toHaveLength(50);
  });

  it('reports a log it cannot open, and recovers when it can', async () => {
    const blocker = path.join(dir, 'blocked');
    writeFileSync(blocker, 'a file where a directory should be');
    const file = path.join(blocker, 'audit.jsonl');
    const log = new AuditLog(file, 1024 * 1024);
    expect(await log.probe()).toMatch(/^cannot open .*audit\.jsonl: (ENOTDIR|EEXIST)$/);
    await expect(log.append(record(1))).rejects.toThrow();
    const fixed = new AuditLog(path.join(dir, 'ok', 'audit.jsonl'), 1024 * 1024);
    mkdirSync(path.join(dir, 'ok'));
    expect(await fixed.probe()).toBeUndefined();
    await fixed.close();
  });

  it('keeps the first 4 KiB of a program with its full length and SHA-256', () => {
    const code = `${'é'.repeat(3000)}end`;
    const fields = codeFields(code);
    expect(fields.code_bytes).toBe(Buffer.byteLength(code));
    expect(fields.code_sha256).toBe(createHash('sha256').update(code).digest('hex'));
    expect(fields.code_truncated).toBe(true);
    expect(Buffer.byteLength(fields.code)).toBeLessThanOrEqual(AUDIT_CODE_BYTES);
    expect(code.startsWith(fields.code)).toBe(true);
    expect(codeFields('ls')).toEqual({ code: 'ls', code_bytes: 2, code_sha256: createHash('sha256').update('ls').digest('hex') });
  });
});
