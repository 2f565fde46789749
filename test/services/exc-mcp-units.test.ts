/** The parts of exc's MCP client without processes: function names, the approval gate and its audit records, bounding results. */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ApprovalRequired } from '../../src/protocol/exc.js';
import { ApprovalBook } from '../../src/services/exc/approvals.js';
import { AUDIT_CODE_BYTES, AuditLog, type McpAuditRecord } from '../../src/services/exc/audit.js';
import { boundContent, cutUtf8 } from '../../src/services/exc/mcp/content.js';
import { gateMcpCall, runsWithoutApproval, type McpCallFacts } from '../../src/services/exc/mcp/gate.js';
import { functionName } from '../../src/services/exc/mcp/names.js';
import { compileRules, type ApprovalPolicy } from '../../src/services/exc/policy.js';
import { captureLogger, tempDir, waitFor } from '../helpers/util.js';

describe('MCP function names', () => {
  it('are server__tool, made to fit [A-Za-z0-9_-]{1,64}, and unique', () => {
    const taken = new Set<string>();
    expect(functionName('files', 'read_text_file', taken)).toBe('files__read_text_file');
    expect(functionName('files', 'get.weather/now', taken)).toBe('files__get_weather_now');
    expect(functionName('files', 'get_weather_now', taken)).toBe('files__get_weather_now_2');
    const long = functionName('files', 'x'.repeat(100), taken);
    expect(long).toMatch(/^files__x{48}_[0-9a-f]{8}$/);
    expect(long).toHaveLength(64);
    expect(functionName('files', `${'x'.repeat(100)}y`, taken)).not.toBe(long);
    for (const name of taken) expect(name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
  });
});

describe('gateMcpCall', () => {
  let dir: string;
  let cleanup: () => void;
  beforeEach(() => ({ dir, cleanup } = tempDir('zgate')));
  afterEach(() => cleanup());

  const policy = (mode: ApprovalPolicy['mode'], unattended: ApprovalPolicy['unattended'] = 'deny'): ApprovalPolicy => ({
    mode,
    unattended,
    // A rule that would match any plain command: MCP calls are not commands, so it must never apply.
    rules: compileRules(['/.*/']),
  });
  const setup = (p: ApprovalPolicy, options: { auditFile?: string } = {}) => {
    const file = options.auditFile ?? path.join(dir, 'audit.jsonl');
    const deps = { policy: p, timeoutS: 30, book: new ApprovalBook({ timeoutMs: 30_000 }), audit: new AuditLog(file, 1024 * 1024) };
    const frames: ApprovalRequired[] = [];
    const controller = new AbortController();
    const ctx = {
      signal: controller.signal,
      log: captureLogger('exc').log,
      requestId: 'req-1',
      send: (frame: ApprovalRequired) => {
        frames.push(frame);
        return Promise.resolve();
      },
    };
    const records = (): McpAuditRecord[] =>
      readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as McpAuditRecord);
    return { deps, frames, controller, ctx, records, file };
  };
  const call = (overrides: Partial<McpCallFacts> = {}): McpCallFacts => ({
    server: 'files',
    tool: 'write_file',
    name: 'files__write_file',
    trusted: false,
    annotations: undefined,
    arguments: { path: '/tmp/x', content: 'hi' },
    approvals: false,
    channelId: 'chan',
    ...overrides,
  });
  const ok = { content: [{ type: 'text', text: 'done' }], isError: false, truncated: false };

  it('lets a trusted server and a read-only tool through, recording each call with its arguments', async () => {
    const { deps, ctx, records } = setup(policy('deny'));
    let runs = 0;
    const run = () => {
      runs++;
      return Promise.resolve(ok);
    };
    const trusted = await gateMcpCall(deps, call({ trusted: true }), ctx, run);
    expect(trusted).toMatchObject({ type: 'tool_result', approval: 'trusted', is_error: false, content: [{ type: 'text', text: 'done' }] });
    expect(trusted).not.toHaveProperty('decision');
    const readOnly = await gateMcpCall(deps, call({ tool: 'read_file', annotations: { readOnlyHint: true } }), ctx, run);
    expect(readOnly.approval).toBe('read_only');
    expect(runs).toBe(2);
    await deps.audit.close();
    const [first, second] = records();
    expect(records()).toHaveLength(2);
    expect(first).toMatchObject({ event: 'run', where: 'mcp', server: 'files', tool: 'write_file', decision: 'allow', how: 'trusted', is_error: false });
    expect(first).toMatchObject({ request_id: 'req-1', channel_id: 'chan', arguments: '{"path":"/tmp/x","content":"hi"}', arguments_bytes: 32 });
    expect(first?.arguments_sha256).toBe(createHash('sha256').update('{"path":"/tmp/x","content":"hi"}').digest('hex'));
    expect(first).not.toHaveProperty('code');
    expect(second).toMatchObject({ event: 'run', tool: 'read_file', how: 'read_only' });
  });

  it('refuses everything else under mode "deny" (allow rules do not apply), recording the refusal and calling nothing', async () => {
    const { deps, ctx, records } = setup(policy('deny'));
    for (const annotations of [undefined, {}, { readOnlyHint: false }, { destructiveHint: false }]) {
      const result = await gateMcpCall(deps, call({ annotations }), ctx, () => Promise.reject(new Error('must not run')));
      expect(result).toMatchObject({ approval: 'refused', decision: 'policy:deny', is_error: true });
      expect(result.content[0]?.text).toMatch(/^the MCP tool files__write_file was not called: .*\[approval\] mode = "deny"/);
    }
    await deps.audit.close();
    expect(records().map((r) => [r.event, r.decision, r.how])).toEqual(Array(4).fill(['decision', 'deny', 'policy:deny']));
  });

  it('mode "allow" records the decision before the call and says how it was allowed', async () => {
    const { deps, ctx, records } = setup(policy('allow'));
    const result = await gateMcpCall(deps, call(), ctx, () => {
      // The decision is on disk before anything is sent to the server.
      expect(records().map((r) => [r.event, r.how])).toEqual([['decision', 'policy:allow']]);
      return Promise.resolve({ ...ok, isError: true, truncated: true });
    });
    expect(result).toMatchObject({ approval: 'approved', decision: 'policy:allow', is_error: true, truncated: true });
    await deps.audit.close();
    const [decision, run] = records();
    expect(run).toMatchObject({ event: 'run', id: decision?.id, how: 'policy:allow', is_error: true, truncated: true });
  });

  it('a caller that cannot ask gets [approval] unattended', async () => {
    const denied = setup(policy('ask', 'deny'));
    const refused = await gateMcpCall(denied.deps, call(), denied.ctx, () => Promise.reject(new Error('must not run')));
    expect(refused).toMatchObject({ approval: 'refused', decision: 'unattended:deny' });
    expect(refused.content[0]?.text).toMatch(/a client that cannot ask one/);
    expect(denied.frames).toEqual([]);
    await denied.deps.audit.close();

    const allowed = setup(policy('ask', 'allow'), { auditFile: path.join(dir, 'other.jsonl') });
    expect(await gateMcpCall(allowed.deps, call(), allowed.ctx, () => Promise.resolve(ok))).toMatchObject({
      approval: 'approved',
      decision: 'unattended:allow',
    });
    await allowed.deps.audit.close();
    expect(allowed.records().map((r) => [r.event, r.how])).toEqual([
      ['decision', 'unattended:allow'],
      ['run', 'unattended:allow'],
    ]);
  });

  it('asks a caller that relays approvals, showing the tool and its arguments, and runs only after a yes', async () => {
    const { deps, ctx, frames, records } = setup(policy('ask'));
    let ran = false;
    const pending = gateMcpCall(deps, call({ approvals: true }), ctx, () => {
      ran = true;
      return Promise.resolve(ok);
    });
    await waitFor(() => frames.length === 1, 'the approval to be asked');
    const [frame] = frames;
    expect(frame).toMatchObject({
      type: 'approval_required',
      executor: 'files__write_file',
      reason: '',
      request_id: 'req-1',
      mcp: { server: 'files', tool: 'write_file' },
    });
    expect(frame?.code).toBe('{\n  "path": "/tmp/x",\n  "content": "hi"\n}');
    expect(deps.book.list()[0]).toMatchObject({
      id: frame?.id,
      executor: 'files__write_file',
      mcp: { server: 'files', tool: 'write_file' },
      channel_id: 'chan',
    });
    expect(ran).toBe(false);
    deps.book.answer(frame?.id ?? '', 'allow', 'fine');
    expect(await pending).toMatchObject({ approval: 'approved', decision: 'approved', is_error: false });
    expect(ran).toBe(true);
    await deps.audit.close();
    expect(records().map((r) => [r.event, r.decision, r.how, r.approval_id, r.note])).toEqual([
      ['decision', 'allow', 'approved', frame?.id, 'fine'],
      ['run', 'allow', 'approved', frame?.id, 'fine'],
    ]);
  });

  it('a denial or no answer in time reaches the model and nothing is called', async () => {
    const { deps, ctx, frames, records } = setup(policy('ask'));
    const never = () => Promise.reject(new Error('must not run'));
    const denied = gateMcpCall(deps, call({ approvals: true }), ctx, never);
    await waitFor(() => frames.length === 1, 'the approval to be asked');
    deps.book.answer(frames[0]?.id ?? '', 'deny', 'not that file');
    const result = await denied;
    expect(result).toMatchObject({ approval: 'refused', decision: 'denied', is_error: true });
    expect(result.content[0]?.text).toBe(
      'the operator denied this: not that file. the MCP tool files__write_file was not called; do not call it again with the same arguments. Answer without it, or use a read-only tool.',
    );

    const short = { ...deps, book: new ApprovalBook({ timeoutMs: 1 }) };
    const timedOut = await gateMcpCall(short, call({ approvals: true }), ctx, never);
    expect(timedOut).toMatchObject({ approval: 'refused', decision: 'timeout' });
    expect(timedOut.content[0]?.text).toMatch(/nobody approved it within 30 s/);
    await deps.audit.close();
    expect(records().map((r) => [r.event, r.decision, r.how])).toEqual([
      ['decision', 'deny', 'denied'],
      ['decision', 'deny', 'timeout'],
    ]);
  });

  it('a caller that goes away while asked withdraws the approval; it is recorded as cancelled', async () => {
    const { deps, ctx, frames, controller, records } = setup(policy('ask'));
    const pending = gateMcpCall(deps, call({ approvals: true }), ctx, () => Promise.reject(new Error('must not run')));
    await waitFor(() => frames.length === 1, 'the approval to be asked');
    controller.abort();
    await expect(pending).rejects.toMatchObject({ code: 'CANCELLED' });
    expect(deps.book.size).toBe(0);
    await deps.audit.close();
    expect(records().map((r) => [r.event, r.decision, r.how, r.approval_id])).toEqual([['decision', 'deny', 'cancelled', frames[0]?.id]]);
  });

  it('an allowed call whose decision cannot be recorded is not made (AUDIT_UNAVAILABLE)', async () => {
    // The log's directory is a file: nothing can be written.
    const blocker = path.join(dir, 'blocker');
    writeFileSync(blocker, '');
    const { deps, ctx } = setup(policy('allow'), { auditFile: path.join(blocker, 'audit.jsonl') });
    let ran = false;
    const attempt = gateMcpCall(deps, call(), ctx, () => {
      ran = true;
      return Promise.resolve(ok);
    });
    await expect(attempt).rejects.toMatchObject({ code: 'AUDIT_UNAVAILABLE' });
    expect(ran).toBe(false);
    // A trusted call still runs (like a sandboxed run, its record is best effort).
    expect((await gateMcpCall(deps, call({ trusted: true }), ctx, () => Promise.resolve(ok))).approval).toBe('trusted');
  });

  it('a call that fails is recorded with its error; long arguments are cut in the log but hashed whole', async () => {
    const { deps, ctx, records } = setup(policy('allow'));
    const big = { content: 'é'.repeat(AUDIT_CODE_BYTES) };
    await expect(gateMcpCall(deps, call({ arguments: big }), ctx, () => Promise.reject(new Error('server went away')))).rejects.toThrow('server went away');
    await deps.audit.close();
    const [, run] = records();
    expect(run).toMatchObject({ event: 'run', how: 'policy:allow', error: 'server went away', arguments_truncated: true });
    const whole = JSON.stringify(big);
    expect(run?.arguments_bytes).toBe(Buffer.byteLength(whole));
    expect(run?.arguments_sha256).toBe(createHash('sha256').update(whole).digest('hex'));
    expect(Buffer.byteLength(run?.arguments ?? '')).toBeLessThanOrEqual(AUDIT_CODE_BYTES);
    expect(whole.startsWith(run?.arguments ?? 'x')).toBe(true);
  });

  it('runsWithoutApproval is what list_tools reports: trusted or read-only', () => {
    expect(runsWithoutApproval(true, undefined)).toBe(true);
    expect(runsWithoutApproval(false, { readOnlyHint: true })).toBe(true);
    expect(runsWithoutApproval(false, { readOnlyHint: false })).toBe(false);
    expect(runsWithoutApproval(false, undefined)).toBe(false);
  });
});

describe('bounding an MCP result', () => {
  it('keeps what fits, cuts text on a character boundary and says so', () => {
    expect(boundContent([{ type: 'text', text: 'hello', annotations: { x: 1 } }], undefined, 100)).toEqual({
      content: [{ type: 'text', text: 'hello' }],
      truncated: false,
    });
    const cut = boundContent(
      [
        { type: 'text', text: 'aé'.repeat(10) },
        { type: 'text', text: 'never' },
      ],
      undefined,
      8,
    );
    expect(cut.truncated).toBe(true);
    expect(cut.content).toEqual([
      { type: 'text', text: 'aéaé' + 'a' },
      { type: 'text', text: '\n[zino-exc: MCP result truncated at 8 bytes]' },
    ]);
    expect(cutUtf8('é', 1)).toBe('');
  });

  it('leaves out binary data that does not fit, keeping its size', () => {
    const { content } = boundContent(
      [
        { type: 'image', mimeType: 'image/png', data: 'A'.repeat(50) },
        { type: 'resource', resource: { uri: 'file:///x', blob: 'B'.repeat(80) } },
      ],
      undefined,
      100,
    );
    expect(content).toEqual([
      { type: 'image', mimeType: 'image/png', data: 'A'.repeat(50) },
      { type: 'resource', resource: { uri: 'file:///x' }, omitted_bytes: 80 },
    ]);
  });

  it('shows structured content as JSON text when there is no content', () => {
    expect(boundContent([], { temperature: 21 }, 100).content).toEqual([{ type: 'text', text: '{"temperature":21}' }]);
  });
});
