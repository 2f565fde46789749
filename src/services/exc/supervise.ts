/**
 * `execute`, supervised: a sandboxed run just runs; a host run (asked for, or any
 * run when no sandbox can be used) goes through `[approval]` first, which may mean
 * sending `approval_required` up the stream and waiting for a person. Every run and
 * every host-run decision goes to the audit log, the decision before the run.
 */
import { randomUUID } from 'node:crypto';
import { ZinoError, abortError, castToError, isAbortError, type HandlerContext } from '../../runtime/index.js';
import type { ApprovalRequired, ExecuteResult } from '../../protocol/exc.js';
import { askPerson, type ApprovalBook } from './approvals.js';
import { codeFields, recordOrLog, type AuditHow, type AuditLog, type ProgramAuditRecord } from './audit.js';
import type { ExecuteOutcome } from './execute.js';
import type { Executor } from './executors.js';
import type { HostRunner } from './host.js';
import { decideHostRun, personDenial, type ApprovalPolicy } from './policy.js';

/** What supervising needs. */
export interface SupervisorDeps {
  /** A sandbox is active: runs not asking for the host go there. */
  sandboxActive: boolean;
  policy: ApprovalPolicy;
  /** `[approval] timeout_s`, for the model's message. */
  timeoutS: number;
  book: ApprovalBook;
  audit: AuditLog;
  runSandboxed: (executor: Executor, code: string, signal: AbortSignal) => Promise<ExecuteOutcome>;
  runOnHost: HostRunner;
}

/** One checked `execute` request. */
export interface ExecuteJob {
  executor: Executor;
  code: string;
  host: boolean;
  reason: string;
  /** The caller relays `approval_required` frames. */
  approvals: boolean;
  channelId?: string | undefined;
}

type Base = Omit<ProgramAuditRecord, 'time' | 'event' | 'decision' | 'how'>;

/** Runs `job` as the policy and the people allow; a refusal is an APPROVAL_DENIED error the model can read. */
export async function supervise(deps: SupervisorDeps, job: ExecuteJob, ctx: HandlerContext<ApprovalRequired>): Promise<ExecuteResult> {
  const onHost = job.host || !deps.sandboxActive;
  const base: Base = {
    id: randomUUID(),
    request_id: ctx.requestId,
    ...(job.channelId === undefined ? {} : { channel_id: job.channelId }),
    executor: job.executor.name,
    where: onHost ? 'host' : 'sandbox',
    ...(onHost && job.reason !== '' ? { reason: job.reason } : {}),
    ...codeFields(job.code),
  };
  if (!onHost) return run(deps, base, 'sandboxed', ctx, () => deps.runSandboxed(job.executor, job.code, ctx.signal));

  const noSandbox = !deps.sandboxActive;
  const decision = decideHostRun(deps.policy, { code: job.code, canAsk: job.approvals, noSandbox });
  let how: AuditHow;
  let approval: Partial<Base> = {};
  if (decision.verdict === 'deny') {
    await recordDecision(deps, ctx, Object.assign({}, base, { decision: 'deny', how: decision.how } satisfies Partial<ProgramAuditRecord>));
    throw new ZinoError('APPROVAL_DENIED', decision.message);
  } else if (decision.verdict === 'allow') {
    how = decision.how;
  } else {
    const ask = { executor: job.executor.name, code: job.code, reason: job.reason, requestId: ctx.requestId, channelId: job.channelId, noSandbox };
    const answer = await askPerson(deps.book, ask, ctx, 'execute', { executor: ask.executor }, (approvalId) =>
      recordDecision(deps, ctx, Object.assign({}, base, { approval_id: approvalId, decision: 'deny', how: 'cancelled' } satisfies Partial<ProgramAuditRecord>)),
    );
    approval = { approval_id: answer.id, ...(answer.note === undefined ? {} : { note: answer.note }) };
    if (answer.decision === 'deny') {
      await recordDecision(deps, ctx, Object.assign({}, base, approval, { decision: 'deny', how: answer.how } satisfies Partial<ProgramAuditRecord>));
      throw new ZinoError('APPROVAL_DENIED', personDenial(answer.how, answer.note, deps.timeoutS));
    }
    how = answer.how;
  }
  // The record is what allows the run: without it, nothing runs.
  try {
    await deps.audit.append({ time: now(), event: 'decision', ...base, ...approval, decision: 'allow', how });
  } catch (err) {
    ctx.log.error({ err: castToError(err), how }, 'host run refused: its decision could not be written to the audit log');
    throw new ZinoError(
      'AUDIT_UNAVAILABLE',
      `the host run was allowed (${how}) but could not be recorded in the audit log (${deps.audit.problem ?? 'write failed'}), so it was not run`,
    );
  }
  const runner = deps.runOnHost;
  return run(deps, Object.assign({}, base, approval), how, ctx, () => {
    // The caller may have gone while the decision was written: recorded as a run that did not start.
    if (ctx.signal.aborted) return Promise.reject(abortError(ctx.signal, 'execute'));
    return runner({ decisionId: base.id, executor: job.executor, code: job.code, codeSha256: base.code_sha256, requestId: ctx.requestId }, ctx.signal);
  });
}

/** Runs, then records the run; the record of a run that happened is best effort (the run already happened). */
async function run(
  deps: SupervisorDeps,
  base: Base,
  how: AuditHow,
  ctx: HandlerContext<ApprovalRequired>,
  start: () => Promise<ExecuteOutcome & { uid?: number | undefined }>,
): Promise<ExecuteResult> {
  const started = performance.now();
  let outcome: ExecuteOutcome & { uid?: number | undefined };
  try {
    outcome = await start();
  } catch (err) {
    const error = isAbortError(err) ? 'cancelled' : castToError(err).message;
    await recordRun(
      deps,
      ctx,
      Object.assign({}, base, { decision: 'allow', how, error, duration_ms: Math.round(performance.now() - started) } satisfies Partial<ProgramAuditRecord>),
    );
    throw err;
  }
  const { reply, leftovers } = outcome;
  await recordRun(
    deps,
    ctx,
    Object.assign({}, base, {
      decision: 'allow',
      how,
      ...(outcome.uid === undefined ? {} : { uid: outcome.uid }),
      exit_code: reply.exit_code,
      ...(reply.timed_out ? { timed_out: true } : {}),
      ...(reply.truncated ? { truncated: true } : {}),
      duration_ms: reply.duration_ms ?? Math.round(performance.now() - started),
      stdout_bytes: Buffer.byteLength(reply.stdout, 'utf8'),
      stderr_bytes: Buffer.byteLength(reply.stderr, 'utf8'),
    } satisfies Partial<ProgramAuditRecord>),
  );
  ctx.log.info(
    {
      executor: base.executor,
      where: base.where,
      how,
      exit_code: reply.exit_code,
      timed_out: reply.timed_out ?? false,
      truncated: reply.truncated ?? false,
      durationMs: reply.duration_ms,
      sandboxed: reply.sandboxed,
      leftovers,
    },
    'code executed',
  );
  // Copied by destructuring, which defines fields (the reply may come from the runner, another process), then set.
  const { ...answer } = reply;
  return Object.assign(answer, { decision: how });
}

function recordRun(deps: SupervisorDeps, ctx: HandlerContext<ApprovalRequired>, record: Omit<ProgramAuditRecord, 'time' | 'event'>): Promise<void> {
  return recordOrLog(
    deps.audit,
    ctx.log,
    { time: now(), event: 'run', ...record },
    { code_sha256: record.code_sha256 },
    'run not recorded: the audit log cannot be written',
  );
}

function recordDecision(deps: SupervisorDeps, ctx: HandlerContext<ApprovalRequired>, record: Omit<ProgramAuditRecord, 'time' | 'event'>): Promise<void> {
  const problem = 'refusal not recorded: the audit log cannot be written';
  return recordOrLog(deps.audit, ctx.log, { time: now(), event: 'decision', ...record }, { code_sha256: record.code_sha256 }, problem);
}

function now(): string {
  return new Date().toISOString();
}
