/**
 * Carrying out a plan: what runs where, what a dry run does, and how a step that
 * cannot be done is reported (the command then exits non-zero).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Action } from '../../src/deploy/actions.js';
import { applyPlan } from '../../src/deploy/apply.js';
import { makeLayout } from '../../src/deploy/layout.js';
import { tempDir } from '../helpers/util.js';

function collect(): { lines: string[]; print: (line: string) => void } {
  const lines: string[] = [];
  return { lines, print: (line) => lines.push(line) };
}

describe('applyPlan', () => {
  it('writes files under another root with their mode, and prints commands for the target instead of running them', () => {
    const { dir, cleanup } = tempDir('zap');
    try {
      const { lines, print } = collect();
      const actions: Action[] = [
        { kind: 'write', path: '/etc/zino/zino.env', content: 'LLM_API_KEY=\n', mode: 0o640, owner: { user: 'root', group: 'zino' }, why: 'key' },
        { kind: 'run', argv: ['systemctl', 'daemon-reload'], why: 'load', manager: 'required' },
        { kind: 'run', argv: ['false'], why: 'would fail here', manager: 'none' },
      ];
      const result = applyPlan(actions, { layout: makeLayout({ root: dir }), dryRun: false, systemdRunning: false, print });
      const file = path.join(dir, 'etc/zino/zino.env');
      expect(readFileSync(file, 'utf8')).toBe('LLM_API_KEY=\n');
      expect(statSync(file).mode & 0o777).toBe(0o640);
      expect(lines).toContain('  on the target system, run: systemctl daemon-reload  (load)');
      expect(lines).toContain('  on the target system, run: false  (would fail here)');
      expect(result).toEqual({ done: 1, failed: [] });
    } finally {
      cleanup();
    }
  });

  it('changes nothing in a dry run', () => {
    const { dir, cleanup } = tempDir('zap');
    try {
      const { lines, print } = collect();
      const actions: Action[] = [
        { kind: 'mkdir', path: '/etc/zino', mode: 0o750 },
        { kind: 'remove', path: '/var/lib/zino', why: 'purge' },
      ];
      const result = applyPlan(actions, { layout: makeLayout({ root: dir }), dryRun: true, systemdRunning: false, print });
      expect(existsSync(path.join(dir, 'etc'))).toBe(false);
      expect(lines).toEqual(['  would create directory /etc/zino (0750)', '  would remove /var/lib/zino: purge']);
      expect(result).toEqual({ done: 2, failed: [] });
    } finally {
      cleanup();
    }
  });

  it('on this system without systemd, reports a step that needs it as not done, and skips one that has nothing to do', () => {
    const { lines, print } = collect();
    const actions: Action[] = [
      { kind: 'run', argv: ['systemctl', 'start', 'zino.target'], why: 'start', manager: 'required' },
      { kind: 'run', argv: ['systemctl', 'stop', 'zino.target'], why: 'stop', manager: 'optional' },
    ];
    const result = applyPlan(actions, { layout: makeLayout(), dryRun: false, systemdRunning: false, print });
    expect(result.failed).toEqual(['systemctl start zino.target: skipped, systemd is not running on this machine']);
    expect(lines[1]).toBe('  - systemctl stop zino.target: skipped, systemd is not running on this machine (nothing to do)');
  });

  it('reports a failed command with its status and goes on with the next action', () => {
    const { dir, cleanup } = tempDir('zap');
    try {
      const { print } = collect();
      const actions: Action[] = [
        { kind: 'run', argv: ['sh', '-c', 'echo broken >&2; exit 3'], why: 'fails', manager: 'none' },
        { kind: 'run', argv: ['zino-no-such-command'], why: 'missing', manager: 'none' },
        { kind: 'mkdir', path: path.join(dir, 'after'), mode: 0o755 },
      ];
      const result = applyPlan(actions, { layout: makeLayout(), dryRun: false, systemdRunning: true, print });
      expect(result.failed).toEqual([
        "run: sh -c 'echo broken >&2; exit 3'  (fails): exit status 3: broken",
        'run: zino-no-such-command  (missing): zino-no-such-command is not installed',
      ]);
      expect(existsSync(path.join(dir, 'after'))).toBe(true);
    } finally {
      cleanup();
    }
  });
});
