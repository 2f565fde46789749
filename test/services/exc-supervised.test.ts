/**
 * exc's side of supervised action, on its own socket: without a sandbox every run
 * is a host run under the policy; approvals are asked only of a caller that opted
 * in; `capabilities` reports the policy and the audit log.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { request, stream, type Frame } from '../../src/runtime/index.js';
import { startService, writeTestConfig, type ConfigOverrides, type StartedService } from '../../src/testing/suite.js';
import { tempDir } from '../helpers/util.js';

const started: { service: StartedService; cleanup: () => void }[] = [];
afterEach(async () => {
  for (const { service, cleanup } of started.splice(0)) {
    expect(await service.stop()).toEqual({ code: 0, signal: null });
    cleanup();
  }
});

async function exc(overrides: ConfigOverrides): Promise<{ service: StartedService; dir: string; audit: () => Frame[] }> {
  const { dir, cleanup } = tempDir('zsup');
  const { file, config } = writeTestConfig(dir, overrides);
  const service = await startService('exc', file);
  started.push({ service, cleanup });
  const audit = (): Frame[] =>
    existsSync(config.exc.audit_log)
      ? readFileSync(config.exc.audit_log, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Frame)
      : [];
  return { service, dir, audit };
}

describe('exc without a sandbox', () => {
  it('treats every run as a host run: unattended deny for a caller that cannot be asked', async () => {
    const { service, dir, audit } = await exc({ exc: { sandbox: 'none' }, approval: { mode: 'ask' } });
    const proof = path.join(dir, 'proof');
    await expect(request(service.socket, { type: 'execute', executor: 'bash', code: `touch ${proof}`, request_id: 'no-sandbox-1' })).rejects.toMatchObject({
      code: 'APPROVAL_DENIED',
      message: expect.stringContaining('[approval] unattended = "deny"'),
    });
    expect(existsSync(proof)).toBe(false);
    expect(audit()).toEqual([expect.objectContaining({ request_id: 'no-sandbox-1', where: 'host', decision: 'deny', how: 'unattended:deny' })]);
  });

  it('asks a caller that opted in, saying no sandbox can be used', async () => {
    const { service, dir, audit } = await exc({ exc: { sandbox: 'none' }, approval: { mode: 'ask' } });
    const proof = path.join(dir, 'proof');
    const frames: Frame[] = [];
    for await (const frame of stream(service.socket, {
      type: 'execute',
      executor: 'bash',
      code: `touch ${proof}`,
      approvals: true,
      request_id: 'no-sandbox-2',
    })) {
      frames.push(frame);
      if (frame.type === 'approval_required') {
        expect(frame).toMatchObject({ no_sandbox: true, reason: '' });
        expect(await request(service.socket, { type: 'approve', id: frame.id, decision: 'allow' })).toEqual({ type: 'ok' });
      }
    }
    expect(frames.map((f) => f.type)).toEqual(['approval_required', 'result']);
    expect(frames[1]).toMatchObject({ exit_code: 0, sandboxed: false, decision: 'approved' });
    expect(existsSync(proof)).toBe(true);
    expect(audit().map((r) => [r.event, r.how, r.where])).toEqual([
      ['decision', 'approved', 'host'],
      ['run', 'approved', 'host'],
    ]);
  });

  it('reports the policy, the pending approvals and the audit log in capabilities', async () => {
    const { service, dir } = await exc({ exc: { sandbox: 'none' }, approval: { mode: 'allow', allow_rules: ['uptime'] } });
    expect(await request(service.socket, { type: 'capabilities' })).toMatchObject({
      approval: { mode: 'allow', unattended: 'deny', timeout_s: 300, rules: 1, pending: 0 },
      audit: { file: path.join(dir, 'data', 'audit.jsonl'), ok: true },
    });
  });

  it('refuses to start with a host_user that does not exist', async () => {
    const { dir, cleanup } = tempDir('zsup');
    const { file } = writeTestConfig(dir, { approval: { host_user: 'no-such-user-zino' } });
    await expect(startService('exc', file)).rejects.toThrow(/"code":"CONFIG".*\[approval\] host_user: no account named .*no-such-user-zino/);
    cleanup();
  });
});
