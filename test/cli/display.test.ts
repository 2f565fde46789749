import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { approvalHandler, describeApproval } from '../../src/cli/approval-prompt.js';
import { formatRecord } from '../../src/cli/commands/audit.js';
import { AnswerDisplay, type AnswerFrame } from '../../src/cli/display.js';
import type { ApprovalRequired } from '../../src/protocol/exc.js';

function sink(): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _e, done) {
      text += chunk.toString();
      done();
    },
  });
  return { stream, text: () => text };
}

function show(pieces: string[], raw = false): { out: string; err: string } {
  const out = sink();
  const err = sink();
  const display = new AnswerDisplay({ out: out.stream, err: err.stream }, raw);
  for (const delta of pieces) display.frame({ type: 'chunk', delta });
  display.finish();
  return { out: out.text(), err: err.text() };
}

const ANSWER =
  'Checking.\n<tool_call>{"name":"execute_bash","arguments":{"code":"df"}}</tool_call>\n<tool_response>\nFilesystem\n</tool_response>\n\nDone checking.';

describe('AnswerDisplay', () => {
  it('hides tool blocks and collapses the blank lines they leave', () => {
    expect(show([ANSWER]).out).toBe('Checking.\n\nDone checking.\n');
  });

  it('prints the same text however the answer is chunked', () => {
    const whole = show([ANSWER]).out;
    for (let i = 0; i <= ANSWER.length; i++) {
      for (let j = i; j <= ANSWER.length; j += 5) {
        expect(show([ANSWER.slice(0, i), ANSWER.slice(i, j), ANSWER.slice(j)]).out, `cut at ${i}/${j}`).toBe(whole);
      }
    }
  });

  it('shows the blocks with --raw and ends on a new line', () => {
    expect(show(['a <tool_call>x</tool_call>']).out).toBe('a \n');
    expect(show(['a <tool_call>x</tool_call>'], true).out).toBe('a <tool_call>x</tool_call>\n');
  });

  it('writes tool activity to stderr only', () => {
    const out = sink();
    const err = sink();
    const display = new AnswerDisplay({ out: out.stream, err: err.stream }, false);
    display.frame({ type: 'tool_call', kind: 'tool', name: 'execute_bash', code: 'uptime\nwho' });
    display.frame({ type: 'tool_result', exit_code: 0, output: ' 10:00 up 3 days' });
    display.frame({ type: 'tool_result', exit_code: 2, output: '' });
    display.finish();
    expect(out.text()).toBe('');
    expect(err.text()).toBe('[tool] execute_bash: uptime …\n[tool] ok:  10:00 up 3 days\n[tool] exit 2: \n');
  });

  it('shows frames with missing fields without "undefined" and without throwing', () => {
    // Regression: frames are another process's data; a chunk without delta printed "undefined".
    const out = sink();
    const err = sink();
    const display = new AnswerDisplay({ out: out.stream, err: err.stream }, false);
    display.frame(JSON.parse('{"type":"chunk"}') as AnswerFrame);
    display.frame({ type: 'chunk', delta: 'ok' });
    display.frame(JSON.parse('{"type":"tool_call","kind":"tool","name":"x"}') as AnswerFrame);
    display.finish();
    expect(out.text()).toBe('ok\n');
    expect(err.text()).toBe('[tool] x: \n');
  });
});

describe('approvals and the audit log of MCP calls', () => {
  const asked: ApprovalRequired = {
    type: 'approval_required',
    id: '0123456789',
    executor: 'files__write_file',
    code: '{\n  "path": "/srv/x",\n  "content": "hi"\n}',
    reason: '',
    expires_at: new Date(Date.now() + 60_000).toISOString(),
    mcp: { server: 'files', tool: 'write_file' },
  };

  it('shows the server, the tool and the arguments, and asks whether to call it', async () => {
    const text = describeApproval(asked);
    expect(text).toContain('ZINO wants to call this MCP tool, which may change things on the host');
    expect(text).toContain('  server:   files\n  tool:     write_file (files__write_file)\n  approval: 0123456789');
    expect(text).toContain('  arguments:\n  | {\n  |   "path": "/srv/x",');
    expect(text).not.toContain('reason:');
    const prompts: string[] = [];
    const written: string[] = [];
    const question = (prompt: string): Promise<string> => {
      prompts.push(prompt);
      return Promise.resolve('y');
    };
    const handler = approvalHandler({ kind: 'ask', question }, (t) => written.push(t), new AbortController().signal);
    expect(await handler(asked)).toEqual({ decision: 'allow' });
    expect(prompts).toEqual(['Call it? [y]es / [n]o / [a]lways for this request: ']);
    const yes: string[] = [];
    await approvalHandler({ kind: 'yes' }, (t) => yes.push(t), new AbortController().signal)(asked);
    expect(yes).toEqual(['[host] approved (--yes): files__write_file\n']);
  });

  it('zino audit prints an MCP record with its server, tool and arguments', () => {
    const base = { time: '2025-01-02T03:04:05.678Z', id: 'x', request_id: 'req-mcp-1', where: 'mcp', server: 'files', tool: 'write_file' };
    const args = { arguments: '{"path":"/srv/x","content":"hi"}' };
    expect(formatRecord({ ...base, ...args, event: 'decision', decision: 'deny', how: 'denied', note: 'no' })).toBe(
      '2025-01-02 03:04:05Z  decision  mcp      denied            mcp      DENIED              req=req-mcp-1  files/write_file {"path":"/srv/x","content":"hi"} note: "no"',
    );
    expect(formatRecord({ ...base, ...args, event: 'run', decision: 'allow', how: 'read_only', is_error: true, duration_ms: 12 })).toContain(
      '  read_only         mcp      tool error 12 ms  ',
    );
    expect(formatRecord({ ...base, arguments: `{"content":"${'x'.repeat(100)}"}`, event: 'run', decision: 'allow', how: 'trusted', duration_ms: 3 })).toMatch(
      / done 3 ms .* files\/write_file \{"content":"x+ …$/,
    );
  });
});
