/**
 * Rendering for an install prefix: placeholders, refused paths, the initial
 * configuration, the production dependencies chosen from the lock file.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { parseAccounts } from '../../src/deploy/accounts.js';
import { envFileText, installConfigText, setKey } from '../../src/deploy/config-text.js';
import { renderInstallFiles } from '../../src/deploy/install.js';
import { ALL_UNITS } from '../../src/deploy/layout.js';
import { productionModules } from '../../src/deploy/package-files.js';
import { RenderError, renderTemplate, renderUnits } from '../../src/deploy/render.js';
import { resolveConfig } from '../../src/runtime/index.js';
import { PACKAGE_ROOT } from '../../src/testing/paths.js';

const VARS = { node: '/usr/local/bin/node', prefix: '/srv/zino-1.0' };

describe('renderTemplate', () => {
  it('replaces every @NODE@ and @PREFIX@', () => {
    expect(renderTemplate('ExecStart=@NODE@ @PREFIX@/x.js\nDocumentation=file:@PREFIX@/d.md\n', VARS)).toBe(
      'ExecStart=/usr/local/bin/node /srv/zino-1.0/x.js\nDocumentation=file:/srv/zino-1.0/d.md\n',
    );
  });

  it('refuses an unknown placeholder left in a template', () => {
    expect(() => renderTemplate('User=@USER@', VARS)).toThrow(/unknown placeholder @USER@/);
  });

  it.each([
    ['relative', 'opt/zino', /absolute/],
    ['with a space', '/opt/my zino', /no spaces/],
    ['with a specifier', '/opt/zino%i', /no spaces, quotes, \$ or %/],
    ['with a variable', '/opt/$HOME', /no spaces, quotes, \$ or %/],
    ['not normalised', '/opt/../zino', /normalised/],
    ['with a trailing slash', '/opt/zino/', /normalised/],
    ['the root', '/', /cannot be \//],
  ])('refuses a prefix %s', (_what, prefix, message) => {
    expect(() => renderTemplate('x', { ...VARS, prefix })).toThrow(RenderError);
    expect(() => renderTemplate('x', { ...VARS, prefix })).toThrow(message);
  });

  it('renders every unit of the package with no placeholder left', () => {
    const units = renderUnits(PACKAGE_ROOT, VARS);
    expect(units.map((u) => u.name)).toEqual([...ALL_UNITS]);
    for (const unit of units) {
      expect(unit.text).not.toMatch(/@[A-Z_]+@/);
      if (unit.name.endsWith('.service'))
        expect(unit.text).toMatch(/^ExecStart=\/usr\/local\/bin\/node (--[a-z-]+=\d+ )*\/srv\/zino-1\.0\/dist\/bundle\/zino\.js serve /m);
    }
  });
});

describe('the initial /etc/zino/ZINO.toml', () => {
  const packageConfig = readFileSync(path.join(PACKAGE_ROOT, 'ZINO.toml'), 'utf8');

  it('is a valid configuration with absolute paths under the prefix, /run/zino sockets, /var/lib/zino data and the demo model', () => {
    const text = installConfigText(packageConfig, '/srv/zino');
    const { config, warnings } = resolveConfig(parse(text), { file: '/etc/zino/ZINO.toml', baseDir: '/etc/zino', env: {} });
    expect(warnings).toEqual([]);
    expect(config.tools.dir).toBe('/srv/zino/tools');
    expect(config.skills.dir).toBe('/srv/zino/skills');
    expect(config.sys.template).toBe('/srv/zino/SYSTEM.md');
    expect(config.mem.data_dir).toBe('/var/lib/zino');
    expect(config.api.base_url).toBe('demo');
    for (const service of ['daemon', 'rtr', 'agr', 'sys', 'exc', 'mem', 'ctx'] as const) expect(config[service].socket).toBe(`/run/zino/${service}.sock`);
  });

  it('tells the operator where the endpoint and the key go, and keeps every documented key', () => {
    const text = installConfigText(packageConfig, '/srv/zino');
    expect(text).toMatch(/\[api\]\n# >>> Set the LLM endpoint here/);
    expect(text).toContain('LLM_API_KEY=... in /etc/zino/zino.env');
    for (const key of ['# temperature = 0.7', '# max_retries = 2', '# shutdown_grace_ms = 10000']) expect(text).toContain(key);
  });

  it('comes with an env file whose key is commented out', () => {
    expect(envFileText()).toMatch(/^#LLM_API_KEY=$/m);
    expect(envFileText()).not.toMatch(/^LLM_API_KEY=/m);
  });

  it('is checked before anything is installed', () => {
    expect(renderInstallFiles(PACKAGE_ROOT, VARS).config).toContain('dir = "/srv/zino-1.0/tools"');
  });
});

describe('setKey', () => {
  const text = '[a]\n# x = 1\ny = 2\n\n[b]\n# x = 3\n';
  it('uncomments the key shown in its own section only', () => {
    expect(setKey(text, 'b', 'x', '9')).toBe('[a]\n# x = 1\ny = 2\n\n[b]\nx = 9\n');
  });
  it('replaces a key already set', () => {
    expect(setKey(text, 'a', 'y', '5')).toBe('[a]\n# x = 1\ny = 5\n\n[b]\n# x = 3\n');
  });
  it('adds a missing key under its section, and a missing section at the end', () => {
    expect(setKey(text, 'a', 'z', '"q"')).toBe('[a]\nz = "q"\n# x = 1\ny = 2\n\n[b]\n# x = 3\n');
    expect(setKey('[a]\n', 'c', 'k', 'true')).toBe('[a]\n\n[c]\nk = true\n');
  });
});

describe('productionModules', () => {
  it('takes the top-level packages not marked dev; nested ones come with their parent', () => {
    const lock = JSON.stringify({
      lockfileVersion: 3,
      packages: {
        '': { name: 'zino' },
        'node_modules/pino': {},
        'node_modules/@scope/lib': { optional: true },
        'node_modules/vitest': { dev: true },
        'node_modules/pino/node_modules/inner': {},
      },
    });
    expect(productionModules(lock)).toEqual(['node_modules/@scope/lib', 'node_modules/pino']);
  });

  it('refuses a lock file without "packages"', () => {
    expect(() => productionModules('{"lockfileVersion":1,"dependencies":{}}')).toThrow(/lockfileVersion 2 or 3/);
  });
});

describe('parseAccounts', () => {
  it('reads names and ids of users, and the members of groups', () => {
    expect(parseAccounts('root:x:0:0:root:/root:/bin/bash\n\nzino:x:998:998::/var/lib/zino:/usr/sbin/nologin\n').map(({ name, id }) => [name, id])).toEqual([
      ['root', 0],
      ['zino', 998],
    ]);
    expect(parseAccounts('# comment\nzino:x:998:alice,bob\nother:x:5:\n')).toEqual([
      { name: 'zino', id: 998, members: ['alice', 'bob'] },
      { name: 'other', id: 5, members: [] },
    ]);
  });
});
