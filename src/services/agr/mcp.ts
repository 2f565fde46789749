/**
 * A `<tool_call>` of an MCP tool: the function name is looked up in exc's
 * `list_tools`, the call goes to exc's `call_tool` (which checks the arguments
 * against the tool's schema, decides approval — passing `approval_required` on to a
 * caller that relays it — and bounds the result), and the
 * result becomes the text of the response block: text content verbatim, other
 * content described, a tool's failure as an error the model reads.
 */
import { RemoteError, ZinoError } from '../../runtime/index.js';
import type { ApprovalRequired, CallToolResult, McpContent, ToolsReply } from '../../protocol/exc.js';
import type { ExcTarget } from './actions.js';
import { approvalFrame } from './approval-frame.js';
import { errorBody } from './format.js';

/** Bound on asking exc for its tool list, in ms. */
const LIST_TIMEOUT_MS = 10_000;

/** What a call needs. */
export interface McpCallDeps {
  exc: ExcTarget;
  signal: AbortSignal;
  requestId: string;
  /** Added to the server's `timeout_s` for agr's own bound on the call to exc. */
  marginMs: number;
  /** `[approval] timeout_s` in ms: added too when the call may wait for a person. */
  approvalMs: number;
  /** The executor tools' names, for "unknown tool" messages. */
  executorTools: readonly string[];
  /** Passes exc's `approval_required` frames on; undefined when the caller did not ask for them (exc then applies `unattended`). */
  onApproval?: ((frame: ApprovalRequired) => Promise<void>) | undefined;
  /** The daemon channel, for exc's audit log. */
  channelId?: string | undefined;
}

/** The longest timer Node keeps (2^31−1 ms); longer ones fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The response body and exit code (0 done, 1 the tool failed, -1 not run) of an MCP call. */
export async function runMcpCall(deps: McpCallDeps, name: string, args: Record<string, unknown>): Promise<{ body: string; exitCode: number }> {
  let list: ToolsReply;
  try {
    list = await deps.exc.request('list_tools', { request_id: deps.requestId }, { signal: deps.signal, timeoutMs: LIST_TIMEOUT_MS });
  } catch (err) {
    if (deps.signal.aborted) throw err;
    return { body: errorBody(`unknown tool "${name.slice(0, 64)}": the MCP tools could not be listed (${(err as Error).message})`), exitCode: -1 };
  }
  const tools = Array.isArray(list.tools) ? list.tools : [];
  const tool = tools.find((t) => t.name === name);
  if (!tool) return { body: errorBody(unknownTool(name, list, deps.executorTools)), exitCode: -1 };
  const server = (Array.isArray(list.servers) ? list.servers : []).find((s) => s.name === tool.server);
  // A call that may wait for a person gets that time too.
  const waitMs = tool.runs_without_approval === true ? 0 : deps.approvalMs;
  const timeoutMs = Math.min(MAX_TIMER_MS, (server?.timeout_s ?? 60) * 1000 + waitMs + deps.marginMs);
  const body = {
    server: tool.server,
    tool: tool.tool,
    arguments: args,
    request_id: deps.requestId,
    ...(deps.onApproval ? { approvals: true } : {}),
    ...(deps.channelId === undefined ? {} : { channel_id: deps.channelId }),
  };
  let result: CallToolResult | undefined;
  for await (const frame of deps.exc.stream('call_tool', body, { signal: deps.signal, timeoutMs })) {
    if (frame.type === 'approval_required') {
      const approval = approvalFrame(frame);
      if (approval) await deps.onApproval?.(approval);
    } else if (frame.type === 'error') throw new RemoteError(frame);
    else if (frame.type === 'tool_result') result = frame;
  }
  if (!result) throw new ZinoError('UPSTREAM_ERROR', 'exc sent no result for call_tool');
  if (!Array.isArray(result.content)) throw new ZinoError('UPSTREAM_ERROR', 'exc answered call_tool without content');
  const text = formatMcpResult(result);
  if (result.approval === 'refused') return { body: errorBody(text), exitCode: -1 };
  return result.is_error ? { body: errorBody(text), exitCode: 1 } : { body: text, exitCode: 0 };
}

/** "unknown tool", or why a tool of a server that is down cannot be called now. */
function unknownTool(name: string, list: ToolsReply, executorTools: readonly string[]): string {
  const down = (Array.isArray(list.servers) ? list.servers : []).find((s) => name.startsWith(`${s.name}__`) && s.state !== 'up');
  if (down) {
    const why = down.state === 'disabled' ? 'is disabled' : down.state === 'connecting' ? 'is starting' : `is down (${down.error ?? 'not connected'})`;
    return `the tool "${name.slice(0, 64)}" cannot be called now: its MCP server "${down.name}" ${why}. Try again later, or use another tool.`;
  }
  const available = [...executorTools, ...list.tools.map((t) => t.name)];
  return `unknown tool "${name.slice(0, 64)}" (available: ${available.length > 0 ? available.join(', ') : 'none'})`;
}

/** The text of an MCP result for the model: text verbatim, anything else described in one line. */
export function formatMcpResult(result: Pick<CallToolResult, 'content' | 'truncated'>): string {
  const parts = result.content.map(describeContent).filter((p) => p !== '');
  return parts.length > 0 ? parts.join('\n') : '(no output)';
}

function describeContent(block: McpContent): string {
  switch (block.type) {
    case 'text':
      return block.text ?? '';
    case 'image':
    case 'audio':
      return `[${block.type}: ${block.mimeType ?? 'unknown type'}, ${size(block.data, block.omitted_bytes)}; not shown]`;
    case 'resource_link': {
      const about = block.description ? `: ${block.description}` : '';
      return `[resource link: ${block.name ?? ''} ${block.uri ?? ''}${block.mimeType ? ` (${block.mimeType})` : ''}${about}]`;
    }
    case 'resource': {
      const r = block.resource ?? {};
      if (r.text !== undefined) return `[resource ${r.uri ?? ''}${r.mimeType ? ` (${r.mimeType})` : ''}]\n${r.text}`;
      return `[resource ${r.uri ?? ''}: ${r.mimeType ?? 'binary'}, ${size(r.blob, block.omitted_bytes)}; not shown]`;
    }
    default:
      return `[${block.type} content; not shown]`;
  }
}

/** The decoded size of base64 `data` (or of what was left out). */
function size(data: string | undefined, omitted: number | undefined): string {
  const base64 = data?.length ?? omitted ?? 0;
  return `${Math.floor((base64 * 3) / 4)} bytes`;
}
