/**
 * Running what a block asks for and turning the outcome into the text of its
 * response block. Every failure here stays in the loop: it becomes an error the
 * model reads, never an error frame, unless the caller has gone.
 */
import { RemoteError, ZinoError, abortError, type Endpoint } from '../../runtime/index.js';
import type { ApprovalRequired, EXC, ExecuteResult } from '../../protocol/exc.js';
import { approvalFrame } from './approval-frame.js';
import type { Usage } from '../../protocol/rtr.js';
import type { Action, Placement } from './blocks.js';
import { errorBody, formatResult } from './format.js';
import type { RtrTarget, Sampling } from './llm.js';
import { runMcpCall } from './mcp.js';
import { fabricate } from './pipeline.js';

/** How to reach exc; its default timeout bounds one execution call (exc's own timeout plus a margin). */
export type ExcTarget = Endpoint<typeof EXC>;

/** What running a block needs. */
export interface ActionDeps {
  rtr: RtrTarget;
  exc: ExcTarget;
  sampling: Sampling;
  signal: AbortSignal;
  requestId: string;
  onUsage: (usage: Usage) => void;
  /** Passes exc's `approval_required` frames on; undefined when the caller did not ask for them (exc then applies `unattended`). */
  onApproval?: ((frame: ApprovalRequired) => Promise<void>) | undefined;
  /** The daemon channel, for exc's audit log. */
  channelId?: string | undefined;
  /** Added to an MCP server's `timeout_s` for agr's bound on a call_tool. */
  mcpMarginMs: number;
  /** `[approval] timeout_s` in ms, added to that bound when the call may wait for a person. */
  approvalMs: number;
  /** The executor tools' function names (for "unknown tool" messages). */
  executorTools: readonly string[];
}

/** The outcome of one block: the response body and an exit code for the event. */
export interface ActionOutcome {
  body: string;
  exitCode: number;
}

/** Runs `action`. Throws only when cancelled. */
export async function runAction(action: Action, deps: ActionDeps): Promise<ActionOutcome> {
  try {
    if (action.kind === 'invalid') return { body: errorBody(action.error), exitCode: -1 };
    if (action.kind === 'tool') return await execute(deps, action.executor, action.code, action);
    if (action.kind === 'mcp') return await runMcpCall(Object.assign({}, deps, { marginMs: deps.mcpMarginMs }), action.name, action.arguments);
    const { code } = await fabricate(deps.rtr, action.skill, action.request, deps.sampling, deps);
    if (code === '') return { body: errorBody(`the ${action.skill.name} skill produced no code for this request`), exitCode: -1 };
    // A skill's fabricated code runs where the task asked, under the same rules as a tool call.
    return await execute(deps, action.skill.executor, code, action);
  } catch (err) {
    if (deps.signal.aborted) throw abortError(deps.signal, 'run');
    return { body: errorBody(describeFailure(err)), exitCode: -1 };
  }
}

async function execute(deps: ActionDeps, executor: string, code: string, placement: Placement): Promise<ActionOutcome> {
  const body = {
    executor,
    code,
    request_id: deps.requestId,
    ...(placement.host ? { host: true, reason: placement.reason } : {}),
    ...(deps.onApproval ? { approvals: true } : {}),
    ...(deps.channelId === undefined ? {} : { channel_id: deps.channelId }),
  };
  let result: ExecuteResult | undefined;
  for await (const frame of deps.exc.stream('execute', body, { signal: deps.signal })) {
    if (frame.type === 'approval_required') {
      const approval = approvalFrame(frame);
      if (approval) await deps.onApproval?.(approval);
    } else if (frame.type === 'error') throw new RemoteError(frame);
    else if (frame.type === 'result') result = frame;
  }
  if (!result) throw new ZinoError('UPSTREAM_ERROR', 'exc sent no result');
  // Checked, not trusted: the reply is another process's data.
  if (typeof result.exit_code !== 'number') throw new ZinoError('UPSTREAM_ERROR', 'exc answered execute without an exit code');
  return {
    body: formatResult({
      exit_code: result.exit_code,
      stdout: String(result.stdout ?? ''),
      stderr: String(result.stderr ?? ''),
      validation: result.validation,
    }),
    exitCode: result.exit_code,
  };
}

function describeFailure(err: unknown): string {
  if (err instanceof RemoteError) return `${err.message}`;
  if (err instanceof ZinoError) {
    if (err.code === 'UPSTREAM_UNAVAILABLE') return `the code could not be run: ${err.message}`;
    return err.message;
  }
  return 'the block could not be run (internal error)';
}
