/** exc's `approval_required` frames as agr passes them on, from `execute` and `call_tool` alike. */
import type { ApprovalRequired } from '../../protocol/exc.js';

/** exc's `approval_required` frame with only its known fields, each of its type; undefined when it has no id or code. */
export function approvalFrame(frame: { readonly [K in keyof ApprovalRequired]?: unknown }): ApprovalRequired | undefined {
  const { id, executor, code, reason, expires_at: expiresAt, request_id: requestId, no_sandbox: noSandbox, mcp } = frame;
  if (typeof id !== 'string' || typeof code !== 'string') return undefined;
  const call = mcp !== null && typeof mcp === 'object' ? (mcp as Record<string, unknown>) : undefined;
  return {
    type: 'approval_required',
    id,
    executor: typeof executor === 'string' ? executor : '',
    code,
    reason: typeof reason === 'string' ? reason : '',
    expires_at: typeof expiresAt === 'string' ? expiresAt : '',
    ...(typeof requestId === 'string' ? { request_id: requestId } : {}),
    ...(noSandbox === true ? { no_sandbox: true } : {}),
    ...(call && typeof call.server === 'string' && typeof call.tool === 'string' ? { mcp: { server: call.server, tool: call.tool } } : {}),
  };
}
