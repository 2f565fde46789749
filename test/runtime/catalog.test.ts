import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fabricatorExamples, loadCatalog } from '../../src/runtime/index.js';
import { captureLogger, tempDir } from '../helpers/util.js';

const ROOT = path.join(__dirname, '../..');
let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('zcat'));
  mkdirSync(path.join(dir, 'tools'));
  mkdirSync(path.join(dir, 'skills'));
});
afterEach(() => cleanup());

function put(sub: 'tools' | 'skills', name: string, content: unknown): void {
  writeFileSync(path.join(dir, sub, name), typeof content === 'string' ? content : JSON.stringify(content));
}

const load = () => loadCatalog({ tools: path.join(dir, 'tools'), skills: path.join(dir, 'skills') });

describe('the shipped catalog', () => {
  it('loads bash and python3 tools and skills without problems', async () => {
    const catalog = await loadCatalog({ tools: path.join(ROOT, 'tools'), skills: path.join(ROOT, 'skills') });
    expect(catalog.problems).toEqual([]);
    expect(catalog.tools.map((t) => [t.name, t.executor, t.fileExtension])).toEqual([
      ['execute_bash', 'bash', '.sh'],
      ['execute_python3', 'python3', '.py'],
    ]);
    expect(catalog.tools[0]?.staticAnalysis?.[0]).toBe('shellcheck');
    expect(catalog.skills.map((s) => [s.name, s.executor])).toEqual([
      ['bash', 'bash'],
      ['python', 'python3'],
    ]);
    for (const skill of catalog.skills) {
      expect(skill.interpreter[0]?.role).toBe('system');
      expect(skill.fabricator[0]?.role).toBe('system');
      const examples = fabricatorExamples(skill);
      expect(examples.length).toBeGreaterThanOrEqual(4);
      // Every example request carries the [KCR] separator the fabricator is prompted with.
      for (const m of examples.filter((e) => e.role === 'user')) expect(m.content).toContain(' [KCR] ');
    }
  });

  it('is ASCII, as is the default SYSTEM.md: every request carries them through five hops', () => {
    // A character past ASCII takes UTF-8 decoding off its fast path, and one past U+00FF (a
    // typographic "…") makes V8 hold the whole frame as a two-byte string: every hop's decoding,
    // JSON parsing and encoding of the prompt then costs about twice as much, 5-6 % of the suite's
    // CPU per request (docs/benchmarks.md, round 14). Users' own text may hold anything; the
    // shipped defaults, sent with every request, need not.
    const files = ['SYSTEM.md', ...['tools', 'skills'].flatMap((sub) => readdirSync(path.join(ROOT, sub)).map((f) => path.join(sub, f)))];
    // A JSON file is read as its parsed strings too: a "\u2026" escape is ASCII on disk and not once loaded.
    const found = files.flatMap((file) => {
      const raw = readFileSync(path.join(ROOT, file), 'utf8');
      const loaded = file.endsWith('.json') ? JSON.stringify(JSON.parse(raw)) : raw;
      return [...new Set([raw, loaded])].flatMap((text) => [...text.matchAll(/[^\t\n\r -~]/g)].map((m) => `${file}: ${JSON.stringify(m[0])} at ${m.index}`));
    });
    expect(found).toEqual([]);
  });
});

describe('loadCatalog', () => {
  it('reports and skips malformed files, keeping the good ones', async () => {
    const { log, lines } = captureLogger();
    put('tools', 'a-good.json', { meta: { executor: 'sh' } });
    put('tools', 'b-broken.json', '{ not json');
    put('tools', 'c-nometa.json', { description: 'x' });
    put('tools', 'd-badexec.json', { meta: { executor: '../../bin/sh' } });
    put('tools', 'e-dup.json', { meta: { executor: 'sh' } });
    put('tools', 'f-array.json', []);
    put('tools', 'g-badcmd.json', { meta: { executor: 'z', command: [1] } });
    put('tools', 'ignored.txt', 'not a json file');
    put('skills', 'a.json', { meta: { executor: 'sh' }, interpreter: 'nope' });
    put('skills', 'b.json', { meta: { executor: 'sh' }, fabricator: [{ role: 'user', content: 5 }] });
    put('skills', 'c.json', { interpreter: [] });
    put('skills', 'ok.json', { meta: { executor: 'sh' }, interpreter: [], fabricator: [] });
    const catalog = await loadCatalog({ tools: path.join(dir, 'tools'), skills: path.join(dir, 'skills') }, log);
    expect(catalog.tools.map((t) => t.name)).toEqual(['execute_sh']);
    expect(catalog.skills.map((s) => s.name)).toEqual(['ok']);
    expect(catalog.problems).toHaveLength(9);
    expect(catalog.problems.join('\n')).toMatch(/b-broken\.json: not readable JSON/);
    expect(catalog.problems.join('\n')).toMatch(/c-nometa\.json: missing "meta" object; file skipped/);
    expect(catalog.problems.join('\n')).toMatch(/e-dup\.json: executor "sh" is already defined/);
    expect(catalog.problems.join('\n')).toMatch(/skills\/b\.json: fabricator\[0\]\.content must be a string/);
    expect(lines.filter((l) => l.msg === 'catalog problem')).toHaveLength(9);
  });

  it('fills defaults and accepts the OpenAI function wrapper', async () => {
    put('tools', 'node.json', {
      type: 'function',
      function: { name: 'execute_node', description: 'Run JavaScript', parameters: { type: 'object', properties: {} } },
      meta: { executor: 'node', command: 'node --no-warnings', file_extension: '.mjs', static_analysis: 'node --check' },
    });
    const { tools, problems } = await load();
    expect(problems).toEqual([]);
    expect(tools[0]).toMatchObject({
      name: 'execute_node',
      description: 'Run JavaScript',
      command: ['node', '--no-warnings'],
      fileExtension: '.mjs',
      staticAnalysis: ['node', '--check'],
    });
  });

  it('names every tool execute_<executor> and says so when a file disagrees', async () => {
    put('tools', 'x.json', { name: 'run_it', meta: { executor: 'perl' } });
    const { tools, problems } = await load();
    expect(tools[0]?.name).toBe('execute_perl');
    expect(tools[0]?.command).toEqual(['perl']);
    expect(problems).toEqual([`${path.join(dir, 'tools', 'x.json')}: name "run_it" ignored; tool functions are named execute_perl`]);
  });

  it('reports a missing directory instead of failing', async () => {
    const catalog = await loadCatalog({ tools: path.join(dir, 'nope'), skills: path.join(dir, 'skills') });
    expect(catalog.tools).toEqual([]);
    expect(catalog.problems[0]).toMatch(/nope: cannot read the directory \(ENOENT\)/);
  });
});

describe('fabricatorExamples', () => {
  it('returns the user/assistant pairs and skips system messages and unpaired turns', () => {
    const skill = {
      name: 's',
      description: '',
      executor: 'sh',
      interpreter: [],
      file: '',
      fabricator: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'u1' },
        { role: 'assistant', content: 'a1' },
        { role: 'user', content: 'dangling' },
        { role: 'user', content: 'u2' },
        { role: 'assistant', content: 'a2' },
      ],
    };
    expect(fabricatorExamples(skill).map((m) => m.content)).toEqual(['u1', 'a1', 'u2', 'a2']);
  });
});
