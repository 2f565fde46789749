/**
 * exc's MCP client side, as exc's main.ts registers it: the hub of sessions, the
 * `list_tools` and `call_tool` handlers, reload and close. The SDK is imported only
 * when a server is configured.
 */
import {
  InvalidRequestError,
  optionalBoolean,
  optionalString,
  requireString,
  type HandlerContext,
  type Logger,
  type ResolvedConfig,
  type Unvalidated,
} from '../../../runtime/index.js';
import type { ApprovalRequired, CallToolRequest, CallToolResult, ListToolsRequest, ToolsReply } from '../../../protocol/exc.js';
import { checkChannelId } from '../../../protocol/mem.js';
import type { McpGateDeps } from './gate.js';
import { McpHub } from './hub.js';
import { ToolsChangedNotifier } from './notify.js';

/** What exc's main.ts wires in. */
export interface McpService {
  listTools(request: Unvalidated<ListToolsRequest>): ToolsReply;
  callTool(request: Unvalidated<CallToolRequest>, ctx: HandlerContext<ApprovalRequired>): Promise<CallToolResult>;
  /** SIGHUP: tools listed again, down servers tried again. */
  reload(): void;
  close(): Promise<void>;
}

/** Starts the configured MCP servers in the background and returns the handlers' side; every call goes through `gate`. */
export function startMcp(config: Readonly<ResolvedConfig>, log: Logger, gate: McpGateDeps): McpService {
  const notifier = new ToolsChangedNotifier(config, log);
  const hub = new McpHub(config, log, () => notifier.changed(), gate);
  hub.start();
  return {
    listTools: () => hub.list(),
    callTool: async (request, ctx) => {
      const server = requireString(request, 'server');
      const tool = requireString(request, 'tool');
      const args: unknown = request.arguments ?? {};
      if (args === null || typeof args !== 'object' || Array.isArray(args)) throw new InvalidRequestError('field "arguments" must be an object');
      const approvals = optionalBoolean(request, 'approvals') ?? false;
      const channelId = optionalString(request, 'channel_id');
      if (channelId !== undefined) checkChannelId(channelId);
      return hub.call(server, tool, args as Record<string, unknown>, { approvals, channelId }, ctx);
    },
    reload: () => hub.reload(),
    close: async () => {
      notifier.close();
      await hub.close();
    },
  };
}
