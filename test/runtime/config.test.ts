import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'smol-toml';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, SCHEMA, loadConfig, resolveConfig, type AnyKeySpec } from '../../src/runtime/index.js';
import { tempDir } from '../helpers/util.js';

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('zcfg'));
});
afterEach(() => cleanup());

function write(name: string, text: string): string {
  const file = path.join(dir, name);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
}

function loadError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig: defaults and sources', () => {
  it('uses every default of the contract when there is no file', () => {
    const { config, file, warnings } = loadConfig({ cwd: dir, env: {} });
    expect(file).toBeNull();
    expect(warnings).toEqual([]);
    expect(config.daemon.socket).toBe('/run/zino/daemon.sock');
    expect(config.rtr).toEqual({ socket: '/run/zino/rtr.sock', streaming: true, max_retries: 2, timeout: 600, max_prompt_bytes: 8 * 1024 * 1024 });
    expect(config.agr.max_iterations).toBe(5);
    expect(config.agent).toEqual({ temperature: 0.7, top_p: 1.0, max_iterations: 5 });
    expect(config.exc).toEqual({
      socket: '/run/zino/exc.sock',
      timeout: 30,
      max_output_bytes: 1048576,
      max_disk_bytes: 268435456,
      sandbox: 'auto',
      audit_log: path.join(dir, 'data/audit.jsonl'),
      audit_max_bytes: 64 * 1024 * 1024,
    });
    expect(config.approval).toEqual({ mode: 'ask', timeout_s: 300, unattended: 'deny', allow_rules: [], host_user: '' });
    expect(config.sys).toEqual({ socket: '/run/zino/sys.sock', template: path.join(dir, 'SYSTEM.md'), personality: '', soft_memory: '' });
    expect(config.mem.data_dir).toBe(path.join(dir, 'data/mem'));
    expect(config.ctx).toEqual({ socket: '/run/zino/ctx.sock', history_limit: 50, hard_memory_top_k: 3, max_context_tokens: 0 });
    expect(config.tools.dir).toBe(path.join(dir, 'tools'));
    expect(config.skills.dir).toBe(path.join(dir, 'skills'));
    expect(config.api).toEqual({ base_url: '', key: '', key_file: '' });
    expect(config.service.model).toBe('');
    expect(config.logging.level).toBe('info');
    expect(config.limits.max_frame_bytes).toBe(16 * 1024 * 1024);
    expect(config.http).toEqual({
      enabled: false,
      listen: '127.0.0.1:8088',
      allow_non_loopback: false,
      token_file: path.join(dir, 'data/http.token'),
      max_body_bytes: 4 * 1024 * 1024,
      max_concurrent: 64,
    });
  });

  it('puts the HTTP token beside mem data (under --dir too) unless token_file is set', () => {
    const moved = write('a/ZINO.toml', '[mem]\ndata_dir = "/srv/zino/mem"\n');
    expect(loadConfig({ path: moved, env: {} }).config.http.token_file).toBe('/srv/zino/http.token');
    expect(loadConfig({ cwd: dir, env: {}, dir: path.join(dir, 'd') }).config.http.token_file).toBe(path.join(dir, 'd/data/http.token'));
    const explicit = write('b/ZINO.toml', '[http]\ntoken_file = "tok"\n');
    expect(loadConfig({ path: explicit, env: {}, dir: path.join(dir, 'd') }).config.http.token_file).toBe(path.join(dir, 'b/tok'));
  });

  it('reads ./ZINO.toml, then $ZINO_CONFIG, then --config, in rising precedence', () => {
    write('ZINO.toml', '[service]\nmodel = "cwd"\n');
    const viaEnv = write('env/ZINO.toml', '[service]\nmodel = "env"\n');
    const viaFlag = write('flag/ZINO.toml', '[service]\nmodel = "flag"\n');
    expect(loadConfig({ cwd: dir, env: {} }).config.service.model).toBe('cwd');
    expect(loadConfig({ cwd: dir, env: { ZINO_CONFIG: viaEnv } }).config.service.model).toBe('env');
    const flagged = loadConfig({ cwd: dir, env: { ZINO_CONFIG: viaEnv }, path: viaFlag });
    expect(flagged.config.service.model).toBe('flag');
    expect(flagged.file).toBe(viaFlag);
  });

  it('resolves relative paths against the config file directory', () => {
    const file = write('etc/zino/ZINO.toml', '[tools]\ndir = "mytools"\n[mem]\ndata_dir = "/var/lib/zino"\n');
    const { config } = loadConfig({ path: file, cwd: '/', env: {} });
    expect(config.tools.dir).toBe(path.join(dir, 'etc/zino/mytools'));
    expect(config.mem.data_dir).toBe('/var/lib/zino');
  });

  it('falls back to LLM_API_KEY only when [api] key is not set', () => {
    expect(loadConfig({ cwd: dir, env: { LLM_API_KEY: 'sk-env' } }).config.api.key).toBe('sk-env');
    const file = write('ZINO.toml', '[api]\nkey = "sk-file"\n');
    expect(loadConfig({ path: file, env: { LLM_API_KEY: 'sk-env' } }).config.api.key).toBe('sk-file');
  });

  it('derives [agent] max_iterations from [agr] unless it is set', () => {
    const a = write('a.toml', '[agr]\nmax_iterations = 9\n');
    expect(loadConfig({ path: a, env: {} }).config.agent.max_iterations).toBe(9);
    const b = write('b.toml', '[agr]\nmax_iterations = 9\n[agent]\nmax_iterations = 3\n');
    expect(loadConfig({ path: b, env: {} }).config.agent.max_iterations).toBe(3);
  });

  it('puts every socket and the mem data under --dir (or $ZINO_DIR)', () => {
    const { config } = loadConfig({ cwd: dir, env: {}, dir: 'state' });
    expect(config.daemon.socket).toBe(path.join(dir, 'state/run/daemon.sock'));
    expect(config.exc.socket).toBe(path.join(dir, 'state/run/exc.sock'));
    expect(config.mem.data_dir).toBe(path.join(dir, 'state/data/mem'));
    expect(config.exc.audit_log).toBe(path.join(dir, 'state/data/audit.jsonl'));
    expect(loadConfig({ cwd: dir, env: { ZINO_DIR: '/x' } }).config.rtr.socket).toBe('/x/run/rtr.sock');
  });

  it('puts the audit log beside [mem] data_dir unless it is set', () => {
    const beside = write('a.toml', '[mem]\ndata_dir = "/var/lib/zino/mem"\n');
    expect(loadConfig({ path: beside, env: {} }).config.exc.audit_log).toBe('/var/lib/zino/audit.jsonl');
    const empty = write('b.toml', '[exc]\naudit_log = ""\n');
    expect(loadConfig({ path: empty, env: {} }).config.exc.audit_log).toBe(path.join(dir, 'data/audit.jsonl'));
    const set = write('c.toml', '[exc]\naudit_log = "log/audit.jsonl"\n');
    expect(loadConfig({ path: set, env: {} }).config.exc.audit_log).toBe(path.join(dir, 'log/audit.jsonl'));
  });

  it('reads [approval] allow_rules as a list of executables and /regexes/', () => {
    const file = write('ZINO.toml', '[approval]\nallow_rules = ["uptime", "/usr/bin/df", "/systemctl restart (nginx|php-fpm)/"]\n');
    expect(loadConfig({ path: file, env: {} }).config.approval.allow_rules).toEqual(['uptime', '/usr/bin/df', '/systemctl restart (nginx|php-fpm)/']);
  });

  it('returns a frozen config', () => {
    const { config } = loadConfig({ cwd: dir, env: {} });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.agent)).toBe(true);
  });
});

describe('loadConfig: the local configuration DIR/ZINO.toml (issue 15, point 1)', () => {
  it('is read on top of ./ZINO.toml when a runtime directory is given, key by key', () => {
    write('ZINO.toml', '[api]\nbase_url = "demo"\n[service]\nmodel = "shared"\n[exc]\ntimeout = 7\n');
    const local = write('.zino/ZINO.toml', '[api]\nbase_url = "http://127.0.0.1:11434/v1"\n[service]\nmodel = "local"\n');
    const loaded = loadConfig({ cwd: dir, env: {}, dir: '.zino' });
    expect(loaded.files).toEqual([path.join(dir, 'ZINO.toml'), local]);
    expect(loaded.file).toBe(local);
    expect(loaded.config.api.base_url).toBe('http://127.0.0.1:11434/v1');
    expect(loaded.config.service.model).toBe('local');
    expect(loaded.config.exc.timeout).toBe(7);
    // Without the runtime directory, only ./ZINO.toml counts.
    expect(loadConfig({ cwd: dir, env: {} }).config.service.model).toBe('shared');
    // $ZINO_DIR names it as --dir does.
    expect(loadConfig({ cwd: dir, env: { ZINO_DIR: path.join(dir, '.zino') } }).config.service.model).toBe('local');
  });

  it("resolves each file's relative paths against its own directory, defaults against the first file's", () => {
    write('ZINO.toml', '[sys]\ntemplate = "SYSTEM.md"\n');
    write('.zino/ZINO.toml', '[api]\nkey_file = "llm.key"\n[skills]\ndir = "myskills"\n');
    const { config } = loadConfig({ cwd: dir, env: {}, dir: '.zino' });
    expect(config.api.key_file).toBe(path.join(dir, '.zino', 'llm.key'));
    expect(config.skills.dir).toBe(path.join(dir, '.zino', 'myskills'));
    expect(config.sys.template).toBe(path.join(dir, 'SYSTEM.md'));
    expect(config.tools.dir).toBe(path.join(dir, 'tools'));
  });

  it('is ignored when --config or $ZINO_CONFIG names a file', () => {
    const explicit = write('etc/ZINO.toml', '[service]\nmodel = "explicit"\n');
    write('.zino/ZINO.toml', '[service]\nmodel = "local"\n');
    expect(loadConfig({ cwd: dir, env: {}, dir: '.zino', path: explicit }).config.service.model).toBe('explicit');
    expect(loadConfig({ cwd: dir, env: { ZINO_CONFIG: explicit }, dir: '.zino' }).files).toEqual([explicit]);
  });

  it('names the local file in its errors and warnings', () => {
    write('ZINO.toml', '[service]\nmodel = "shared"\n');
    const local = write('.zino/ZINO.toml', '[servce]\nmodel = "x"\n');
    expect(loadConfig({ cwd: dir, env: {}, dir: '.zino' }).warnings).toEqual([`${local}: unknown section [servce] ignored (did you mean service?)`]);
    write('.zino/ZINO.toml', '[exc]\ntimeout = "soon"\n');
    expect(loadError(() => loadConfig({ cwd: dir, env: {}, dir: '.zino' })).message).toBe(`${local}: [exc] timeout must be a number, got the string "soon"`);
  });

  it('lets [api] key_file win over LLM_API_KEY, and [api] key over both', () => {
    write('.zino/ZINO.toml', '[api]\nkey_file = "llm.key"\n');
    expect(loadConfig({ cwd: dir, env: { LLM_API_KEY: 'sk-env' }, dir: '.zino' }).config.api).toMatchObject({
      key: '',
      key_file: path.join(dir, '.zino/llm.key'),
    });
    write('.zino/ZINO.toml', '[api]\nkey_file = "llm.key"\nkey = "sk-file"\n');
    expect(loadConfig({ cwd: dir, env: { LLM_API_KEY: 'sk-env' }, dir: '.zino' }).config.api.key).toBe('sk-file');
  });
});

describe('loadConfig: errors name the file and the key', () => {
  it.each([
    ['[agent]\ntemperature = "hot"\n', '[agent] temperature must be a number, got the string "hot"'],
    ['[rtr]\nstreaming = "yes"\n', '[rtr] streaming must be true or false, got the string "yes"'],
    ['[exc]\ntimeout = -1\n', '[exc] timeout must be at least 1, got -1'],
    ['[exc]\ntimeout = 2.5\n', '[exc] timeout must be an integer, got 2.5'],
    ['[agr]\nmax_iterations = 2.5\n', '[agr] max_iterations must be an integer, got 2.5'],
    ['[exc]\nsandbox = "docker"\n', '[exc] sandbox must be one of "auto", "bwrap", "landlock", "none", got "docker"'],
    ['[mem]\ndata_dir = 5\n', '[mem] data_dir must be a string, got number 5'],
    ['[mem]\ndata_dir = ""\n', '[mem] data_dir must not be empty'],
    ['agent = 5\n', '[agent] must be a table, got number 5'],
    ['[agent]\ntop_p = 1.5\n', '[agent] top_p must be at most 1, got 1.5'],
    ['[approval]\nmode = "sometimes"\n', '[approval] mode must be one of "ask", "allow", "deny", got "sometimes"'],
    ['[approval]\nunattended = "ask"\n', '[approval] unattended must be one of "deny", "allow", got "ask"'],
    ['[approval]\ntimeout_s = 0\n', '[approval] timeout_s must be at least 1, got 0'],
    ['[approval]\nallow_rules = "uptime"\n', '[approval] allow_rules must be a list of strings, got the string "uptime"'],
    ['[approval]\nallow_rules = ["uptime", 5]\n', '[approval] allow_rules[1] must be a string, got number 5'],
    [
      '[approval]\nallow_rules = ["rm -rf"]\n',
      '[approval] allow_rules[0] holds "rm -rf", which is neither an executable (a name or path without blanks or shell characters) nor a /regular expression/',
    ],
    [
      '[approval]\nallow_rules = ["/(unclosed/"]\n',
      expect.stringMatching(/^\[approval\] allow_rules\[0\] holds an invalid regular expression "\/\(unclosed\/": /),
    ],
    [
      '[approval]\nhost_user = "Root Admin"\n',
      '[approval] host_user must be a user name (lowercase letters, digits, "_" and "-", at most 32) or a numeric uid, got "Root Admin"',
    ],
    ['[exc]\naudit_max_bytes = 10\n', '[exc] audit_max_bytes must be at least 65536, got 10'],
  ])('rejects %j', (toml, message) => {
    const file = write('ZINO.toml', toml);
    const err = loadError(() => loadConfig({ path: file, env: {} }));
    expect(err.code).toBe('CONFIG');
    expect(err.message).toEqual(typeof message === 'string' ? `${file}: ${message}` : expect.stringContaining(file));
    if (typeof message !== 'string') expect(err.message.slice(file.length + 2)).toEqual(message);
  });

  it('reads MCP servers, one table each, with defaults and paths resolved', () => {
    const file = write(
      'etc/ZINO.toml',
      '[mcp.servers.files]\ncommand = "mcp-server-filesystem"\nargs = ["/srv"]\ncwd = "work"\nenv = { A_B = "1" }\ntools = ["read_file"]\n' +
        '[mcp.servers.web-2]\nurl = "http://127.0.0.1:9000/mcp"\ntrusted = true\nenabled = false\ntimeout_s = 5\n',
    );
    const { config, warnings } = loadConfig({ path: file, env: {} });
    expect(warnings).toEqual([]);
    expect(config.mcp.servers).toEqual({
      files: {
        command: 'mcp-server-filesystem',
        args: ['/srv'],
        env: { A_B: '1' },
        cwd: path.join(dir, 'etc', 'work'),
        url: '',
        enabled: true,
        timeout_s: 60,
        tools: ['read_file'],
        trusted: false,
      },
      'web-2': { command: '', args: [], env: {}, cwd: '', url: 'http://127.0.0.1:9000/mcp', enabled: false, timeout_s: 5, tools: null, trusted: true },
    });
    expect(loadConfig({ path: write('ZINO.toml', ''), env: {} }).config.mcp.servers).toEqual({});
  });

  it.each([
    ['[mcp.servers.files]\nargs = ["x"]\n', '[mcp.servers.files] needs either command (a stdio server) or url (a Streamable HTTP server), not both'],
    [
      '[mcp.servers.files]\ncommand = "a"\nurl = "http://x/"\n',
      '[mcp.servers.files] needs either command (a stdio server) or url (a Streamable HTTP server), not both',
    ],
    ['[mcp.servers.files]\nurl = "ftp://x/"\n', '[mcp.servers.files] url must be an http:// or https:// URL, got "ftp://x/"'],
    ['[mcp.servers.a__b]\ncommand = "a"\n', '[mcp.servers.a__b]: the name must be 1-32 letters, digits, - and single _ (not at either end)'],
    ['[mcp.servers."a b"]\ncommand = "a"\n', '[mcp.servers.a b]: the name must be 1-32 letters, digits, - and single _ (not at either end)'],
    ['[mcp.servers.files]\ncommand = "a"\nargs = "x"\n', '[mcp.servers.files] args must be a list of strings, got the string "x"'],
    ['[mcp.servers.files]\ncommand = "a"\nargs = [1]\n', '[mcp.servers.files] args[0] must be a string, got number 1'],
    ['[mcp.servers.files]\ncommand = "a"\nenv = { "A-B" = "1" }\n', '[mcp.servers.files] env: "A-B" is not an environment variable name'],
    ['[mcp.servers.files]\ncommand = "a"\nenv = { A = 1 }\n', '[mcp.servers.files] env: A must be a string, got number 1'],
    ['[mcp.servers.files]\ncommand = "a"\ntimeout_s = 2000001\n', '[mcp.servers.files] timeout_s must be at most 2000000, got 2000001'],
    ['[mcp.servers.files]\ncommand = "a"\ntrusted = "yes"\n', '[mcp.servers.files] trusted must be true or false, got the string "yes"'],
    ['[mcp]\nservers = 5\n', '[mcp.servers] must hold tables like [mcp.servers.NAME], got number 5'],
    ['[mcp.servers]\nfiles = 5\n', '[mcp.servers.files] must be a table, got number 5'],
  ])('rejects the MCP server table %j', (toml, message) => {
    const file = write('ZINO.toml', toml);
    expect(loadError(() => loadConfig({ path: file, env: {} })).message).toBe(`${file}: ${message}`);
  });

  it('warns about unknown keys of an MCP server table', () => {
    const file = write('ZINO.toml', '[mcp.servers.files]\ncomand = "x"\nurl = "http://127.0.0.1:1/"\n[mcp]\nserver = 1\n');
    expect(loadConfig({ path: file, env: {} }).warnings).toEqual([
      `${file}: unknown key [mcp] server ignored (did you mean servers?)`,
      `${file}: unknown key [mcp.servers.files] comand ignored (did you mean command?)`,
    ]);
  });

  it('rejects invalid TOML with the line and column', () => {
    const file = write('ZINO.toml', '[agent]\ntemperature = \n');
    expect(loadError(() => loadConfig({ path: file, env: {} })).message).toMatch(new RegExp(`^${file}: invalid TOML at line 2, column \\d+: `));
  });

  it('rejects an explicit file that cannot be read', () => {
    const missing = path.join(dir, 'nope.toml');
    expect(loadError(() => loadConfig({ path: missing, env: {} })).message).toBe(`${missing}: cannot read the config file (ENOENT)`);
    expect(loadError(() => loadConfig({ cwd: dir, env: { ZINO_CONFIG: missing } })).message).toContain('ENOENT');
  });

  it('warns about unknown sections and keys, suggesting near misses', () => {
    const file = write('ZINO.toml', '[exc]\ntimout = 5\n[agnet]\nx = 1\n');
    const { warnings, config } = loadConfig({ path: file, env: {} });
    expect(warnings).toEqual([
      `${file}: unknown section [agnet] ignored (did you mean agent?)`,
      `${file}: unknown key [exc] timout ignored (did you mean timeout?)`,
    ]);
    expect(config.exc.timeout).toBe(30);
  });
});

describe('the shipped ZINO.toml', () => {
  const text = readFileSync(path.join(__dirname, '../../ZINO.toml'), 'utf8');

  it('loads without warnings', () => {
    const { warnings } = resolveConfig(parse(text), { file: 'ZINO.toml', baseDir: '/', env: {} });
    expect(warnings).toEqual([]);
  });

  it('documents every key with its default', () => {
    // Uncomment "# key = value" lines and example tables ("# [mcp.servers.files]"; active lines
    // stay) and compare with the schema.
    const uncommented = text
      .split('\n')
      .map((line) => line.replace(/^# (\w+ = .*)$/, '$1').replace(/^# (\[[\w.]+\])$/, '$1'))
      .filter((line) => !line.startsWith('#'))
      .join('\n');
    const documented = parse(uncommented.replace('base_url = "demo"\n', '')) as Record<string, Record<string, unknown>>;
    for (const [section, keys] of Object.entries(SCHEMA)) {
      for (const [key, spec] of Object.entries(keys as Record<string, AnyKeySpec>)) {
        if (spec.kind !== 'tables') {
          expect(documented[section]?.[key], `[${section}] ${key}`).toEqual(spec.default);
          continue;
        }
        // A table of tables defaults to none; its example shows every key, at its default
        // unless the default is "not set" ("", [] or absent), where it shows a value to copy.
        const [example, ...more] = Object.values((documented[section]?.[key] ?? {}) as Record<string, Record<string, unknown>>);
        expect(example, `an example [${section}.${key}.NAME]`).toBeDefined();
        expect(more).toEqual([]);
        expect(Object.keys(example ?? {}).sort(), `[${section}.${key}.NAME]`).toEqual(Object.keys(spec.entry).sort());
        for (const [entryKey, entrySpec] of Object.entries(spec.entry)) {
          const unset = entrySpec.default === null || entrySpec.default === '' || (Array.isArray(entrySpec.default) && entrySpec.default.length === 0);
          if (!unset) expect(example?.[entryKey], `[${section}.${key}.NAME] ${entryKey}`).toEqual(entrySpec.default);
        }
      }
    }
    expect(text).toContain('base_url = "demo"');
  });
});
