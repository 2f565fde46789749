/**
 * `zino mcp`: ZINO as an MCP server for MCP hosts (desktop assistants, editors,
 * coding agents), a client of the running suite like the `zino` CLI.
 *
 * - stdio (default): MCP on stdin and stdout, one host. Nothing but MCP messages
 *   is ever written to stdout; logs go to stderr. The end of stdin, SIGTERM or
 *   SIGINT ends it, and with it (the sockets closing) any request in progress.
 * - `--http HOST:PORT`: Streamable HTTP on a loopback address only, at `/mcp`,
 *   stateless (a server per request), the Host header checked against the address
 *   (a web page cannot reach it by DNS rebinding).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ZinoClient } from '../../client/index.js';
import { ZinoError, castToError, type Logger, type ResolvedConfig } from '../../runtime/index.js';
import { createMcpServer } from './server.js';

/** Options of `zino mcp`. */
export interface McpFrontendOptions {
  /** `HOST:PORT` to serve Streamable HTTP on (loopback only) instead of stdio. */
  http?: string | undefined;
}

/** Serves until stdin ends (stdio) or a signal comes; resolves when serving has started. */
export async function runMcpFrontend(config: Readonly<ResolvedConfig>, log: Logger, options: McpFrontendOptions): Promise<void> {
  const client = new ZinoClient({ config });
  if (options.http !== undefined) await serveHttp(client, log, options.http);
  else await serveStdio(client, log);
}

async function serveStdio(client: ZinoClient, log: Logger): Promise<void> {
  const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
  const server = await createMcpServer(client, log);
  let closing = false;
  const stop = (why: string): void => {
    if (closing) return;
    closing = true;
    log.info({ why }, 'stopping');
    // Exiting closes every socket to the suite: the requests in progress are cancelled down the line.
    // close() only tears down the transport; whatever it says, we are done.
    void server
      .close()
      .catch(() => undefined)
      .finally(() => process.exit(0));
  };
  process.stdin.on('end', () => stop('stdin closed'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  await server.connect(new StdioServerTransport());
  log.info({ daemon: client.socket('daemon') }, 'serving MCP on stdio');
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** `HOST:PORT` (`[::1]:PORT` for IPv6) on a loopback address. */
export function parseLoopback(value: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(value);
  const host = match?.[1] ?? match?.[2];
  const port = Number(match?.[3]);
  if (host === undefined || !Number.isInteger(port) || port > 65535) throw new ZinoError('INVALID_REQUEST', `--http must be HOST:PORT, got "${value}"`);
  if (!LOOPBACK.has(host)) throw new ZinoError('INVALID_REQUEST', `--http serves on a loopback address only (127.0.0.1, ::1 or localhost), got "${host}"`);
  return { host, port };
}

async function serveHttp(client: ZinoClient, log: Logger, address: string): Promise<void> {
  const { host, port } = parseLoopback(address);
  const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
  let allowedHosts: string[] = [];
  const httpServer = http.createServer((req, res) => {
    if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('zino mcp serves MCP at /mcp\n');
      return;
    }
    void (async () => {
      const server = await createMcpServer(client, log);
      // No sessionIdGenerator: stateless, one server and transport per request.
      const transport = new StreamableHTTPServerTransport({ enableDnsRebindingProtection: true, allowedHosts });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res);
    })().catch((err: unknown) => {
      log.error({ err: castToError(err) }, 'http request failed');
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(port, host, () => resolve());
  });
  const bound = (httpServer.address() as AddressInfo).port;
  allowedHosts = [`127.0.0.1:${bound}`, `localhost:${bound}`, `[::1]:${bound}`];
  const stop = (signal: string): void => {
    log.info({ signal }, 'stopping');
    httpServer.close(() => process.exit(0));
    httpServer.closeAllConnections();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  log.info({ url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/mcp`, daemon: client.socket('daemon') }, 'serving MCP over HTTP');
}
