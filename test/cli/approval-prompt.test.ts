/**
 * `zino ask` and host-run approvals (issue 14): on a terminal it shows the program,
 * the executor and the reason and takes y, n or a; `--yes` approves every host run of
 * the request; without a terminal nothing is asked and the policy applies. Real
 * services, the mock LLM, and a pseudo-terminal (test/helpers/pty.ts).
 */
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ServiceGroup } from '../../src/testing/suite.js';
import { runCli } from '../helpers/cli.js';
import { startWithMock, useMockLlm } from '../helpers/mock.js';
import { runInPty } from '../helpers/pty.js';

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
