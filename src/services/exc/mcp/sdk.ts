/**
 * The MCP SDK and ajv, imported on first use: about 125 ms and 28 MiB that an exc
 * without `[mcp.servers]` (and every other process) never pays. Only types are
 * imported statically; they vanish at compile time.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ErrorCode, McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { ErrorObject, Options as AjvOptions } from 'ajv';

/** What exc asks of an ajv instance (both ajv classes below have it). */
export interface SchemaCompiler {
  compile(schema: Record<string, unknown>): { (data: unknown): boolean; errors?: ErrorObject[] | null };
  errorsText(errors?: ErrorObject[] | null, options?: { separator?: string; dataVar?: string }): string;
}

/** What exc uses of the SDK and of ajv. */
export interface McpSdk {
  Client: typeof Client;
  StdioClientTransport: typeof StdioClientTransport;
  StreamableHTTPClientTransport: typeof StreamableHTTPClientTransport;
  ToolListChangedNotificationSchema: typeof ToolListChangedNotificationSchema;
  McpError: typeof McpError;
  ErrorCode: typeof ErrorCode;
  /** ajv for JSON Schema draft-07 (and earlier drafts' common subset). */
  Ajv: new (options: AjvOptions) => SchemaCompiler;
  /** ajv for JSON Schema 2020-12, the dialect MCP names as the default. */
  Ajv2020: new (options: AjvOptions) => SchemaCompiler;
}

let loading: Promise<McpSdk> | undefined;

/** Imports the SDK once; every later call gets the same modules. */
export function loadMcpSdk(): Promise<McpSdk> {
  loading ??= importSdk();
  return loading;
}

async function importSdk(): Promise<McpSdk> {
  const [client, stdio, http, types, ajv, ajv2020] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
    import('ajv'),
    import('ajv/dist/2020.js'),
  ]);
  return {
    Client: client.Client,
    StdioClientTransport: stdio.StdioClientTransport,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    ToolListChangedNotificationSchema: types.ToolListChangedNotificationSchema,
    McpError: types.McpError,
    ErrorCode: types.ErrorCode,
    // ajv is CommonJS: its module object is the import's default, whose `default` is the class.
    Ajv: ajv.default.default,
    Ajv2020: ajv2020.default.default,
  };
}
