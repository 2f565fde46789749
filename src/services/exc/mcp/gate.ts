/**
 * Whether an MCP tool call may run. An MCP tool runs outside the sandbox, on the
 * host, with whatever the server can reach; so it follows the host-run approval
 * policy unless its server is `trusted = true` or the server annotates the tool
 * `readOnlyHint` (a hint from a server the operator chose to configure).
 *
 * Every call goes through {@link gateMcpCall}, and only through it: this is where a
 * person's approval will be asked once exc has a host-run approval policy. Until
 * then a call that would need approval is refused, with an error the model reads
 * and can pass on.
 */
import type { McpToolAnnotations } from '../../../protocol/exc.js';

/** Why a call may run, or that it may not. */
export type McpApproval = 'trusted' | 'read_only' | 'refused';

/** The decision on one call. */
export interface GateDecision {
  approval: McpApproval;
  /** For a refused call: the error the model reads. */
  message?: string;
}

/** Decides whether `tool` of `server` may run now. */
export function gateMcpCall(server: string, tool: string, trusted: boolean, annotations: McpToolAnnotations | undefined): GateDecision {
  if (trusted) return { approval: 'trusted' };
  if (annotations?.readOnlyHint === true) return { approval: 'read_only' };
  return {
    approval: 'refused',
    message:
      `needs host approval: the tool "${tool}" of the MCP server "${server}" may change things on the host and is not annotated read-only, ` +
      `and the server is not trusted, so it was not run. An operator can allow its tools with trusted = true in [mcp.servers.${server}]; ` +
      `tell the user, or use another tool.`,
  };
}

/** True when a call would run without asking: what `list_tools` reports as `runs_without_approval`. */
export function runsWithoutApproval(trusted: boolean, annotations: McpToolAnnotations | undefined): boolean {
  return gateMcpCall('', '', trusted, annotations).approval !== 'refused';
}
