/**
 * Carrying out a plan, one action at a time, saying what happened to each.
 *
 * Into the live root (`/`) commands run for real; into any other root they are
 * only printed ("on the target: …"), since systemctl or systemd-sysusers there
 * would change this machine. Owners are set by name from the root's own
 * /etc/passwd and /etc/group, and only into the live root. A failed action is
 * reported and the next ones still run: the summary lists everything that could
 * not be done.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { findGroup, findUser } from './accounts.js';
import { describe, isInformational, shellQuote, type Action, type Owner } from './actions.js';
import { installPackage } from './copy.js';
import type { Layout } from './layout.js';

/** How to apply. */
export interface ApplyOptions {
  layout: Layout;
  /** Print every action, change nothing. */
  dryRun: boolean;
  /** A systemd manager runs the live system. */
  systemdRunning: boolean;
  /** Where to report (one line per call). */
  print: (line: string) => void;
}

/** What happened. */
export interface ApplyResult {
  /** Actions carried out (or, dry, that would be). */
  done: number;
  /** What could not be done, one line each, with the reason. */
  failed: string[];
}

/** Applies `actions` in order. */
export function applyPlan(actions: Action[], options: ApplyOptions): ApplyResult {
  const { layout, print } = options;
  const result: ApplyResult = { done: 0, failed: [] };
  for (const action of actions) {
    if (isInformational(action)) {
      print(action.kind === 'keep' ? `  = ${describe(action)}` : `  ! ${describe(action)}`);
      continue;
    }
    if (options.dryRun) {
      print(`  would ${describe(action)}`);
      result.done++;
      continue;
    }
    if (action.kind === 'run' && !layout.live) {
      print(`  on the target system, run: ${action.argv.map(shellQuote).join(' ')}  (${action.why})`);
      continue;
    }
    if (action.kind === 'run' && action.manager !== 'none' && !options.systemdRunning) {
      const line = `${action.argv.map(shellQuote).join(' ')}: skipped, systemd is not running on this machine`;
      if (action.manager === 'required') {
        print(`  ✗ ${line}`);
        result.failed.push(line);
      } else {
        print(`  - ${line} (nothing to do)`);
      }
      continue;
    }
    try {
      const output = perform(action, options);
      print(`  ✓ ${describe(action)}`);
      for (const line of output?.split('\n') ?? []) if (line.trim() !== '') print(`      ${line}`);
      result.done++;
    } catch (err) {
      const line = `${describe(action)}: ${(err as Error).message}`;
      print(`  ✗ ${line}`);
      result.failed.push(line);
    }
  }
  return result;
}

/** Does `action`; returns a command's output, if any. */
function perform(action: Action, options: ApplyOptions): string | undefined {
  const { layout } = options;
  const at = layout.at;
  switch (action.kind) {
    case 'mkdir':
      mkdirSync(at(action.path), { recursive: true, mode: action.mode });
      chmodSync(at(action.path), action.mode);
      setOwner(at(action.path), action.owner, layout);
      return undefined;
    case 'write': {
      const file = at(action.path);
      mkdirSync(path.dirname(file), { recursive: true, mode: 0o755 });
      // Mode and owner are set before the content goes in: an env file with a key is never world-readable.
      writeFileSync(file, '', { mode: action.mode });
      chmodSync(file, action.mode);
      setOwner(file, action.owner, layout);
      writeFileSync(file, action.content);
      return undefined;
    }
    case 'install-package':
      mkdirSync(path.dirname(at(action.prefix)), { recursive: true, mode: 0o755 });
      installPackage(action.source, at(action.prefix), action.entries, action.manifest);
      return undefined;
    case 'remove':
      rmSync(at(action.path), { recursive: true, force: true });
      return undefined;
    case 'run':
      return run(action.argv);
    case 'keep':
    case 'note':
      return undefined;
  }
}

/** Sets the owner by name, from the root's accounts; only in the live root. */
function setOwner(file: string, owner: Owner | undefined, layout: Layout): void {
  if (!owner || !layout.live) return;
  const uid = owner.user === 'root' ? 0 : findUser(layout.root, owner.user)?.id;
  const gid = owner.group === 'root' ? 0 : findGroup(layout.root, owner.group)?.id;
  if (uid === undefined) throw new Error(`no user ${owner.user} on this system`);
  if (gid === undefined) throw new Error(`no group ${owner.group} on this system`);
  chownSync(file, uid, gid);
}

/** Runs a command and returns its output; throws with its status and last lines on failure. */
function run(argv: string[]): string {
  const [command, ...args] = argv;
  if (command === undefined) throw new Error('empty command');
  const result = spawnSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim();
  if (result.error) {
    const code = (result.error as NodeJS.ErrnoException).code;
    throw new Error(code === 'ENOENT' ? `${command} is not installed` : result.error.message);
  }
  if (result.status !== 0)
    throw new Error(`exit status ${String(result.status ?? result.signal)}${output ? `: ${output.split('\n').slice(-3).join(' / ')}` : ''}`);
  return output;
}
