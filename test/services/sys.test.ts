import { cpSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { request } from '../../src/runtime/index.js';
import { PACKAGE_ROOT, startService, writeTestConfig, type ConfigOverrides, type StartedService } from '../../src/testing/suite.js';
import { renderPrompt } from '../../src/services/sys/render.js';
import { tempDir, waitFor } from '../helpers/util.js';

const started: { service: StartedService; cleanup: () => void }[] = [];
afterEach(async () => {
  for (const { service, cleanup } of started.splice(0)) {
    expect(await service.stop()).toEqual({ code: 0, signal: null });
    cleanup();
  }
});

/** Starts sys on a private copy of tools/, skills/ and SYSTEM.md that the test may edit. */
async function sys(overrides: ConfigOverrides = {}): Promise<{ service: StartedService; dir: string }> {
  const { dir, cleanup } = tempDir('zsys');
  cpSync(path.join(PACKAGE_ROOT, 'tools'), path.join(dir, 'tools'), { recursive: true });
  cpSync(path.join(PACKAGE_ROOT, 'skills'), path.join(dir, 'skills'), { recursive: true });
  cpSync(path.join(PACKAGE_ROOT, 'SYSTEM.md'), path.join(dir, 'SYSTEM.md'));
  const { file } = writeTestConfig(dir, {
    tools: { dir: path.join(dir, 'tools') },
    skills: { dir: path.join(dir, 'skills') },
    sys: { template: path.join(dir, 'SYSTEM.md'), personality: 'You are terse and precise.', soft_memory: 'The user prefers metric units.' },
    ...overrides,
  });
  const service = await startService('sys', file);
  started.push({ service, cleanup });
  return { service, dir };
}

describe('sys get', () => {
  it('renders every placeholder of the shipped template', async () => {
    const { service } = await sys({ agr: { max_iterations: 7 } });
    const reply = await request(service.socket, { type: 'get' });
    expect(reply.type).toBe('system_prompt');
    const content = reply.content as string;
    expect(content).not.toMatch(/%%[A-Z_]+%%/);
    expect(content).toContain('You are terse and precise.');
    expect(content).toContain('The user prefers metric units.');
    expect(content).toContain('You get at most 7 rounds');
    const toolLines = content.split('\n').filter((l) => l.startsWith('{"type":"function"'));
    expect(toolLines.map((l) => (JSON.parse(l) as { function: { name: string } }).function.name)).toEqual(['execute_bash', 'execute_python3']);
    expect(JSON.parse(toolLines[0] ?? '{}')).toMatchObject({ function: { parameters: { required: ['code'] } } });
    expect(content).toMatch(/^- bash: .*\(writes bash code\)$/m);
    expect(content).toMatch(/^- python: .*\(writes python3 code\)$/m);
  });

  it('takes %%MAX_ITERATIONS%% from [agent] max_iterations when it is set', async () => {
    const { service } = await sys({ agr: { max_iterations: 7 }, agent: { max_iterations: 3 } });
    expect((await request(service.socket, { type: 'get' })).content).toContain('You get at most 3 rounds');
  });

  it('serves an empty prompt with a warning when the template is missing', async () => {
    const { service } = await sys({ sys: { template: '/nonexistent/SYSTEM.md' } });
    expect(await request(service.socket, { type: 'get' })).toEqual({ type: 'system_prompt', content: '' });
    expect(service.logs.find((l) => l.msg === 'system prompt template unreadable; serving an empty prompt')).toMatchObject({ level: 'warn', reason: 'ENOENT' });
  });
});

describe('sys set_soft_memory', () => {
  it('replaces the soft memory, answers the new prompt and keeps it for later gets', async () => {
    const { service } = await sys();
    const reply = await request(service.socket, { type: 'set_soft_memory', content: 'The server is called atlas. %%TOOL_LIST%% stays literal.' });
    expect(reply.content).toContain('The server is called atlas. %%TOOL_LIST%% stays literal.');
    expect(reply.content).not.toContain('metric units');
    expect((await request(service.socket, { type: 'get' })).content).toBe(reply.content);
  });

  it('rejects a request without content', async () => {
    const { service } = await sys();
    await expect(request(service.socket, { type: 'set_soft_memory' })).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: 'missing required field "content"',
    });
    await expect(request(service.socket, { type: 'set_soft_memory', content: 42 })).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
  });

  it('refuses a soft memory over a quarter of the frame limit and keeps the old one (every prompt must fit a frame)', async () => {
    const { service } = await sys({ limits: { max_frame_bytes: 64 * 1024 } });
    await expect(request(service.socket, { type: 'set_soft_memory', content: 'm'.repeat(16 * 1024 + 1) })).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringContaining('bound of 16384 bytes') as unknown,
    });
    expect((await request(service.socket, { type: 'get' })).content).toContain('metric units');
  });
});

describe('sys and the durable soft memory', () => {
  it("takes mem's soft memory at start, so it survives a restart of sys (regression)", async () => {
    const { dir, cleanup } = tempDir('zsoft');
    const { file } = writeTestConfig(dir, { sys: { soft_memory: 'from the config' } });
    const mem = await startService('mem', file);
    try {
      await request(mem.socket, { type: 'set_soft', content: 'from mem, durable' });
      const sysService = await startService('sys', file);
      try {
        const content = String((await request(sysService.socket, { type: 'get' })).content);
        expect(content).toContain('from mem, durable');
        expect(content).not.toContain('from the config');
      } finally {
        expect(await sysService.stop()).toEqual({ code: 0, signal: null });
      }
    } finally {
      expect(await mem.stop()).toEqual({ code: 0, signal: null });
      cleanup();
    }
  });
});

describe('sys reload', () => {
  it('re-reads the template, tools and skills on reload', async () => {
    const { service, dir } = await sys();
    writeFileSync(path.join(dir, 'SYSTEM.md'), 'Tools:\n%%TOOL_LIST%%\nSkills:\n%%SKILL_LINES%%\nMemory: %%SOFT_MEMORIES%%');
    writeFileSync(path.join(dir, 'tools', 'node.json'), JSON.stringify({ description: 'Run JavaScript', meta: { executor: 'node', file_extension: '.mjs' } }));
    rmSync(path.join(dir, 'skills', 'python.json'));
    const reply = await request(service.socket, { type: 'reload' });
    const content = reply.content as string;
    expect(content.startsWith('Tools:\n{"type":"function"')).toBe(true);
    expect(content).toContain('"name":"execute_node"');
    expect(content).not.toContain('- python:');
    expect(content).toContain('- bash:');
    expect(content.endsWith('Memory: The user prefers metric units.')).toBe(true);
  });

  it('re-reads on SIGHUP', async () => {
    const { service, dir } = await sys();
    writeFileSync(path.join(dir, 'SYSTEM.md'), 'reloaded by signal');
    service.child.kill('SIGHUP');
    await waitFor(async () => (await request(service.socket, { type: 'get' })).content === 'reloaded by signal', 'the SIGHUP reload');
  });

  it('keeps serving and reports malformed tool files on reload', async () => {
    const { service, dir } = await sys();
    mkdirSync(path.join(dir, 'tools'), { recursive: true });
    writeFileSync(path.join(dir, 'tools', 'broken.json'), '{');
    const reply = await request(service.socket, { type: 'reload' });
    expect(reply.content).toContain('execute_bash');
    // The line comes through a pipe, apart from the reply.
    await waitFor(() => service.logs.some((l) => l.msg === 'catalog problem' && String(l.problem).includes('broken.json')), 'sys to report broken.json');
  });
});

describe('renderPrompt', () => {
  it('collapses the blank lines an empty value leaves behind', () => {
    const text = renderPrompt({
      template: 'A\n\n%%PERSONALITY%%\n\nB %%MAX_ITERATIONS%%',
      personality: '',
      tools: [],
      skills: [],
      maxIterations: 2,
      softMemory: '',
    });
    expect(text).toBe('A\n\nB 2');
  });

  it('does not interpret $ patterns in values', () => {
    const text = renderPrompt({
      template: '%%SOFT_MEMORIES%%',
      personality: '',
      tools: [],
      skills: [],
      maxIterations: 1,
      softMemory: "costs $& and $1 and $'",
    });
    expect(text).toBe("costs $& and $1 and $'");
  });
});
