/**
 * Where a host run executes. exc decides whether a host run may happen (policy or
 * a person) and records that decision in the audit log first; then it hands the run
 * to a {@link HostRunner}: {@link localHostRunner} runs the program directly, as
 * exc's own user, without bubblewrap (under `zino up`, as the user who started the
 * suite); {@link runnerHostRunner}, used when `[approval] host_user` is set, sends it
 * to the privileged runner (`zino serve runner`), which checks the run against its
 * recorded decision (`decisionId`, `codeSha256`) and runs it as that account.
 */
import { spawnSync } from 'node:child_process';
import { RUNNER } from '../../protocol/runner.js';
import { ConfigError, Endpoint, clientOptions, type ResolvedConfig } from '../../runtime/index.js';
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
  return async (run, signal) => Object.assign(await execute(deps, run.executor, run.code, signal, true), { uid: process.geteuid?.() });
}

/** The uid of `[approval] host_user` (a name or a number), looked up with id(1); throws ConfigError when there is no such account. */
export function hostUserId(name: string): number {
  if (/^\d+$/.test(name)) return Number(name);
  const result = spawnSync('id', ['-u', '--', name], { encoding: 'utf8', timeout: 10_000 });
  const uid = result.status === 0 ? Number(result.stdout.trim()) : Number.NaN;
  if (!Number.isInteger(uid)) throw new ConfigError(`[approval] host_user: no account named ${JSON.stringify(name)} on this host`);
  return uid;
}

/** A named account: what a host run acting as it needs (the uid, the primary group, the name for USER and LOGNAME). */
export interface HostAccount {
  uid: number;
  gid: number;
  name: string;
}

/** `[approval] host_user` as an account (a name or a uid), looked up with id(1); throws ConfigError when there is no such account. */
export function hostAccount(user: string): HostAccount {
  const uid = hostUserId(user);
  const gid = idOf(['-g', '--', user]);
  const name = /^\d+$/.test(user) ? (spawnSync('id', ['-un', '--', user], { encoding: 'utf8', timeout: 10_000 }).stdout?.trim() ?? '') : user;
  if (gid === undefined) throw new ConfigError(`[approval] host_user: no account named ${JSON.stringify(user)} on this host`);
  return { uid, gid, name: name === '' ? user : name };
}

function idOf(args: string[]): number | undefined {
  const result = spawnSync('id', args, { encoding: 'utf8', timeout: 10_000 });
  const value = result.status === 0 ? Number(result.stdout.trim()) : Number.NaN;
  return Number.isInteger(value) ? value : undefined;
}

/**
 * Sends host runs to the privileged runner at `[runner] socket`. Cancelling closes the
 * connection, which makes the runner kill the run's process group. A runner that is
 * not there, or that refuses the run, rejects (the run is recorded as not run).
 */
export function runnerHostRunner(config: Readonly<ResolvedConfig>): HostRunner {
  // The runner bounds the run by [exc] timeout itself; this bound only catches a runner that never answers.
  const timeoutMs = config.exc.timeout * 1000 + 60_000;
  const endpoint = new Endpoint(RUNNER, config.runner.socket, Object.assign(clientOptions(config, 'exc'), { name: 'the runner', timeoutMs }));
  return async (run, signal) => {
    const { uid, ...reply } = await endpoint.request(
      'run',
      { id: run.decisionId, executor: run.executor.name, code: run.code, sha256: run.codeSha256, request_id: run.requestId },
      { signal },
    );
    return { reply, leftovers: 0, uid };
  };
}
