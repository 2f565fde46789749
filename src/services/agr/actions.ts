/**
 * Running what a block asks for and turning the outcome into the text of its
 * response block. Every failure here stays in the loop: it becomes an error the
 * model reads, never an error frame, unless the caller has gone.
 */
import { RemoteError, ZinoError, abortError, type Endpoint } from '../../runtime/index.js';
import type { EXC } from '../../protocol/exc.js';
import type { Usage } from '../../protocol/rtr.js';
import type { Action } from './blocks.js';
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
  /** Added to an MCP server's `timeout_s` for agr's bound on a call_tool. */
  mcpMarginMs: number;
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
    if (action.kind === 'tool') return await execute(deps, action.executor, action.code);
    if (action.kind === 'mcp') return await runMcpCall({ ...deps, marginMs: deps.mcpMarginMs }, action.name, action.arguments);
    const { code } = await fabricate(deps.rtr, action.skill, action.request, deps.sampling, deps);
    if (code === '') return { body: errorBody(`the ${action.skill.name} skill produced no code for this request`), exitCode: -1 };
    return await execute(deps, action.skill.executor, code);
  } catch (err) {
    if (deps.signal.aborted) throw abortError(deps.signal, 'run');
    return { body: errorBody(describeFailure(err)), exitCode: -1 };
  }
}

async function execute(deps: ActionDeps, executor: string, code: string): Promise<ActionOutcome> {
  const result = await deps.exc.request('execute', { executor, code, request_id: deps.requestId }, { signal: deps.signal });
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
