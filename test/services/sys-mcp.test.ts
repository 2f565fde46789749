/**
 * sys lists the MCP tools exc offers in the system prompt, as OpenAI function
 * definitions, and follows them: when exc's tools change (a server goes down, comes
 * back), exc tells sys and the prompt changes with no SIGHUP; sys started before exc
 * picks them up once exc is there.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ZinoError, loadConfig, request, serve, type Handlers, type ZinoServer } from '../../src/runtime/index.js';
import { startService, writeTestConfig, type StartedService } from '../../src/testing/suite.js';
import { filesystem, serverState } from '../helpers/mcp.js';
import { killProcess } from '../helpers/procs.js';
import { captureLogger, tempDir, waitFor } from '../helpers/util.js';

const started: StartedService[] = [];
let cleanups: (() => void)[] = [];
afterEach(async () => {
  for (const service of started.splice(0).reverse()) expect(await service.stop()).toEqual({ code: 0, signal: null });
  for (const cleanup of cleanups) cleanup();
  cleanups = [];
});

/** The function definitions of sys's prompt, by name. */
async function functions(sysSocket: string): Promise<Map<string, { name: string; description: string; parameters: Record<string, unknown> }>> {
  const { content } = await request(sysSocket, { type: 'get' });
  const lines = String(content)
    .split('\n')
    .filter((l) => l.startsWith('{"type":"function"'));
  const defs = lines.map((l) => (JSON.parse(l) as { function: { name: string; description: string; parameters: Record<string, unknown> } }).function);
  return new Map(defs.map((d) => [d.name, d]));
}

function config(): { file: string; share: string } {
  const { dir, cleanup } = tempDir('zsysm');
  cleanups.push(cleanup);
  const share = path.join(dir, 'share');
  mkdirSync(share);
  const { file } = writeTestConfig(dir, {
    exc: { sandbox: 'none' },
    mcp: { servers: { files: filesystem(share, { tools: ['read_text_file', 'list_directory'] }) } },
  });
  return { file, share };
}

describe('sys with MCP tools', () => {
  it('lists them after the executors, follows a server going down and back, and picks them up from an exc that starts later', async () => {
    const { file } = config();
    // sys first: exc is not there yet.
    const sys = await startService('sys', file);
    started.push(sys);
    expect([...(await functions(sys.socket)).keys()]).toEqual(['execute_bash', 'execute_python3']);
    const exc = await startService('exc', file);
    started.push(exc);

    const names = ['execute_bash', 'execute_python3', 'files__read_text_file', 'files__list_directory'];
    await waitFor(async () => (await functions(sys.socket)).size === 4, 'the MCP tools in the prompt');
    const defs = await functions(sys.socket);
    expect([...defs.keys()]).toEqual(names);
    expect(defs.get('files__read_text_file')?.description).toMatch(/^Read the complete contents of a file/);
    expect(defs.get('files__read_text_file')?.parameters).toMatchObject({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] });
    expect(defs.get('files__read_text_file')?.parameters).not.toHaveProperty('$schema');

    // How often exc told sys (sys also asks exc itself at start, and a burst of changes is told once: no fixed count).
    const told = (): number => exc.logs.filter((l) => l.msg === 'sys told that the mcp tools changed').length;
    const toldBefore = told();

    // The server dies: its tools leave the prompt, and come back when exc has restarted it.
    const up = await waitFor(async () => {
      const state = await serverState(exc.socket, 'files');
      return state?.state === 'up' && state.pid !== undefined ? state : undefined;
    }, 'files up, with its pid');
    killProcess(up.pid);
    await waitFor(async () => (await functions(sys.socket)).size === 2, 'the MCP tools to leave the prompt');
    await waitFor(async () => (await functions(sys.socket)).size === 4, 'the MCP tools to come back');
    // exc logs after sys has answered its reload, so the line may come after the prompt changed.
    await waitFor(() => told() > toldBefore, 'exc to log that it told sys of the restart');
  });
});

describe('sys against an exc that cannot list its tools', () => {
  const TOOL = {
    name: 'files__peek',
    server: 'files',
    tool: 'peek',
    description: 'Peeks at a file.',
    input_schema: { type: 'object', properties: {} },
    runs_without_approval: false,
  };

  /** A stand-in exc on the configured socket, serving `handlers` with our own server. */
  async function fakeExc(file: string, handlers: Handlers): Promise<ZinoServer> {
    const socket = loadConfig({ path: file, env: {} }).config.exc.socket;
    mkdirSync(path.dirname(socket), { recursive: true });
    const server = await serve(socket, { handlers, log: captureLogger('fake-exc').log });
    cleanups.unshift(() => void server.close());
    return server;
  }

  it('asks again after a refusal with a code (an exc busy or starting), and takes the tools when they come', async () => {
    const { file } = config();
    let asked = 0;
    await fakeExc(file, {
      list_tools: () => {
        asked += 1;
        if (asked === 1) throw new ZinoError('OVERLOADED', 'busy, try again');
        return { type: 'tools', tools: [TOOL], servers: [] };
      },
    });
    const sys = await startService('sys', file);
    started.push(sys);
    await waitFor(async () => (await functions(sys.socket)).has('files__peek'), 'the tool from the second answer in the prompt');
    expect(asked).toBeGreaterThanOrEqual(2);
    expect(sys.logs.some((l) => l.msg === 'exc does not know list_tools: no mcp tools in the prompt')).toBe(false);
  });

  it('takes an exc that does not know list_tools (UNKNOWN_TYPE) as one without MCP tools, and asks again only on reload', async () => {
    const { file } = config();
    const refused = (): number => sys.logs.filter((l) => l.msg === 'exc does not know list_tools: no mcp tools in the prompt').length;
    // Our own server answers UNKNOWN_TYPE to a type it has no handler for.
    await fakeExc(file, { capabilities: () => ({ type: 'capabilities', executors: {}, timeout: 30 }) });
    const sys = await startService('sys', file);
    started.push(sys);
    await waitFor(() => refused() > 0, 'sys to take the refusal');
    expect([...(await functions(sys.socket)).keys()]).toEqual(['execute_bash', 'execute_python3']);
    // Taken as an answer, not retried: a reload asks exactly once more (the start asked once).
    await request(sys.socket, { type: 'reload' });
    expect(refused()).toBe(2);
  });
});
