/**
 * Whether an MCP tool call may run, and the audit log's record of it. An MCP tool
 * runs outside the sandbox, on the host, with whatever the server can reach; so it
 * follows the host-run approval policy unless its server is `trusted = true` or the
 * server annotates the tool `readOnlyHint` (a hint from a server the operator chose
 * to configure).
 *
 * Every call goes through {@link gateMcpCall}, and only through it (its one caller
 * is `McpHub.call`): a call that needs approval is decided by `[approval]` like a
 * host run (`mode`, `unattended`, a person asked with `approval_required` when the
 * caller relays it; the allow rules match command lines and do not apply), and
 * every call, whether it ran, was refused, approved or denied, is written to the
 * audit log with its server, tool and arguments, the decision before the call.
 */
import { randomUUID } from 'node:crypto';
import { ZinoError, abortError, castToError, isAbortError, type Logger } from '../../../runtime/index.js';
import type { ApprovalRequired, CallToolResult, McpContent, McpToolAnnotations } from '../../../protocol/exc.js';
import { askPerson, type ApprovalBook } from '../approvals.js';
import { argumentFields, recordOrLog, type AuditHow, type AuditLog, type McpAuditRecord } from '../audit.js';
import { decideMcpCall, mcpPersonDenial, type ApprovalPolicy } from '../policy.js';

/** Why a call may run without `[approval]`, or that the policy decides it. */
export type McpVerdict = 'trusted' | 'read_only' | 'policy';

/** What the gate needs from exc: the `[approval]` policy, the pending approvals and the audit log. */
export interface McpGateDeps {
  policy: ApprovalPolicy;
  /** `[approval] timeout_s`, for the model's message. */
  timeoutS: number;
  book: ApprovalBook;
  audit: AuditLog;
}

/** One call at the gate, its arguments already checked against the tool's schema. */
export interface McpCallFacts {
  server: string;
  tool: string;
  /** The function name the model called (`files__write_file`). */
  name: string;
  trusted: boolean;
  annotations: McpToolAnnotations | undefined;
  arguments: Record<string, unknown>;
  /** The caller relays `approval_required` frames. */
  approvals: boolean;
  channelId?: string | undefined;
}

/** The request the call belongs to. */
export interface McpGateContext {
  signal: AbortSignal;
  log: Logger;
  requestId: string;
  send(frame: ApprovalRequired): Promise<void>;
}

/** What the server answered, bounded. */
export interface McpCallOutcome {
  content: McpContent[];
  isError: boolean;
  truncated: boolean;
}

type Base = Omit<McpAuditRecord, 'time' | 'event' | 'decision' | 'how'>;

/** Whether `[approval]` decides a call of a tool with `annotations` on a server that is (not) `trusted`. */
export function mcpVerdict(trusted: boolean, annotations: McpToolAnnotations | undefined): McpVerdict {
  if (trusted) return 'trusted';
  if (annotations?.readOnlyHint === true) return 'read_only';
  return 'policy';
}

/** True when a call skips `[approval]`: what `list_tools` reports as `runs_without_approval`. */
export function runsWithoutApproval(trusted: boolean, annotations: McpToolAnnotations | undefined): boolean {
  return mcpVerdict(trusted, annotations) !== 'policy';
}

/**
 * Decides `call`, records the decision, and runs it with `run` when it may run:
 * the result says how it was allowed, or (`approval: "refused"`, `is_error`) why it
 * was not, in words for the model. Throws when the caller went away (recorded as
 * cancelled) and, with AUDIT_UNAVAILABLE, when an allowed call could not be recorded
 * (then it is not made).
 */
export async function gateMcpCall(
  deps: McpGateDeps,
  call: McpCallFacts,
  ctx: McpGateContext,
  run: (signal: AbortSignal) => Promise<McpCallOutcome>,
): Promise<CallToolResult> {
  const base: Base = {
    id: randomUUID(),
    request_id: ctx.requestId,
    ...(call.channelId === undefined ? {} : { channel_id: call.channelId }),
    where: 'mcp',
    server: call.server,
    tool: call.tool,
    ...argumentFields(call.arguments),
  };
  const verdict = mcpVerdict(call.trusted, call.annotations);
  if (verdict !== 'policy') return perform(deps, base, verdict, verdict, ctx, run);

  const what = `the MCP tool ${call.name}`;
  const decision = decideMcpCall(deps.policy, { canAsk: call.approvals, call: what, server: call.server });
  let how: AuditHow;
  let approval: Partial<Base> = {};
  if (decision.verdict === 'deny') {
    await record(deps, ctx, 'decision', Object.assign({}, base, { decision: 'deny', how: decision.how } satisfies Partial<McpAuditRecord>));
    return refused(ctx, call, decision.how, decision.message);
  } else if (decision.verdict === 'allow') {
    how = decision.how;
  } else {
    const ask = {
      executor: call.name,
      code: JSON.stringify(call.arguments, null, 2),
      reason: '',
      requestId: ctx.requestId,
      channelId: call.channelId,
      noSandbox: false,
      mcp: { server: call.server, tool: call.tool },
    };
    const answer = await askPerson(deps.book, ask, ctx, 'call_tool', { server: call.server, tool: call.tool }, (approvalId) =>
      record(deps, ctx, 'decision', Object.assign({}, base, { approval_id: approvalId, decision: 'deny', how: 'cancelled' } satisfies Partial<McpAuditRecord>)),
    );
    approval = { approval_id: answer.id, ...(answer.note === undefined ? {} : { note: answer.note }) };
    if (answer.decision === 'deny') {
      await record(deps, ctx, 'decision', Object.assign({}, base, approval, { decision: 'deny', how: answer.how } satisfies Partial<McpAuditRecord>));
      return refused(ctx, call, answer.how, mcpPersonDenial(what, answer.how, answer.note, deps.timeoutS));
    }
    how = answer.how;
  }
  // The record is what allows the call: without it, nothing is sent to the server.
  try {
    await deps.audit.append({ time: now(), event: 'decision', ...base, ...approval, decision: 'allow', how });
  } catch (err) {
    ctx.log.error(
      { err: castToError(err), how, server: call.server, tool: call.tool },
      'mcp tool call refused: its decision could not be written to the audit log',
    );
    throw new ZinoError(
      'AUDIT_UNAVAILABLE',
      `${what} was allowed (${how}) but could not be recorded in the audit log (${deps.audit.problem ?? 'write failed'}), so it was not called`,
    );
  }
  return perform(deps, Object.assign({}, base, approval), 'approved', how, ctx, run);
}

/** Makes the call, then records it; the record of a call that happened is best effort (it already happened). */
async function perform(
  deps: McpGateDeps,
  base: Base,
  approval: 'trusted' | 'read_only' | 'approved',
  how: AuditHow,
  ctx: McpGateContext,
  run: (signal: AbortSignal) => Promise<McpCallOutcome>,
): Promise<CallToolResult> {
  const started = performance.now();
  let outcome: McpCallOutcome;
  try {
    // The caller may have gone while the decision was written: recorded as a call that was not made.
    if (ctx.signal.aborted) throw abortError(ctx.signal, 'call_tool');
    outcome = await run(ctx.signal);
  } catch (err) {
    const error = isAbortError(err) ? 'cancelled' : castToError(err).message;
    await record(
      deps,
      ctx,
      'run',
      Object.assign({}, base, { decision: 'allow', how, error, duration_ms: Math.round(performance.now() - started) } satisfies Partial<McpAuditRecord>),
    );
    throw err;
  }
  const durationMs = Math.round(performance.now() - started);
  await record(
    deps,
    ctx,
    'run',
    Object.assign({}, base, {
      decision: 'allow',
      how,
      is_error: outcome.isError,
      ...(outcome.truncated ? { truncated: true } : {}),
      duration_ms: durationMs,
    } satisfies Partial<McpAuditRecord>),
  );
  ctx.log.info({ server: base.server, tool: base.tool, approval, how, is_error: outcome.isError, truncated: outcome.truncated, durationMs }, 'mcp tool called');
  return {
    type: 'tool_result',
    content: outcome.content,
    is_error: outcome.isError,
    approval,
    ...(approval === 'approved' ? { decision: how } : {}),
    ...(outcome.truncated ? { truncated: true } : {}),
    duration_ms: durationMs,
  };
}

function refused(ctx: McpGateContext, call: McpCallFacts, how: AuditHow, message: string): CallToolResult {
  ctx.log.info({ server: call.server, tool: call.tool, approval: 'refused', how }, 'mcp tool call refused');
  return { type: 'tool_result', content: [{ type: 'text', text: message }], is_error: true, approval: 'refused', decision: how };
}

function record(deps: McpGateDeps, ctx: McpGateContext, event: 'decision' | 'run', fields: Omit<McpAuditRecord, 'time' | 'event'>): Promise<void> {
  const problem = `mcp tool ${event === 'run' ? 'call' : 'refusal'} not recorded: the audit log cannot be written`;
  return recordOrLog(deps.audit, ctx.log, { time: now(), event, ...fields }, { server: fields.server, tool: fields.tool }, problem);
}

function now(): string {
  return new Date().toISOString();
}
