/**
 * Supervised action end to end (issue 14): real services, the mock LLM through the
 * real openai SDK, a client that opts in to approvals on one connection and answers
 * them on others. A host run's proof is a file it writes outside the sandbox; every
 * case is checked in exc's audit log. The same for a call of an MCP tool that may
 * change the host (issue 16): server-filesystem's write_file on an untrusted server.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RemoteError, request, stream, type Frame } from '../../src/runtime/index.js';
import { detectSandbox } from '../../src/services/exc/sandbox.js';
import type { ServiceGroup } from '../../src/testing/suite.js';
import { filesystem, serverState } from '../helpers/mcp.js';
import { startWithMock, useMockLlm } from '../helpers/mock.js';
import { tempDir, waitFor } from '../helpers/util.js';

// The sandboxed case must run in CI (.ci/run installs bubblewrap); locally it needs a working bwrap.
const BWRAP = detectSandbox('auto').active;
const llm = useMockLlm();

/** The audit records of `requestId`, in order. */
function audit(group: ServiceGroup, requestId: string): Frame[] {
  const file = group.config.exc.audit_log;
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Frame)
    .filter((r) => r.request_id === requestId);
}

/** A model that asks for the host with `code`, then reports what came back (or that it was refused). */
function hostCallScript(code: string, options: { host?: boolean } = {}): void {
  const args = options.host === false ? { code } : { code, host: true, reason: 'write the proof file' };
  llm.script({
    rules: [
      { role: 'user', reply: `On it.<tool_call>${JSON.stringify({ name: 'execute_bash', arguments: args })}</tool_call>` },
      { role: 'assistant', match: 'the operator denied this', reply: ' The operator said no, so I did not do it.' },
      { role: 'assistant', match: 'error: ', reply: ' It was refused.' },
      { role: 'assistant', reply: ' Done.' },
    ],
  });
}

/** What the model was sent last (the augmented assistant turn carries the tool response). */
function lastPrompt(): string {
  const messages = llm.mock.stats.bodies.at(-1)?.messages as Frame[] | undefined;
  const content = messages?.at(-1)?.content;
  return typeof content === 'string' ? content : '';
}

/** Starts an ask that opts in to approvals; `approvals` resolves with the first approval_required frame. */
function askWithApprovals(daemon: string, body: Frame, signal?: AbortSignal): { frames: Promise<Frame[]>; approval: Promise<Frame> } {
  let found!: (frame: Frame) => void;
  const approval = new Promise<Frame>((resolve) => (found = resolve));
  const frames = (async () => {
    const out: Frame[] = [];
    for await (const frame of stream(daemon, { stream: true, events: true, approvals: true, ...body }, { signal })) {
      out.push(frame);
      if (frame.type === 'approval_required') found(frame);
    }
    return out;
  })();
  return { frames, approval };
}

const text = (frames: Frame[]): string => {
  const full = frames.at(-1)?.full_text;
  return typeof full === 'string' ? full : '';
};

describe('approval under [approval] mode = "ask"', () => {
  let group: ServiceGroup;
  let cleanup: () => void;
  let daemon: string;

  beforeAll(async () => {
    ({ group, cleanup } = await startWithMock(llm.mock, ['daemon', 'rtr', 'agr', 'sys', 'exc', 'mem', 'ctx'], 'zappr', {
      // The sandbox when bubblewrap works (the sandboxed case needs it), and the policy at its defaults.
      exc: { sandbox: 'auto' },
      approval: { mode: 'ask' },
    }));
    daemon = group.get('daemon').socket;
  });
  afterAll(async () => {
    const exits = await group.stop();
    for (const exit of Object.values(exits)) expect(exit).toEqual({ code: 0, signal: null });
    cleanup();
  });
  beforeEach(() => llm.script({}));

  it.runIf(BWRAP || process.env.CI)('runs sandboxed code without asking anyone', async () => {
    hostCallScript('echo looked; uname -s', { host: false });
    const { frames } = askWithApprovals(daemon, { message: 'look', request_id: 'appr-sandboxed' });
    const out = await frames;
    expect(out.map((f) => f.type)).not.toContain('approval_required');
    expect(out.find((f) => f.type === 'tool_result')).toMatchObject({ exit_code: 0, output: 'looked\nLinux' });
    expect(audit(group, 'appr-sandboxed')).toEqual([
      expect.objectContaining({ event: 'run', where: 'sandbox', decision: 'allow', how: 'sandboxed', exit_code: 0 }),
    ]);
  });

  it('asks for a host run, takes the yes from a second connection, and runs it on the host', async () => {
    const proof = path.join(group.dir, 'approved-proof');
    const code = `echo host-run > ${proof} && cat ${proof}`;
    hostCallScript(code);
    const { frames, approval } = askWithApprovals(daemon, { message: 'make the proof', request_id: 'appr-yes', channel_id: 'appr' });
    const asked = await approval;
    expect(asked).toMatchObject({ type: 'approval_required', executor: 'bash', code, reason: 'write the proof file', request_id: 'appr-yes' });
    expect(Date.parse(String(asked.expires_at))).toBeGreaterThan(Date.now());
    // Nothing ran yet; anyone on the socket sees what waits.
    expect(existsSync(proof)).toBe(false);
    const listed = await request(daemon, { type: 'approvals' });
    expect(listed.pending).toEqual([
      expect.objectContaining({ id: asked.id, code, reason: 'write the proof file', request_id: 'appr-yes', channel_id: 'appr' }),
    ]);
    expect(await request(daemon, { type: 'approve', id: asked.id, decision: 'allow' })).toEqual({ type: 'ok' });
    const out = await frames;
    expect(text(out)).toContain(' Done.');
    expect(out.find((f) => f.type === 'tool_result')).toMatchObject({ exit_code: 0, output: 'host-run' });
    expect(readFileSync(proof, 'utf8')).toBe('host-run\n');
    // Once answered, never again.
    await expect(request(daemon, { type: 'approve', id: asked.id, decision: 'allow' })).rejects.toMatchObject({ code: 'APPROVAL_SETTLED' });
    await expect(request(daemon, { type: 'approve', id: asked.id, decision: 'deny' })).rejects.toMatchObject({ code: 'APPROVAL_SETTLED' });
    const records = audit(group, 'appr-yes');
    expect(records).toEqual([
      expect.objectContaining({ event: 'decision', where: 'host', decision: 'allow', how: 'approved', approval_id: asked.id, channel_id: 'appr', code }),
      expect.objectContaining({ event: 'run', where: 'host', decision: 'allow', how: 'approved', approval_id: asked.id, exit_code: 0, stdout_bytes: 9 }),
    ]);
    expect(records[0]?.id).toBe(records[1]?.id);
  });

  it('tells the model about a denial, with the note, and the model answers', async () => {
    const proof = path.join(group.dir, 'denied-proof');
    hostCallScript(`touch ${proof}`);
    const { frames, approval } = askWithApprovals(daemon, { message: 'make it', request_id: 'appr-no' });
    const asked = await approval;
    expect(await request(daemon, { type: 'approve', id: asked.id, decision: 'deny', note: 'not on a Friday' })).toEqual({ type: 'ok' });
    const out = await frames;
    expect(text(out)).toContain('The operator said no, so I did not do it.');
    expect(lastPrompt()).toContain('the operator denied this: not on a Friday');
    expect(out.find((f) => f.type === 'tool_result')).toMatchObject({ exit_code: -1 });
    expect(existsSync(proof)).toBe(false);
    expect(audit(group, 'appr-no')).toEqual([
      expect.objectContaining({ event: 'decision', where: 'host', decision: 'deny', how: 'denied', approval_id: asked.id, note: 'not on a Friday' }),
    ]);
  });

  it('gives a client that did not opt in the unattended policy (deny), and asks nobody', async () => {
    const proof = path.join(group.dir, 'unattended-proof');
    hostCallScript(`touch ${proof}`);
    const reply = await request(daemon, { message: 'make it', request_id: 'appr-unattended' });
    expect(reply).toMatchObject({ type: 'response', content: expect.stringContaining('It was refused.') });
    expect(lastPrompt()).toContain('[approval] unattended = "deny"');
    expect(existsSync(proof)).toBe(false);
    expect((await request(daemon, { type: 'approvals' })).pending).toEqual([]);
    expect(audit(group, 'appr-unattended')).toEqual([expect.objectContaining({ event: 'decision', decision: 'deny', how: 'unattended:deny' })]);
  });

  it('cancels the approval when the asking client goes away: nothing runs, a late yes is refused', async () => {
    const proof = path.join(group.dir, 'cancelled-proof');
    hostCallScript(`touch ${proof}`);
    const controller = new AbortController();
    const { frames, approval } = askWithApprovals(daemon, { message: 'make it', request_id: 'appr-gone' }, controller.signal);
    const asked = await approval;
    controller.abort();
    await expect(frames).rejects.toMatchObject({ code: 'CANCELLED' });
    await waitFor(async () => ((await request(daemon, { type: 'approvals' })).pending as Frame[]).length === 0, 'the approval to be withdrawn');
    await expect(request(daemon, { type: 'approve', id: asked.id, decision: 'allow' })).rejects.toMatchObject({
      code: 'APPROVAL_SETTLED',
      message: expect.stringContaining('cancelled'),
    });
    await waitFor(() => audit(group, 'appr-gone').length > 0, 'the cancellation in the audit log');
    expect(audit(group, 'appr-gone')).toEqual([expect.objectContaining({ event: 'decision', decision: 'deny', how: 'cancelled', approval_id: asked.id })]);
    expect(existsSync(proof)).toBe(false);
  });

  it("asks the same for a skill's fabricated code when the task asks for the host", async () => {
    const proof = path.join(group.dir, 'skill-proof');
    const code = `echo from-skill > ${proof}`;
    const task = JSON.stringify({ skill: 'bash', request: 'write the skill proof', host: true, reason: 'the skill must write it' });
    llm.script({
      rules: [
        { match: ' [KCR] ', reply: code },
        { role: 'user', match: 'use the skill', reply: `Delegating.<task>${task}</task>` },
        { role: 'user', match: 'write the skill proof', reply: '1. Write the file.' },
        { role: 'assistant', reply: ' Done.' },
      ],
    });
    const { frames, approval } = askWithApprovals(daemon, { message: 'use the skill', request_id: 'appr-skill' });
    const asked = await approval;
    expect(asked).toMatchObject({ code, reason: 'the skill must write it', executor: 'bash' });
    expect(existsSync(proof)).toBe(false);
    await request(daemon, { type: 'approve', id: asked.id, decision: 'allow' });
    expect(text(await frames)).toContain(' Done.');
    expect(readFileSync(proof, 'utf8')).toBe('from-skill\n');
    expect(audit(group, 'appr-skill').map((r) => [r.event, r.how])).toEqual([
      ['decision', 'approved'],
      ['run', 'approved'],
    ]);
  });

  it('refuses unknown ids and malformed answers with stable codes', async () => {
    await expect(request(daemon, { type: 'approve', id: 'ffffffffff', decision: 'allow' })).rejects.toMatchObject({ code: 'APPROVAL_UNKNOWN' });
    await expect(request(daemon, { type: 'approve', id: 'ffffffffff', decision: 'maybe' })).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    await expect(request(daemon, { type: 'approve', decision: 'allow' })).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    await expect(request(daemon, { type: 'approvals', id: 'ffffffffff' })).rejects.toBeInstanceOf(RemoteError);
  });
});

describe('approval with a short timeout and an allow rule', () => {
  let group: ServiceGroup;
  let cleanup: () => void;
  let daemon: string;

  beforeAll(async () => {
    ({ group, cleanup } = await startWithMock(llm.mock, ['daemon', 'rtr', 'agr', 'exc'], 'zapt', {
      exc: { sandbox: 'auto' },
      approval: { mode: 'ask', timeout_s: 1, allow_rules: ['hostname'] },
    }));
    daemon = group.get('daemon').socket;
  });
  afterAll(async () => {
    await group.stop();
    cleanup();
  });

  it('treats an unanswered approval as a denial, and refuses a yes after it expired', async () => {
    const proof = path.join(group.dir, 'late-proof');
    hostCallScript(`touch ${proof}`);
    const { frames, approval } = askWithApprovals(daemon, { message: 'make it', request_id: 'appr-timeout' });
    const asked = await approval;
    const out = await frames;
    expect(lastPrompt()).toContain('nobody approved this host run within 1 s');
    expect(text(out)).toContain('It was refused.');
    await expect(request(daemon, { type: 'approve', id: asked.id, decision: 'allow' })).rejects.toMatchObject({ code: 'APPROVAL_EXPIRED' });
    expect(existsSync(proof)).toBe(false);
    expect(audit(group, 'appr-timeout')).toEqual([expect.objectContaining({ event: 'decision', decision: 'deny', how: 'timeout', approval_id: asked.id })]);
  });

  it('runs a command an allow rule names without asking', async () => {
    hostCallScript('hostname');
    const { frames } = askWithApprovals(daemon, { message: 'name?', request_id: 'appr-rule' });
    const out = await frames;
    expect(out.map((f) => f.type)).not.toContain('approval_required');
    expect(out.find((f) => f.type === 'tool_result')).toMatchObject({ exit_code: 0 });
    expect(audit(group, 'appr-rule')).toEqual([
      expect.objectContaining({ event: 'decision', where: 'host', how: 'rule:1' }),
      expect.objectContaining({ event: 'run', where: 'host', how: 'rule:1', exit_code: 0 }),
    ]);
  });
});

describe('approval under [approval] mode = "deny"', () => {
  let group: ServiceGroup;
  let cleanup: () => void;

  beforeAll(async () => {
    ({ group, cleanup } = await startWithMock(llm.mock, ['daemon', 'rtr', 'agr', 'exc'], 'zapd', { exc: { sandbox: 'auto' }, approval: { mode: 'deny' } }));
  });
  afterAll(async () => {
    await group.stop();
    cleanup();
  });

  it('never runs on the host and tells the model so, even a client that could approve', async () => {
    const proof = path.join(group.dir, 'deny-proof');
    hostCallScript(`touch ${proof}`);
    const { frames } = askWithApprovals(group.get('daemon').socket, { message: 'make it', request_id: 'appr-deny' });
    const out = await frames;
    expect(out.map((f) => f.type)).not.toContain('approval_required');
    expect(lastPrompt()).toContain('host runs are disabled here ([approval] mode = "deny")');
    expect(text(out)).toContain('It was refused.');
    expect(existsSync(proof)).toBe(false);
    expect(audit(group, 'appr-deny')).toEqual([expect.objectContaining({ event: 'decision', decision: 'deny', how: 'policy:deny' })]);
  });
});

describe('MCP tools that may change the host, under [approval] mode = "ask"', () => {
  let group: ServiceGroup;
  let cleanup: () => void;
  let cleanupShare: () => void;
  let share: string;
  let daemon: string;

  /** A model that calls `name` with `args`, then reports what came back. */
  function mcpCallScript(name: string, args: Record<string, unknown>): void {
    llm.script({
      rules: [
        { role: 'user', reply: `On it.<tool_call>${JSON.stringify({ name, arguments: args })}</tool_call>` },
        { role: 'assistant', match: 'the operator denied this', reply: ' The operator said no, so I did not do it.' },
        { role: 'assistant', match: 'error: ', reply: ' It was refused.' },
        { role: 'assistant', reply: ' Done.' },
      ],
    });
  }

  beforeAll(async () => {
    ({ dir: share, cleanup: cleanupShare } = tempDir('zapms'));
    mkdirSync(share, { recursive: true });
    ({ group, cleanup } = await startWithMock(llm.mock, ['daemon', 'rtr', 'agr', 'exc'], 'zapm', {
      exc: { sandbox: 'auto' },
      approval: { mode: 'ask' },
      // Untrusted: write_file is not annotated read-only, so [approval] decides each call; read_text_file is.
      mcp: { servers: { files: filesystem(share) } },
    }));
    daemon = group.get('daemon').socket;
    await waitFor(async () => (await serverState(group.get('exc').socket, 'files'))?.state === 'up', 'the MCP server to be up');
  });
  afterAll(async () => {
    const exits = await group.stop();
    for (const exit of Object.values(exits)) expect(exit).toEqual({ code: 0, signal: null });
    cleanup();
    cleanupShare();
  });
  beforeEach(() => llm.script({}));

  it('asks before an untrusted write, takes the yes from a second connection, then the tool runs', async () => {
    const target = path.join(share, 'approved.txt');
    const args = { path: target, content: 'written after a yes' };
    mcpCallScript('files__write_file', args);
    const { frames, approval } = askWithApprovals(daemon, { message: 'write it', request_id: 'mcp-yes', channel_id: 'mcpch' });
    const asked = await approval;
    expect(asked).toMatchObject({
      type: 'approval_required',
      executor: 'files__write_file',
      code: JSON.stringify(args, null, 2),
      reason: '',
      request_id: 'mcp-yes',
      mcp: { server: 'files', tool: 'write_file' },
    });
    expect(existsSync(target)).toBe(false);
    const listed = await request(daemon, { type: 'approvals' });
    expect(listed.pending).toEqual([
      expect.objectContaining({ id: asked.id, executor: 'files__write_file', channel_id: 'mcpch', mcp: { server: 'files', tool: 'write_file' } }),
    ]);
    expect(await request(daemon, { type: 'approve', id: asked.id, decision: 'allow', note: 'ok for the share' })).toEqual({ type: 'ok' });
    const out = await frames;
    expect(out.find((f) => f.type === 'tool_call')).toMatchObject({ kind: 'mcp', name: 'files__write_file', arguments: args });
    expect(out.find((f) => f.type === 'tool_result')).toMatchObject({ exit_code: 0 });
    expect(text(out)).toContain(' Done.');
    expect(readFileSync(target, 'utf8')).toBe('written after a yes');
    await expect(request(daemon, { type: 'approve', id: asked.id, decision: 'allow' })).rejects.toMatchObject({ code: 'APPROVAL_SETTLED' });
    const records = audit(group, 'mcp-yes');
    const fields = { where: 'mcp', server: 'files', tool: 'write_file', arguments: JSON.stringify(args), channel_id: 'mcpch', approval_id: asked.id };
    expect(records).toEqual([
      expect.objectContaining({ event: 'decision', decision: 'allow', how: 'approved', note: 'ok for the share', ...fields }),
      expect.objectContaining({ event: 'run', decision: 'allow', how: 'approved', is_error: false, ...fields }),
    ]);
    expect(records[0]?.id).toBe(records[1]?.id);
    expect(records[0]).not.toHaveProperty('code');
  });

  it('tells the model about a denial, with the note, and the tool is not called', async () => {
    const target = path.join(share, 'denied.txt');
    mcpCallScript('files__write_file', { path: target, content: 'never' });
    const { frames, approval } = askWithApprovals(daemon, { message: 'write it', request_id: 'mcp-no' });
    const asked = await approval;
    expect(await request(daemon, { type: 'approve', id: asked.id, decision: 'deny', note: 'not in the share' })).toEqual({ type: 'ok' });
    const out = await frames;
    expect(lastPrompt()).toContain('error: the operator denied this: not in the share. the MCP tool files__write_file was not called');
    expect(text(out)).toContain('The operator said no, so I did not do it.');
    expect(out.find((f) => f.type === 'tool_result')).toMatchObject({ exit_code: -1 });
    expect(existsSync(target)).toBe(false);
    expect(audit(group, 'mcp-no')).toEqual([
      expect.objectContaining({
        event: 'decision',
        where: 'mcp',
        tool: 'write_file',
        decision: 'deny',
        how: 'denied',
        approval_id: asked.id,
        note: 'not in the share',
      }),
    ]);
  });

  it('gives a client that did not opt in the unattended policy (deny), and asks nobody', async () => {
    const target = path.join(share, 'unattended.txt');
    mcpCallScript('files__write_file', { path: target, content: 'never' });
    const reply = await request(daemon, { message: 'write it', request_id: 'mcp-unattended' });
    expect(reply).toMatchObject({ type: 'response', content: expect.stringContaining('It was refused.') });
    expect(lastPrompt()).toContain(
      '[approval] unattended = "deny"; an operator can let its server\'s tools run without approval with trusted = true in [mcp.servers.files]',
    );
    expect(existsSync(target)).toBe(false);
    expect((await request(daemon, { type: 'approvals' })).pending).toEqual([]);
    expect(audit(group, 'mcp-unattended')).toEqual([
      expect.objectContaining({ event: 'decision', where: 'mcp', server: 'files', tool: 'write_file', decision: 'deny', how: 'unattended:deny' }),
    ]);
  });

  it('runs a read-only tool without asking, and records the call', async () => {
    const target = path.join(share, 'approved.txt');
    mcpCallScript('files__read_text_file', { path: target });
    const { frames } = askWithApprovals(daemon, { message: 'read it', request_id: 'mcp-read' });
    const out = await frames;
    expect(out.map((f) => f.type)).not.toContain('approval_required');
    expect(out.find((f) => f.type === 'tool_result')).toMatchObject({ exit_code: 0, output: 'written after a yes' });
    expect(audit(group, 'mcp-read')).toEqual([
      expect.objectContaining({ event: 'run', where: 'mcp', server: 'files', tool: 'read_text_file', decision: 'allow', how: 'read_only', is_error: false }),
    ]);
  });
});
