/**
 * `zino ask` and host-run approvals (issue 14): on a terminal it shows the program,
 * the executor and the reason and takes y, n or a; `--yes` approves every host run of
 * the request; without a terminal nothing is asked and the policy applies. Real
 * services, the mock LLM, and a pseudo-terminal (test/helpers/pty.ts).
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ZinoClient, type ApprovalRequired } from '../../src/client/index.js';
import type { ServiceGroup } from '../../src/testing/suite.js';
import { runCli } from '../helpers/cli.js';
import { startWithMock, useMockLlm } from '../helpers/mock.js';
import { runInPty } from '../helpers/pty-answers.js';

const llm = useMockLlm();
let group: ServiceGroup;
let cleanup: () => void;
let proof: string;

const QUESTION = 'Run it on the host? [y]es / [n]o / [a]lways for this request: ';

beforeAll(async () => {
  ({ group, cleanup } = await startWithMock(llm.mock, ['daemon', 'rtr', 'agr', 'exc', 'mem'], 'zpty', { exc: { sandbox: 'auto' }, approval: { mode: 'ask' } }));
  proof = path.join(group.dir, 'proof');
});
afterAll(async () => {
  await group.stop();
  cleanup();
});
beforeEach(() => rmSync(proof, { force: true }));

/** A model that asks for the host once per program in `codes` (in one reply), then reports. */
function script(...codes: string[]): void {
  const calls = codes.map(
    (code) => `<tool_call>${JSON.stringify({ name: 'execute_bash', arguments: { code, host: true, reason: 'make the proof' } })}</tool_call>`,
  );
  llm.script({
    rules: [
      { role: 'user', reply: `On it.${calls.join('\n')}` },
      { role: 'assistant', match: 'the operator denied this', reply: ' The operator said no.' },
      { role: 'assistant', match: 'error: ', reply: ' It was refused.' },
      { role: 'assistant', reply: ' Done.' },
    ],
  });
}

const ask = (...extra: string[]): string[] => ['ask', '--config', group.file, ...extra, 'make the proof'];

describe('zino ask on a terminal', () => {
  it('shows the program, executor and reason, and on "y" runs it on the host', async () => {
    script(`echo yes > ${proof}`);
    const { code, output } = await runInPty(ask(), [{ after: QUESTION, send: 'y\r' }]);
    expect(output).toContain('ZINO wants to run this program on the host, outside the sandbox:');
    expect(output).toContain('reason:   make the proof');
    expect(output).toContain('executor: bash');
    expect(output).toContain(`  | echo yes > ${proof}`);
    expect(output).toContain('Done.');
    expect(code).toBe(0);
    expect(existsSync(proof)).toBe(true);
  });

  it('on "n" denies it, and the model is told', async () => {
    script(`echo no > ${proof}`);
    const { code, output } = await runInPty(ask(), [{ after: QUESTION, send: 'n\r' }]);
    expect(output).toContain('[host] denied: the model will be told.');
    expect(output).toContain('The operator said no.');
    expect(code).toBe(0);
    expect(existsSync(proof)).toBe(false);
  });

  it('on "a" approves the rest of the request without asking again', async () => {
    script(`echo one > ${proof}`, `echo two >> ${proof}`);
    const { code, output } = await runInPty(ask('--stream'), [{ after: QUESTION, send: 'a\r' }]);
    expect(output.split(QUESTION)).toHaveLength(2);
    expect(output).toContain(`[host] approved (always for this request): echo two >> ${proof}`);
    expect(code).toBe(0);
    expect(existsSync(proof)).toBe(true);
  });

  it('shows a long program as its first 40 lines and how many more', async () => {
    const lines = Array.from({ length: 45 }, (_, i) => `echo line-${i + 1}`);
    script(lines.join('\n'));
    const { output } = await runInPty(ask(), [{ after: QUESTION, send: 'n\r' }]);
    expect(output).toContain('  | echo line-40\r\n');
    expect(output).not.toContain('  | echo line-41');
    expect(output).toContain('… 5 more lines');
  });

  it('asks again on an answer it does not understand', async () => {
    script(`echo again > ${proof}`);
    const { output } = await runInPty(ask(), [
      { after: QUESTION, send: 'perhaps\r' },
      { after: QUESTION, send: 'y\r', nth: 2 },
    ]);
    expect(output).toContain('Please answer y, n or a.');
    expect(existsSync(proof)).toBe(true);
  });
});

describe('zino chat on a terminal', () => {
  it('asks in place, takes the answer from the same input, and goes on with the session', async () => {
    script(`echo chat > ${proof}`);
    const { code, output } = await runInPty(
      ['chat', '--config', group.file, '--channel', 'pty-chat'],
      [
        { after: 'you> ', send: 'make the proof\r' },
        { after: QUESTION, send: 'y\r' },
        { after: 'you> ', send: '/exit\r', nth: 2 },
      ],
    );
    expect(output).toContain('ZINO wants to run this program on the host, outside the sandbox:');
    expect(output).toContain('Done.');
    expect(code).toBe(0);
    expect(existsSync(proof)).toBe(true);
  });
});

describe('zino ask without a terminal', () => {
  it('with --yes approves every host run of the request', async () => {
    script(`echo one > ${proof}`, `echo two >> ${proof}`);
    const { code, stdout, stderr } = await runCli(ask('--yes'));
    expect(stderr.match(/\[host\] approved \(--yes\)/g)).toHaveLength(2);
    expect(stdout).toContain('Done.');
    expect(code).toBe(0);
    expect(existsSync(proof)).toBe(true);
  });

  it('asks nothing, and the policy ([approval] unattended = "deny") applies', async () => {
    script(`echo unasked > ${proof}`);
    const { code, stdout, stderr } = await runCli(ask());
    expect(stderr).not.toContain('Run it on the host?');
    expect(stdout).toContain('It was refused.');
    expect(code).toBe(0);
    expect(existsSync(proof)).toBe(false);
  });
});

describe('zino approvals, approve, deny and audit from another terminal', () => {
  /** Starts an ask through the client library that waits for someone else to answer; resolves with the approval and the answer to come. */
  async function pending(message: string, requestId: string): Promise<{ approval: ApprovalRequired; answer: Promise<string> }> {
    const client = new ZinoClient({ config: group.config });
    let found!: (a: ApprovalRequired) => void;
    const approval = new Promise<ApprovalRequired>((resolve) => (found = resolve));
    const answer = (async () => {
      let text = '';
      for await (const frame of client.askStream(message, { approvals: true, requestId })) {
        if (frame.type === 'approval_required') found(frame);
        if (frame.type === 'done') text = frame.full_text;
      }
      return text;
    })();
    return { approval: await approval, answer };
  }

  it('lists what waits, approves it by id, and prints it in the audit log', async () => {
    script(`echo approved-elsewhere > ${proof}`);
    const { approval, answer } = await pending('make the proof', 'cli-approve');
    const listed = await runCli(['approvals', '--config', group.file]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(`approval: ${approval.id}`);
    expect(listed.stdout).toContain(`  | echo approved-elsewhere > ${proof}`);
    expect(listed.stdout).toContain('request cli-approve');
    const json = JSON.parse((await runCli(['approvals', approval.id, '--json', '--config', group.file])).stdout) as { pending: { id: string }[] };
    expect(json.pending.map((p) => p.id)).toEqual([approval.id]);
    const approved = await runCli(['approve', approval.id, '--config', group.file]);
    expect(approved).toMatchObject({ code: 0, stdout: `approved ${approval.id}: the run goes ahead\n` });
    expect(await answer).toContain('Done.');
    expect(readFileSync(proof, 'utf8')).toBe('approved-elsewhere\n');
    const again = await runCli(['approve', approval.id, '--config', group.file]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^zino: approval "[0-9a-f]+" is settled: it was already allowed/);

    const audit = await runCli(['audit', '--since', '1h', '--config', group.file]);
    expect(audit.code).toBe(0);
    const lines = audit.stdout.split('\n').filter((l) => l.includes('req=cli-approve'));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/ decision +host +approved +bash +allowed /);
    expect(lines[1]).toMatch(/ run +host +approved +bash +exit 0 \d+ ms /);
    const records = (await runCli(['audit', '--json', '--config', group.file])).stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { request_id: string; approval_id?: string });
    expect(records.filter((r) => r.request_id === 'cli-approve').map((r) => r.approval_id)).toEqual([approval.id, approval.id]);
  });

  it('denies with a note the model reads', async () => {
    script(`echo never > ${proof}`);
    const { approval, answer } = await pending('make the proof', 'cli-deny');
    const denied = await runCli(['deny', approval.id, '--note', 'use the staging box', '--config', group.file]);
    expect(denied).toMatchObject({ code: 0, stdout: `denied ${approval.id}: the model is told\n` });
    expect(await answer).toContain('The operator said no.');
    const messages = llm.mock.stats.bodies.at(-1)?.messages as { content: string }[];
    expect(messages.at(-1)?.content).toContain('the operator denied this: use the staging box');
    expect(existsSync(proof)).toBe(false);
    const audit = await runCli(['audit', '--config', group.file]);
    expect(audit.stdout.split('\n').find((l) => l.includes('req=cli-deny'))).toMatch(/ decision +host +denied +bash +DENIED .* note: "use the staging box"$/);
  });

  it('says so when nothing waits, an id is unknown, or --since is not a duration', async () => {
    expect((await runCli(['approvals', '--config', group.file])).stdout).toBe('No host run is waiting for approval.\n');
    const unknown = await runCli(['deny', 'ffffffffff', '--config', group.file]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('zino: no pending approval "ffffffffff" (see "zino approvals")\n');
    const bad = await runCli(['audit', '--since', 'yesterday', '--config', group.file]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--since takes a duration such as 90s, 30m, 12h or 7d');
  });
});
