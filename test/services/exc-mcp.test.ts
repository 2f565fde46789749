/**
 * exc as an MCP client, against real MCP servers it starts over stdio from
 * node_modules: server-everything (text and image content, a slow tool, list-changed
 * notifications) and server-filesystem on a temp dir.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Endpoint, RemoteError, ZinoError } from '../../src/runtime/index.js';
import { EXC, type CallToolResult } from '../../src/protocol/exc.js';
import { startService, writeTestConfig, type StartedService } from '../../src/testing/suite.js';
import { everything, filesystem, listTools, mcpServer, sentToServer, serverState, wiretapped } from '../helpers/mcp.js';
import { killProcess, processesMatching } from '../helpers/procs.js';
import { tempDir, waitFor } from '../helpers/util.js';

let dir: string;
let cleanup: () => void;
let share: string;
let wiretap: string;
let service: StartedService;
let exc: Endpoint<typeof EXC>;

beforeAll(async () => {
  ({ dir, cleanup } = tempDir('zmcp'));
  share = path.join(dir, 'share');
  mkdirSync(share);
  writeFileSync(path.join(share, 'notes.txt'), 'the backup server is called vault\n');
  wiretap = path.join(dir, 'wiretap.jsonl');
  const { file } = writeTestConfig(dir, {
    exc: { sandbox: 'none' },
    mcp: {
      servers: {
        every: wiretapped(wiretap, everything()),
        slow: everything({ timeout_s: 2 }),
        files: filesystem(share, { tools: ['read_text_file', 'write_file', 'list_directory'] }),
        'files-rw': filesystem(share, { trusted: true }),
        broken: mcpServer({ command: 'zino-no-such-mcp-server' }),
        hung: mcpServer({ command: 'sleep', args: ['600'], timeout_s: 2 }),
        off: everything({ enabled: false }),
      },
    },
  });
  service = await startService('exc', file);
  exc = new Endpoint(EXC, service.socket, { timeoutMs: 30_000 });
  await waitFor(async () => {
    const { servers } = await listTools(service.socket);
    return ['every', 'slow', 'files', 'files-rw'].every((name) => servers.find((s) => s.name === name)?.state === 'up');
  }, 'the four working servers to be up');
});

afterAll(async () => {
  expect(await service.stop()).toEqual({ code: 0, signal: null });
  // Its stdio servers stopped with it.
  expect(processesMatching(share)).toEqual([]);
  expect(processesMatching(wiretap)).toEqual([]);
  cleanup();
});

const call = (server: string, tool: string, args: Record<string, unknown> = {}, signal?: AbortSignal): Promise<CallToolResult> =>
  exc.request('call_tool', { server, tool, arguments: args }, signal ? { signal } : {});

const failure = (promise: Promise<unknown>): Promise<ZinoError> =>
  promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (err: unknown) => err as ZinoError,
  );

describe('exc with MCP servers', () => {
  it('starts them in the background: one that cannot start, or hangs, blocks neither exc nor the others', async () => {
    const { servers } = await listTools(service.socket);
    const byName = Object.fromEntries(servers.map((s) => [s.name, s]));
    expect(byName.broken).toMatchObject({ state: expect.stringMatching(/^(down|connecting)$/), tools: 0 });
    await waitFor(async () => (await serverState(service.socket, 'broken'))?.error?.includes('ENOENT'), 'the reason broken is down');
    expect((await serverState(service.socket, 'broken'))?.error).toBe('cannot start zino-no-such-mcp-server: ENOENT (is it installed, and in PATH?)');
    // The hung one never answers initialize: timeout_s (2 s) ends each attempt.
    await waitFor(async () => (await serverState(service.socket, 'hung'))?.error?.includes('timed out'), 'hung to time out');
    expect(byName.off).toMatchObject({ state: 'disabled', tools: 0 });
    expect(byName.every).toMatchObject({ state: 'up', transport: 'stdio', trusted: false, timeout_s: 60, restarts: 0, pid: expect.any(Number) });
    expect(await exc.request('capabilities', {})).toMatchObject({ type: 'capabilities' });
  });

  it('lists every tool with its server, function name, description, schema and annotations', async () => {
    const { tools } = await listTools(service.socket);
    expect(tools.find((t) => t.name === 'every__get-sum')).toEqual({
      name: 'every__get-sum',
      server: 'every',
      tool: 'get-sum',
      title: 'Get Sum Tool',
      description: 'Returns the sum of two numbers',
      input_schema: expect.objectContaining({ type: 'object', required: ['a', 'b'] }),
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      runs_without_approval: true,
    });
    expect(tools.find((t) => t.name === 'files-rw__write_file')).toMatchObject({ server: 'files-rw', tool: 'write_file', runs_without_approval: true });
    expect(tools.find((t) => t.name === 'files__write_file')).toMatchObject({ runs_without_approval: false });
    for (const tool of tools) expect(tool.name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
  });

  it('offers only the tools of the allow list', async () => {
    const { tools } = await listTools(service.socket);
    expect(tools.filter((t) => t.server === 'files').map((t) => t.tool)).toEqual(['read_text_file', 'write_file', 'list_directory']);
    const err = await failure(call('files', 'read_media_file', { path: path.join(share, 'notes.txt') }));
    expect(err).toBeInstanceOf(RemoteError);
    expect(err.code).toBe('INVALID_REQUEST');
    expect(err.message).toContain('the MCP server "files" has no tool "read_media_file" (only [mcp.servers.files] tools are offered)');
  });

  it('returns text content', async () => {
    expect(await call('every', 'get-sum', { a: 2, b: 3 })).toMatchObject({
      type: 'tool_result',
      content: [{ type: 'text', text: 'The sum of 2 and 3 is 5.' }],
      is_error: false,
      approval: 'read_only',
    });
    const read = await call('files', 'read_text_file', { path: path.join(share, 'notes.txt') });
    expect(read.content).toEqual([{ type: 'text', text: 'the backup server is called vault\n' }]);
  });

  it('returns image content with its MIME type and data', async () => {
    const result = await call('every', 'get-tiny-image');
    expect(result.content.map((c) => c.type)).toEqual(['text', 'image', 'text']);
    const image = result.content[1];
    expect(image?.mimeType).toBe('image/png');
    expect(
      Buffer.from(image?.data ?? '', 'base64')
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG');
  });

  it("passes a tool's own failure on as is_error", async () => {
    const result = await call('files', 'read_text_file', { path: '/etc/hostname' });
    expect(result.is_error).toBe(true);
    expect(result.content[0]?.text).toMatch(/access denied/i);
  });

  it('checks the arguments against the input schema before calling', async () => {
    const err = await failure(call('every', 'get-sum', { a: 'two' }));
    expect(err.code).toBe('INVALID_REQUEST');
    expect(err.message).toBe(
      "the arguments do not match the input schema of every__get-sum: arguments must have required property 'b'; arguments/a must be number",
    );
    // Never sent to the server.
    expect(sentToServer(wiretap).some((m) => m.method === 'tools/call' && JSON.stringify(m.params).includes('"two"'))).toBe(false);
  });

  it('names the server and the tools there are when one does not exist', async () => {
    expect((await failure(call('nope', 'x'))).message).toMatch(
      /^no MCP server "nope" is configured \(configured: every, slow, files, files-rw, broken, hung, off\)$/,
    );
    expect((await failure(call('broken', 'x'))).code).toBe('UPSTREAM_UNAVAILABLE');
    expect((await failure(call('off', 'echo'))).message).toBe('the MCP server "off" is disabled (enabled = false in [mcp.servers.off])');
    expect((await failure(exc.request('call_tool', { server: 'every', tool: 'echo', arguments: [] as unknown as Record<string, unknown> }))).message).toBe(
      'field "arguments" must be an object',
    );
  });

  it('refuses a tool that may change the host on an untrusted server, and runs it on a trusted one', async () => {
    const target = path.join(share, 'written.txt');
    const refused = await call('files', 'write_file', { path: target, content: 'x' });
    // A caller that does not relay approvals, under the default policy: [approval] unattended = "deny".
    expect(refused).toMatchObject({ is_error: true, approval: 'refused', decision: 'unattended:deny' });
    expect(refused.content[0]?.text).toMatch(/^the MCP tool files__write_file was not called: .*trusted = true in \[mcp\.servers\.files\]/);
    expect(existsSync(target)).toBe(false);
    const written = await call('files-rw', 'write_file', { path: target, content: 'written by MCP' });
    expect(written).toMatchObject({ is_error: false, approval: 'trusted' });
    expect(readFileSync(target, 'utf8')).toBe('written by MCP');
  });

  it('lists the tools again when a server says they changed', () => {
    // server-everything adds its client-dependent tools after initialisation and says so.
    const lines = service.logs.filter((l) => l.server === 'every');
    const notified = lines.findIndex((l) => l.msg === 'mcp server says its tools changed');
    expect(notified).toBeGreaterThanOrEqual(0);
    expect(lines.slice(notified).some((l) => l.msg === 'mcp tools listed again')).toBe(true);
  });

  it('cancels the MCP request when its caller goes away', async () => {
    const controller = new AbortController();
    const pending = call('every', 'trigger-long-running-operation', { duration: 600, steps: 600 }, controller.signal).catch((e: unknown) => e);
    const sent = await waitFor(
      () => sentToServer(wiretap).find((m) => m.method === 'tools/call' && JSON.stringify(m.params).includes('trigger-long-running-operation')),
      'the call to reach the server',
    );
    controller.abort();
    await pending;
    const cancelled = await waitFor(
      () => sentToServer(wiretap).find((m) => m.method === 'notifications/cancelled'),
      'notifications/cancelled to reach the server',
    );
    expect(cancelled.params).toMatchObject({ requestId: sent.id });
    // The session is still good.
    expect((await call('every', 'echo', { message: 'still here' })).content).toEqual([{ type: 'text', text: 'Echo: still here' }]);
  });

  it('ends a call that takes longer than timeout_s with TIMEOUT', async () => {
    const err = await failure(call('slow', 'trigger-long-running-operation', { duration: 600, steps: 600 }));
    expect(err.code).toBe('TIMEOUT');
    expect(err.message).toBe('the MCP server "slow" did not answer trigger-long-running-operation within 2 s ([mcp.servers.slow] timeout_s)');
  });

  it('restarts a server that was killed, and the next call works', async () => {
    const before = await serverState(service.socket, 'files-rw');
    expect(before?.pid).toEqual(expect.any(Number));
    killProcess(before?.pid);
    await waitFor(async () => (await serverState(service.socket, 'files-rw'))?.state !== 'up', 'files-rw to be seen down');
    const during = await failure(call('files-rw', 'list_directory', { path: share }));
    expect(['UPSTREAM_UNAVAILABLE', 'UPSTREAM_ERROR']).toContain(during.code);
    const after = await waitFor(async () => {
      const state = await serverState(service.socket, 'files-rw');
      return state?.state === 'up' ? state : undefined;
    }, 'files-rw to be back');
    expect(after).toMatchObject({ restarts: 1 });
    expect(after.pid).not.toBe(before?.pid);
    expect((await call('files-rw', 'list_directory', { path: share })).content[0]?.text).toContain('[FILE] notes.txt');
    // Log lines reach the test through a pipe, apart from the socket's answers: waited for, not assumed.
    await waitFor(() => service.logs.some((l) => l.server === 'files-rw' && l.msg === 'mcp server went down'), 'exc to log files-rw down');
    await waitFor(() => service.logs.some((l) => l.server === 'files-rw' && l.msg === 'mcp server reconnected'), 'exc to log files-rw back');
  });
});
