/**
 * The agentic loop. Each iteration sends the messages to rtr and parses the
 * reply as it arrives; every block runs the moment its closing tag arrives and its
 * response block is injected right after it (and streamed before the model's later
 * text). The augmented text of all iterations so far is the assistant message of the
 * next one. The loop ends when a reply has no blocks or after `maxIterations`.
 */
import { ZinoError, abortError, type ChatMessage, type HandlerContext } from '../../runtime/index.js';
import type { Usage } from '../../protocol/rtr.js';
import type { AgrEvent, ApprovalRequired, ToolCallEvent } from '../../protocol/agr.js';
import { runAction, type ExcTarget } from './actions.js';
import { interpretBlock, type Action, type AgrCatalog } from './blocks.js';
import { responseBlock } from './format.js';
import { infer, type RtrTarget, type Sampling } from './llm.js';
import { StreamParser, type ParseEvent } from '../../protocol/stream-parser.js';

/** What the loop needs from the service. */
export interface LoopDeps {
  rtr: RtrTarget;
  exc: ExcTarget;
  catalog: AgrCatalog;
  maxBlockBytes: number;
  /** MCP servers are configured: tool names outside the catalog go to exc's MCP tools. */
  mcp: boolean;
  /** Added to an MCP server's `timeout_s` for agr's bound on a call. */
  mcpMarginMs: number;
  /** `[approval] timeout_s` in ms: an MCP call that may wait for a person is given that too. */
  approvalMs: number;
}

/** One run's parameters. */
export interface LoopParams {
  messages: ChatMessage[];
  sampling: Sampling;
  maxIterations: number;
  stream: boolean;
  events: boolean;
  /** Pass exc's `approval_required` frames on. */
  approvals: boolean;
  /** The daemon channel, for exc's audit log. */
  channelId?: string | undefined;
}

/** Where output goes: streamed text and opt-in event frames. */
export interface LoopSink {
  chunk(text: string): Promise<void>;
  event(frame: AgrEvent | ApprovalRequired): Promise<void>;
}

/** The outcome of a run. */
export interface LoopResult {
  text: string;
  iterations: number;
  usage?: Usage | undefined;
  /** The last reply still had blocks when the iteration limit was reached. */
  limitReached: boolean;
}

/** Runs the loop. Throws (one terminal error) when rtr fails or the caller goes away. */
export async function runLoop(deps: LoopDeps, params: LoopParams, ctx: HandlerContext, sink: LoopSink): Promise<LoopResult> {
  const total: Usage = { prompt_tokens: 0, completion_tokens: 0 };
  let sawUsage = false;
  const pendingEvents: AgrEvent[] = [];
  const onUsage = (usage: Usage): void => {
    sawUsage = true;
    total.prompt_tokens += usage.prompt_tokens;
    total.completion_tokens += usage.completion_tokens;
    if (params.events) pendingEvents.push({ type: 'usage', ...usage });
  };
  const flushEvents = async (): Promise<void> => {
    for (let event = pendingEvents.shift(); event; event = pendingEvents.shift()) await sink.event(event);
  };
  const actionDeps = {
    rtr: deps.rtr,
    exc: deps.exc,
    sampling: params.sampling,
    signal: ctx.signal,
    requestId: ctx.requestId,
    onUsage,
    // Sent at once, not after the block: the run waits for the answer.
    onApproval: params.approvals ? (frame: ApprovalRequired) => sink.event(frame) : undefined,
    channelId: params.channelId,
    mcpMarginMs: deps.mcpMarginMs,
    approvalMs: deps.approvalMs,
    executorTools: deps.catalog.tools.map((t) => t.name),
  };

  let assistant = '';
  let iterations = 0;
  let blocks = 0;
  for (let n = 1; n <= params.maxIterations; n++) {
    if (ctx.signal.aborted) throw abortError(ctx.signal, 'run');
    iterations = n;
    if (params.events) await sink.event({ type: 'iteration', n });
    const messages = assistant === '' ? params.messages : [...params.messages, { role: 'assistant', content: assistant }];
    const parser = new StreamParser(deps.maxBlockBytes);
    let reply = '';
    blocks = 0;

    const handle = async (events: ParseEvent[]): Promise<void> => {
      for (const event of events) {
        if (event.kind === 'text') {
          reply += event.text;
          if (params.stream) await sink.chunk(event.text);
          continue;
        }
        blocks++;
        reply += event.block.raw;
        if (params.stream) await sink.chunk(event.block.raw);
        const action = interpretBlock(event.block, deps.catalog, deps.maxBlockBytes, { mcp: deps.mcp });
        if (params.events) await sink.event(callEvent(action));
        ctx.log.info(
          { iteration: n, kind: action.kind, target: targetOf(action), host: (action.kind === 'tool' || action.kind === 'task') && action.host },
          'block received',
        );
        const outcome = await runAction(action, actionDeps);
        await flushEvents();
        if (params.events) await sink.event({ type: 'tool_result', exit_code: outcome.exitCode, output: outcome.body });
        const response = responseBlock(event.block.tag, outcome.body);
        reply += response;
        if (params.stream) await sink.chunk(response);
      }
    };

    try {
      for await (const event of infer(deps.rtr, messages, params.sampling, { stream: params.stream, signal: ctx.signal, requestId: ctx.requestId })) {
        if ('delta' in event) await handle(parser.push(event.delta));
        else onUsage(event.usage);
      }
    } catch (err) {
      if (ctx.signal.aborted) throw abortError(ctx.signal, 'run');
      throw err instanceof ZinoError ? err : new ZinoError('UPSTREAM_ERROR', `rtr failed: ${(err as Error).message}`);
    }
    await handle(parser.end());
    await flushEvents();
    assistant += reply;
    if (blocks === 0) break;
  }
  const limitReached = blocks > 0;
  if (limitReached) ctx.log.info({ iterations }, 'max_iterations reached with blocks in the last reply');
  return { text: assistant, iterations, usage: sawUsage ? total : undefined, limitReached };
}

function callEvent(action: Action): ToolCallEvent {
  const host = (action.kind === 'tool' || action.kind === 'task') && action.host ? { host: true as const, reason: action.reason } : {};
  if (action.kind === 'tool') return { type: 'tool_call', kind: 'tool', name: action.name, code: action.code, ...host };
  if (action.kind === 'mcp') return { type: 'tool_call', kind: 'mcp', name: action.name, arguments: action.arguments };
  if (action.kind === 'task') return { type: 'tool_call', kind: 'task', skill: action.skill.name, request: action.request, ...host };
  return { type: 'tool_call', kind: 'invalid', error: action.error };
}

function targetOf(action: Action): string | undefined {
  return action.kind === 'tool' || action.kind === 'mcp' ? action.name : action.kind === 'task' ? action.skill.name : undefined;
}
