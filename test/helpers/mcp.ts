/**
 * The real MCP servers the tests use, from node_modules (never `npx -y`):
 * `@modelcontextprotocol/server-everything` and `@modelcontextprotocol/server-filesystem`,
 * as `[mcp.servers.<name>]` tables; and a wiretap that records what a server was sent.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Endpoint, type McpServerConfig } from '../../src/runtime/index.js';
import { EXC, type ToolsReply } from '../../src/protocol/exc.js';
import { PACKAGE_ROOT } from '../../src/testing/suite.js';

const MODULES = path.join(PACKAGE_ROOT, 'node_modules', '@modelcontextprotocol');
/** server-everything's entry point (argument `stdio` for the stdio transport). */
export const EVERYTHING = path.join(MODULES, 'server-everything', 'dist', 'index.js');
/** server-filesystem's entry point (arguments: the directories it may touch). */
export const FILESYSTEM = path.join(MODULES, 'server-filesystem', 'dist', 'index.js');
const WIRETAP = path.join(PACKAGE_ROOT, 'test', 'fixtures', 'mcp-wiretap.mjs');

/** A server table with every key at its default, then `config`. */
export function mcpServer(config: Partial<McpServerConfig>): McpServerConfig {
  return { command: '', args: [], env: {}, cwd: '', url: '', enabled: true, timeout_s: 60, tools: null, trusted: false, ...config };
}

/** server-everything over stdio. */
export function everything(extra: Partial<McpServerConfig> = {}): McpServerConfig {
  return mcpServer({ command: process.execPath, args: [EVERYTHING, 'stdio'], ...extra });
}

/** server-filesystem over stdio, allowed to touch `dir`. */
export function filesystem(dir: string, extra: Partial<McpServerConfig> = {}): McpServerConfig {
  return mcpServer({ command: process.execPath, args: [FILESYSTEM, dir], ...extra });
}

/** `server` run through the wiretap, which appends what the server is sent to `log`. */
export function wiretapped(log: string, server: McpServerConfig): McpServerConfig {
  return { ...server, command: process.execPath, args: [WIRETAP, log, server.command, ...server.args] };
}

/** The JSON-RPC messages the wiretap saw sent to the server. */
export function sentToServer(log: string): Record<string, unknown>[] {
  if (!existsSync(log)) return [];
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** exc's `list_tools`. */
export function listTools(excSocket: string): Promise<ToolsReply> {
  return new Endpoint(EXC, excSocket, { timeoutMs: 10_000 }).request('list_tools', {});
}

/** The state of `server` in exc's `list_tools`. */
export async function serverState(excSocket: string, server: string): Promise<ToolsReply['servers'][number] | undefined> {
  return (await listTools(excSocket)).servers.find((s) => s.name === server);
}
