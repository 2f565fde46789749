/**
 * The MCP server of `zino mcp`, on the official SDK's low-level `Server`: it lists
 * {@link TOOLS} and runs them with the client library. A host that sends a
 * `progressToken` gets the text of `ask` as it arrives, as progress notifications
 * (`progress` counts the characters so far, `message` carries the new text). A host
 * that cancels a call (or goes away) cancels the ZINO request behind it.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { ZinoClient } from '../../client/index.js';
import type { Logger } from '../../runtime/index.js';
import { VERSION } from '../../version.js';
import { TOOLS, runTool, toolError, type ToolResult } from './tools.js';

/** Builds one server (one per connection: stdio has one, stateless HTTP one per request). */
export async function createMcpServer(client: ZinoClient, log: Logger): Promise<Server> {
  const [{ Server }, { CallToolRequestSchema, ListToolsRequestSchema }] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/index.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  const server = new Server(
    { name: 'zino', title: 'ZINO', version: VERSION },
    {
      capabilities: { tools: {} },
      instructions:
        'ZINO is an AI agent on a Linux host. Use ask for anything about that host (it can run code there); ' +
        'search_memory and remember read and write its long-term notes; history shows a conversation channel.',
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOLS.map((t) => ({ ...t })) }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<ToolResult> => {
    const { name } = request.params;
    const args = request.params.arguments ?? {};
    const token = request.params._meta?.progressToken;
    let sent = 0;
    const progress = async (text: string): Promise<void> => {
      if (token === undefined || text === '') return;
      sent += text.length;
      await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: sent, message: text } });
    };
    const started = performance.now();
    try {
      const result = await runTool(client, name, args, { signal: extra.signal, progress });
      log.info({ tool: name, durationMs: Math.round(performance.now() - started) }, 'tool called');
      return result;
    } catch (err) {
      const result = toolError(err);
      log[extra.signal.aborted ? 'info' : 'warn']({ tool: name, code: result.structuredContent?.code, reason: (err as Error).message }, 'tool failed');
      return result;
    }
  });
  return server;
}
