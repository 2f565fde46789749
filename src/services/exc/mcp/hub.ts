/**
 * exc's MCP servers together: one {@link McpSession} per `[mcp.servers.<name>]`,
 * the tool list they make (`list_tools`), and the one path every call takes
 * (`call_tool`): find the tool, check the arguments against its schema, then
 * {@link gateMcpCall}, which decides (the `[approval]` policy for a tool that may
 * change things), records the call in the audit log, and makes it; the result is
 * bounded.
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { InvalidRequestError, ZinoError, type Logger, type ResolvedConfig } from '../../../runtime/index.js';
import type { CallToolResult, McpTool, McpToolAnnotations, ToolsReply } from '../../../protocol/exc.js';
import { boundContent } from './content.js';
import { gateMcpCall, runsWithoutApproval, type McpGateContext, type McpGateDeps } from './gate.js';
import { functionName } from './names.js';
import { loadMcpSdk } from './sdk.js';
import { McpSession } from './session.js';

/** What a call needs besides its request: the request's signal, log and id, and where an `approval_required` frame goes. */
export type CallContext = McpGateContext;

/** A call's opt-ins: the caller relays approvals; the daemon channel, for the audit log. */
export interface CallOptions {
  approvals: boolean;
  channelId?: string | undefined;
}

/** All configured MCP servers. */
export class McpHub {
  private readonly sessions: McpSession[];
  private fingerprint = '[]';

  /** `onToolsChanged` is called whenever the tool list `list()` gives has changed. */
  constructor(
    private readonly config: Readonly<ResolvedConfig>,
    private readonly log: Logger,
    private readonly onToolsChanged: () => void,
    /** The `[approval]` policy, pending approvals and audit log every call goes through. */
    private readonly gate: McpGateDeps,
  ) {
    const deps = { log, sdk: loadMcpSdk, onChange: () => this.changed() };
    this.sessions = Object.entries(config.mcp.servers).map(([name, server]) => new McpSession(name, server, deps));
  }

  /** True when at least one server is configured. */
  get configured(): boolean {
    return this.sessions.length > 0;
  }

  /** Starts every enabled server in the background; none waits for another. */
  start(): void {
    for (const session of this.sessions) session.start();
    if (this.configured) this.log.info({ servers: this.sessions.map((s) => s.name) }, 'mcp servers starting');
  }

  /** The tools of the servers that are up, named for the model, and every server's state. */
  list(): ToolsReply {
    const taken = new Set<string>();
    const tools: McpTool[] = [];
    for (const session of this.sessions) {
      for (const tool of session.offered) tools.push(describeTool(session, tool, functionName(session.name, tool.name, taken)));
    }
    return { type: 'tools', tools, servers: this.sessions.map((s) => s.status()) };
  }

  /** Calls `tool` of `server` with `args`: checked, gated (and audited), bounded. Throws a ZinoError for a call that cannot be made. */
  async call(server: string, tool: string, args: Record<string, unknown>, options: CallOptions, ctx: CallContext): Promise<CallToolResult> {
    const session = this.sessions.find((s) => s.name === server);
    if (!session) {
      throw new InvalidRequestError(
        `no MCP server "${server.slice(0, 64)}" is configured (configured: ${this.sessions.map((s) => s.name).join(', ') || 'none'})`,
      );
    }
    if (!session.isUp) throw new ZinoError('UPSTREAM_UNAVAILABLE', session.downMessage());
    const found = session.offered.find((t) => t.name === tool);
    if (!found) {
      const allowed = session.config.tools === null ? '' : ` (only [mcp.servers.${server}] tools are offered)`;
      throw new InvalidRequestError(
        `the MCP server "${server}" has no tool "${tool.slice(0, 128)}"${allowed}; it has: ${session.offered.map((t) => t.name).join(', ')}`,
      );
    }
    // Named as the model knows it.
    const name = this.list().tools.find((t) => t.server === server && t.tool === tool)?.name ?? tool;
    const check = session.arguments?.checkFor(found.inputSchema);
    if (typeof check === 'function') {
      const problem = check(args);
      if (problem !== undefined) throw new InvalidRequestError(`the arguments do not match the input schema of ${name}: ${problem}`);
    } else if (check) ctx.log.warn({ server, tool, reason: check.error }, 'mcp input schema not compiled; arguments passed on unchecked');

    const facts = { server, tool, name, trusted: session.trusted, annotations: annotationsOf(found), arguments: args, ...options };
    return gateMcpCall(this.gate, facts, ctx, async (signal) => {
      const outcome = await session.call(tool, args, signal);
      const blocks = Array.isArray(outcome.content) ? (outcome.content as unknown[]) : [];
      const { content, truncated } = boundContent(blocks, outcome.structuredContent, this.config.exc.max_output_bytes);
      return { content, isError: outcome.isError === true, truncated };
    });
  }

  /** SIGHUP: every up server lists its tools again; a down one is tried again now. */
  reload(): void {
    for (const session of this.sessions) session.reload();
  }

  /** Ends every session (stdio servers are stopped). */
  async close(): Promise<void> {
    await Promise.all(this.sessions.map((s) => s.close()));
  }

  /** A session changed: tell the listener when the tool list did. */
  private changed(): void {
    const fingerprint = JSON.stringify(this.list().tools);
    if (fingerprint === this.fingerprint) return;
    this.fingerprint = fingerprint;
    this.onToolsChanged();
  }
}

function annotationsOf(tool: Tool): McpToolAnnotations | undefined {
  const a = tool.annotations;
  if (!a) return undefined;
  const out: McpToolAnnotations = {};
  if (typeof a.title === 'string') out.title = a.title;
  for (const key of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const) {
    const value = a[key];
    if (typeof value === 'boolean') out[key] = value;
  }
  return out;
}

function describeTool(session: McpSession, tool: Tool, name: string): McpTool {
  const annotations = annotationsOf(tool);
  const title = tool.title ?? annotations?.title;
  return {
    name,
    server: session.name,
    tool: tool.name,
    ...(title === undefined ? {} : { title }),
    description: tool.description ?? title ?? `The ${tool.name} tool of the MCP server ${session.name}.`,
    input_schema: tool.inputSchema,
    ...(annotations ? { annotations } : {}),
    runs_without_approval: runsWithoutApproval(session.trusted, annotations),
  };
}
