/**
 * `zino mcp`: ZINO as an MCP server, driven by the official SDK's `Client` over
 * stdio (as an MCP host runs it) against a running suite with the mock LLM; and
 * over Streamable HTTP on loopback, which exc itself then uses as an MCP server
 * (`url`), so exc's HTTP client side meets a real SDK server too.
 */
import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Endpoint, type RemoteError } from '../../src/runtime/index.js';
import { EXC } from '../../src/protocol/exc.js';
import { CLI_PATH, startProcess, type RunningProcess } from '../../src/testing/process.js';
import { writeTestConfig } from '../../src/testing/suite.js';
import { startSuite, type RunningSuite } from '../../src/testing/up.js';
import { mcpServer, serverState } from '../helpers/mcp.js';
import { mockOverrides, useMockLlm } from '../helpers/mock.js';
import { tempDir, waitFor } from '../helpers/util.js';

const llm = useMockLlm();
let dir: string;
let cleanup: () => void;
let file: string;
let suite: RunningSuite;
let httpFrontend: RunningProcess;
let httpUrl: string;
let client: Client;
let stderr = '';

/** A text block's text. */
const textOf = (result: Awaited<ReturnType<Client['callTool']>>): string => {
  const content = (result.content ?? []) as { type: string; text?: string }[];
  return content.map((c) => c.text ?? '').join('');
};

beforeAll(async () => {
  ({ dir, cleanup } = tempDir('zmcpf'));
  // The HTTP front end first (it reaches the suite only when called), so that exc can be given its URL.
  ({ file } = writeTestConfig(dir, mockOverrides(llm.mock)));
  httpFrontend = startProcess(CLI_PATH, ['mcp', '--config', file, '--http', '127.0.0.1:0']);
  httpUrl = String((await waitFor(() => httpFrontend.logs.find((l) => l.msg === 'serving MCP over HTTP'), 'zino mcp --http to listen')).url);
  ({ file } = writeTestConfig(dir, mockOverrides(llm.mock, { mcp: { servers: { zino: mcpServer({ url: httpUrl }) } } })));
  suite = await startSuite(file);
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI_PATH, 'mcp', '--config', file], stderr: 'pipe' });
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  client = new Client({ name: 'zino-test-host', version: '1.0.0' });
  await client.connect(transport);
});

afterAll(async () => {
  await client.close();
  expect(await httpFrontend.stop()).toEqual({ code: 0, signal: null });
  expect(await suite.interrupt()).toEqual({ code: 0, signal: null });
  cleanup();
});

beforeEach(() => llm.script({}));

describe('zino mcp over stdio', () => {
  it('lists ask, search_memory, remember and history, described for a host model', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['ask', 'search_memory', 'remember', 'history']);
    const ask = tools.find((t) => t.name === 'ask');
    expect(ask?.description).toMatch(/Linux host/);
    expect(ask?.inputSchema).toMatchObject({ required: ['message'], properties: { message: { type: 'string' }, channel: { type: 'string' } } });
    expect(tools.find((t) => t.name === 'search_memory')?.annotations).toMatchObject({ readOnlyHint: true });
    expect(client.getServerVersion()).toMatchObject({ name: 'zino' });
  });

  it('answers ask, sending the text as it arrives as progress notifications, without the tool blocks', async () => {
    llm.script({
      rules: [
        { role: 'user', reply: 'Let me check.<tool_call>{"name":"execute_bash","arguments":{"code":"echo 42"}}</tool_call>', chunkSize: 5 },
        { role: 'assistant', reply: ' The answer is 42.', chunkSize: 3 },
      ],
    });
    const progress: { progress: number; message?: string | undefined }[] = [];
    const result = await client.callTool({ name: 'ask', arguments: { message: 'what is six times seven?' } }, undefined, {
      onprogress: (p) => progress.push(p),
    });
    expect(result.isError).toBeFalsy();
    // The blocks are gone; the newlines agr put around the response block stay.
    expect(textOf(result)).toBe('Let me check.\n\n The answer is 42.');
    // The SDK client drops a progress notification that it reads in the same chunk as the
    // response (typescript-sdk issue 2580): what it passed on is the answer's start, in order.
    // The wire itself carries all of it: see the raw test below.
    expect(progress.length).toBeGreaterThan(0);
    expect('Let me check.\n\n The answer is 42.'.startsWith(progress.map((p) => p.message).join(''))).toBe(true);
    expect(progress.map((p) => p.progress)).toEqual([...progress.map((p) => p.progress)].sort((a, b) => a - b));
    // The model's tool call ran: its output was in the second prompt.
    expect(JSON.stringify(llm.mock.stats.bodies[1]?.messages)).toContain('<tool_response>\\n42\\n</tool_response>');
  });

  it('finds with search_memory what remember stored', async () => {
    const stored = await client.callTool({ name: 'remember', arguments: { text: 'The backup server is called vault.', tag: 'servers' } });
    expect(textOf(stored)).toMatch(/^remembered as #\d+$/);
    const found = await client.callTool({ name: 'search_memory', arguments: { query: 'backup server', top_k: 2 } });
    expect(textOf(found)).toMatch(/^1\. \[\d\.\d{4}\] #\d+ The backup server is called vault\.$/m);
    expect(found.structuredContent).toMatchObject({ results: [expect.objectContaining({ tag: 'servers' })] });
  });

  it('shows the history of a channel ask stored', async () => {
    llm.script({ rules: [{ reply: 'Noted.' }] });
    await client.callTool({ name: 'ask', arguments: { message: 'remember the milk', channel: 'mcp-chan' } });
    const history = await client.callTool({ name: 'history', arguments: { channel: 'mcp-chan' } });
    expect(textOf(history)).toBe('user: remember the milk\n\nassistant: Noted.');
  });

  it('answers failures as tool errors that start with the ZINO code', async () => {
    const bad = await client.callTool({ name: 'ask', arguments: {} });
    expect(bad).toMatchObject({ isError: true, structuredContent: { code: 'INVALID_REQUEST' } });
    expect(textOf(bad)).toBe('INVALID_REQUEST: "message" must be a non-empty string');
    llm.script({ rules: [{ status: 400, errorMessage: 'model not found' }] });
    const upstream = await client.callTool({ name: 'ask', arguments: { message: 'hi' } });
    expect(upstream.isError).toBe(true);
    expect(textOf(upstream)).toBe('UPSTREAM_ERROR: the LLM API answered 400: model not found');
  });

  it('says UPSTREAM_UNAVAILABLE, as a tool error, when no suite runs where it looks', async () => {
    const { dir: empty, cleanup: done } = tempDir('zmcpn');
    const lonely = new Client({ name: 'zino-test-host', version: '1.0.0' });
    try {
      await lonely.connect(new StdioClientTransport({ command: process.execPath, args: [CLI_PATH, 'mcp', '--dir', empty], stderr: 'ignore' }));
      const result = await lonely.callTool({ name: 'search_memory', arguments: { query: 'x' } });
      expect(result).toMatchObject({ isError: true, structuredContent: { code: 'UPSTREAM_UNAVAILABLE' } });
      expect(textOf(result)).toMatch(/^UPSTREAM_UNAVAILABLE: cannot connect to mem at .*mem\.sock/);
    } finally {
      await lonely.close();
      done();
    }
  });

  it('cancels the ZINO request when the host cancels the call', async () => {
    llm.script({ rules: [{ reply: 'never finishing', chunkSize: 1, hangAfterChunks: 2 }] });
    const controller = new AbortController();
    const call = client.callTool({ name: 'ask', arguments: { message: 'hang' } }, undefined, { signal: controller.signal }).catch((e: unknown) => e);
    await waitFor(() => llm.mock.stats.active === 1, 'the LLM request');
    controller.abort();
    await call;
    await llm.mock.waitForAborts(1, 30_000);
  });

  it('writes nothing but MCP messages to stdout (every progress notification before the result), logs to stderr, and exits when stdin closes', async () => {
    llm.script({ rules: [{ reply: 'Streamed in small pieces.', chunkSize: 4, delayMs: 5 }] });
    const child = spawn(process.execPath, [CLI_PATH, 'mcp', '--config', file], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const send = (message: object): boolean => child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
    send({ id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });
    await waitFor(() => out.includes('"id":1'), 'the initialize result');
    send({ method: 'notifications/initialized' });
    send({ id: 2, method: 'tools/call', params: { name: 'ask', arguments: { message: 'stream it' }, _meta: { progressToken: 'p-1' } } });
    await waitFor(() => out.includes('"id":2'), 'the tools/call result');
    child.stdin.end();
    expect(await exited).toBe(0);
    const messages = out
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { jsonrpc: string; id?: number; method?: string; params?: { progressToken: string; message: string } });
    for (const message of messages) expect(message.jsonrpc).toBe('2.0');
    const progress = messages.filter((m) => m.method === 'notifications/progress');
    // At least one: under load a hop merges queued chunks, so the count of notifications is not fixed; their text is.
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.every((m) => m.params?.progressToken === 'p-1')).toBe(true);
    expect(progress.map((m) => m.params?.message).join('')).toBe('Streamed in small pieces.');
    expect(messages.map((m) => m.id ?? m.method)).toEqual([1, ...progress.map(() => 'notifications/progress'), 2]);
    expect(stderr).toContain('"msg":"serving MCP on stdio"');
  });
});

describe('zino mcp --http', () => {
  it('serves the same tools on loopback to the SDK client', async () => {
    const http = new Client({ name: 'zino-http-test', version: '1.0.0' });
    await http.connect(new StreamableHTTPClientTransport(new URL(httpUrl)));
    try {
      expect((await http.listTools()).tools.map((t) => t.name)).toEqual(['ask', 'search_memory', 'remember', 'history']);
      expect(textOf(await http.callTool({ name: 'search_memory', arguments: { query: 'backup server' } }))).toContain('vault');
    } finally {
      await http.close();
    }
  });

  it('refuses a request whose Host header is not its address (DNS rebinding)', async () => {
    // node:http, because fetch does not let a caller set Host.
    const status = (host: string): Promise<number | undefined> =>
      new Promise((resolve, reject) => {
        const req = httpRequest(
          httpUrl,
          { method: 'POST', headers: { host, 'content-type': 'application/json', accept: 'application/json, text/event-stream' } },
          (res) => {
            res.resume();
            resolve(res.statusCode);
          },
        );
        req.on('error', reject);
        req.end(
          JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '0' } },
          }),
        );
      });
    expect(await status('attacker.example')).toBe(403);
    expect(await status(new URL(httpUrl).host)).toBe(200);
  });

  it('refuses to listen on an address that is not loopback', async () => {
    const proc = startProcess(CLI_PATH, ['mcp', '--config', file, '--http', '0.0.0.0:0']);
    expect(await proc.exited).toEqual({ code: 2, signal: null });
  });

  it('is an MCP server exc can use over Streamable HTTP', async () => {
    const exc = path.join(dir, 'run', 'exc.sock');
    await waitFor(async () => (await serverState(exc, 'zino'))?.state === 'up', 'exc to connect to zino mcp --http');
    const { tools } = await new Endpoint(EXC, exc).request('list_tools', {});
    expect(tools.filter((t) => t.server === 'zino').map((t) => t.name)).toEqual(['zino__ask', 'zino__search_memory', 'zino__remember', 'zino__history']);
    expect(await serverState(exc, 'zino')).toMatchObject({ transport: 'http' });
    const result = await new Endpoint(EXC, exc).request('call_tool', { server: 'zino', tool: 'search_memory', arguments: { query: 'backup server' } });
    expect(result).toMatchObject({ is_error: false, approval: 'read_only' });
    expect(result.content[0]?.text).toContain('vault');
  });

  it('is reconnected by exc after it went away and came back', async () => {
    const exc = new Endpoint(EXC, path.join(dir, 'run', 'exc.sock'));
    const search = () => exc.request('call_tool', { server: 'zino', tool: 'search_memory', arguments: { query: 'backup server' } });
    expect(await httpFrontend.stop()).toEqual({ code: 0, signal: null });
    // Nothing tells an HTTP client that its server left: the next call finds out.
    const failed = await search().catch((e: unknown) => e as RemoteError);
    expect(failed).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
    expect((await serverState(path.join(dir, 'run', 'exc.sock'), 'zino'))?.state).not.toBe('up');
    httpFrontend = startProcess(CLI_PATH, ['mcp', '--config', file, '--http', new URL(httpUrl).host]);
    await waitFor(async () => (await serverState(path.join(dir, 'run', 'exc.sock'), 'zino'))?.state === 'up', 'exc to reconnect');
    expect((await search()).content[0]?.text).toContain('vault');
  });
});
