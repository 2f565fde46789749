/**
 * Where a host run executes. exc decides whether a host run may happen (policy or
 * a person) and records that decision in the audit log first; then it hands the run
 * to a {@link HostRunner}. Today that is {@link localHostRunner}: the program runs
 * directly, as exc's own user, without bubblewrap (under `zino up`, as the user who
 * started the suite). A privileged runner (a separate unit acting as
 * `[approval] host_user`) replaces this one function, and checks the run against
 * its recorded decision (`decisionId`, `codeSha256`) before running it.
 */
import { spawnSync } from 'node:child_process';
import { ConfigError } from '../../runtime/index.js';
import { execute, type ExecuteDeps, type ExecuteOutcome } from './execute.js';
import type { Executor } from './executors.js';

/** A host run as exc hands it over. */
export interface HostRun {
  /** The `id` of the audit log's `decision` record that allowed it. */
  decisionId: string;
  executor: Executor;
  code: string;
  /** SHA-256 of `code` (UTF-8), as recorded with the decision. */
  codeSha256: string;
  requestId: string;
}

/** Runs an allowed host run; resolves with its outcome, rejects only on cancellation or a broken runner. */
export type HostRunner = (run: HostRun, signal: AbortSignal) => Promise<ExecuteOutcome & { uid?: number | undefined }>;

/** Runs host runs in exc's own process tree, as exc's user, without a sandbox. */
export function localHostRunner(deps: ExecuteDeps): HostRunner {
  return async (run, signal) => ({ ...(await execute(deps, run.executor, run.code, signal, true)), uid: process.geteuid?.() });
}

/** The uid of `[approval] host_user` (a name or a number), looked up with id(1); throws ConfigError when there is no such account. */
export function hostUserId(name: string): number {
  if (/^\d+$/.test(name)) return Number(name);
  const result = spawnSync('id', ['-u', '--', name], { encoding: 'utf8', timeout: 10_000 });
  const uid = result.status === 0 ? Number(result.stdout.trim()) : Number.NaN;
  if (!Number.isInteger(uid)) throw new ConfigError(`[approval] host_user: no account named ${JSON.stringify(name)} on this host`);
  return uid;
}
