/**
 * The installer's decisions, from what it finds on the target: configuration and
 * env file written only when absent, data never touched, user created only when
 * missing, foreign prefixes refused, uninstall keeping data unless --purge.
 */
import { describe, expect, it } from 'vitest';
import { describe as describeAction, type Action } from '../../src/deploy/actions.js';
import { ALL_UNITS, HTTP_UNIT, makeLayout } from '../../src/deploy/layout.js';
import type { Observed } from '../../src/deploy/observe.js';
import { planInstall, type InstallRequest } from '../../src/deploy/plan-install.js';
import { planUninstall } from '../../src/deploy/plan-uninstall.js';

/** A fresh machine: nothing of ZINO on it, systemd running, root. */
function fresh(overrides: Partial<Observed> = {}): Observed {
  return {
    userExists: false,
    groupExists: false,
    runnerGroupExists: false,
    configDirExists: false,
    configExists: false,
    envExists: false,
    stateDirExists: false,
    httpStateDirExists: false,
    httpEnabled: false,
    runtimeDirExists: false,
    prefix: 'absent',
    sourceIsPrefix: false,
    wrapper: 'absent',
    unitsPresent: [],
    tmpfilesExists: false,
    sysusersExists: false,
    systemdRunning: true,
    isRoot: true,
    ...overrides,
  };
}

/** A machine where ZINO is installed and has data. */
function installed(overrides: Partial<Observed> = {}): Observed {
  return fresh({
    userExists: true,
    groupExists: true,
    runnerGroupExists: true,
    configDirExists: true,
    configExists: true,
    envExists: true,
    envMode: 0o640,
    stateDirExists: true,
    runtimeDirExists: true,
    prefix: 'zino',
    wrapper: 'ours',
    unitsPresent: [...ALL_UNITS],
    tmpfilesExists: true,
    sysusersExists: true,
    ...overrides,
  });
}

function request(overrides: Partial<InstallRequest> = {}): InstallRequest {
  return {
    layout: makeLayout({ prefix: '/opt/zino' }),
    source: '/src/zino',
    entries: ['package.json', 'dist/src'],
    missing: [],
    node: '/usr/bin/node',
    version: '1.2.3',
    files: {
      units: ALL_UNITS.map((name) => ({ name, text: `[Unit]\n# ${name}\n` })),
      httpUnit: { name: HTTP_UNIT, text: '[Unit]\n# http\n' },
      tmpfiles: 't',
      sysusers: 's',
      wrapper: 'w',
      config: 'c',
      env: 'e',
    },
    now: false,
    ...overrides,
  };
}

const touches = (actions: Action[], p: string): Action[] =>
  actions.filter((a) => (a.kind === 'keep' || a.kind === 'note' ? false : describeAction(a).includes(p)));
const writes = (actions: Action[]): string[] => actions.flatMap((a) => (a.kind === 'write' ? [a.path] : []));
const commands = (actions: Action[]): string[] => actions.flatMap((a) => (a.kind === 'run' ? [a.argv.join(' ')] : []));

describe('planInstall', () => {
  it('on a fresh machine creates the user, the package, the config, the env file, the units, and enables the target', () => {
    const { actions, errors } = planInstall(request(), fresh());
    expect(errors).toEqual([]);
    expect(commands(actions)).toEqual([
      'systemd-sysusers /etc/sysusers.d/zino.conf',
      'systemd-tmpfiles --create /etc/tmpfiles.d/zino.conf',
      'systemctl daemon-reload',
      'systemctl enable zino.target',
    ]);
    expect(writes(actions)).toEqual(
      expect.arrayContaining([
        '/etc/zino/ZINO.toml',
        '/etc/zino/zino.env',
        '/etc/tmpfiles.d/zino.conf',
        '/usr/local/bin/zino',
        ...ALL_UNITS.map((u) => `/etc/systemd/system/${u}`),
      ]),
    );
    expect(actions).toContainEqual(expect.objectContaining({ kind: 'install-package', prefix: '/opt/zino' }));
    expect(actions).toContainEqual(expect.objectContaining({ kind: 'mkdir', path: '/etc/zino', mode: 0o750, owner: { user: 'root', group: 'zino' } }));
  });

  it('writes the config and the env file 0640 root:zino, only when absent', () => {
    const fromScratch = planInstall(request(), fresh()).actions;
    for (const file of ['/etc/zino/ZINO.toml', '/etc/zino/zino.env']) {
      expect(fromScratch).toContainEqual(expect.objectContaining({ kind: 'write', path: file, mode: 0o640, owner: { user: 'root', group: 'zino' } }));
    }
    const again = planInstall(request(), installed()).actions;
    expect(writes(again)).not.toContain('/etc/zino/ZINO.toml');
    expect(writes(again)).not.toContain('/etc/zino/zino.env');
    expect(again).toContainEqual(expect.objectContaining({ kind: 'keep', path: '/etc/zino/ZINO.toml' }));
  });

  it('never touches the data directory', () => {
    for (const seen of [fresh(), installed(), fresh({ stateDirExists: true })]) {
      expect(touches(planInstall(request(), seen).actions, '/var/lib/zino')).toEqual([]);
    }
  });

  it('creates the user and group only when one is missing', () => {
    expect(commands(planInstall(request(), installed()).actions)).not.toContain('systemd-sysusers /etc/sysusers.d/zino.conf');
    expect(commands(planInstall(request(), installed({ groupExists: false })).actions)).toContain('systemd-sysusers /etc/sysusers.d/zino.conf');
  });

  it('restarts running services on an upgrade, and starts them with --now', () => {
    expect(commands(planInstall(request(), fresh()).actions).some((c) => c.includes('try-restart'))).toBe(false);
    expect(commands(planInstall(request(), installed()).actions).some((c) => c.startsWith('systemctl try-restart zino-daemon.service'))).toBe(true);
    const now = planInstall(request({ now: true }), fresh()).actions;
    expect(now.at(-1)).toMatchObject({ kind: 'run', argv: ['systemctl', 'start', 'zino.target'], manager: 'required' });
  });

  it('refuses a prefix that holds something else, and an incomplete package, before doing anything', () => {
    const foreign = planInstall(request(), fresh({ prefix: 'foreign' }));
    expect(foreign.actions).toEqual([]);
    expect(foreign.errors).toEqual(['/opt/zino exists and is not a ZINO installation; remove it or choose another --prefix']);
    const unbuilt = planInstall(request({ missing: ['dist/bundle/zino.js'] }), fresh());
    expect(unbuilt.actions).toEqual([]);
    expect(unbuilt.errors[0]).toContain('dist/bundle/zino.js');
  });

  it('refuses a node binary under a home directory, which the units cannot see', () => {
    const plan = planInstall(request({ node: '/root/.nvm/versions/node/v20/bin/node' }), fresh());
    expect(plan.errors[0]).toContain('ProtectHome=yes');
  });

  it('keeps the package in place when it runs from the prefix, and keeps a zino command it did not write', () => {
    const { actions } = planInstall(request(), installed({ sourceIsPrefix: true, wrapper: 'foreign' }));
    expect(actions.some((a) => a.kind === 'install-package')).toBe(false);
    expect(writes(actions)).not.toContain('/usr/local/bin/zino');
  });

  it('warns when the env file is readable by everyone', () => {
    const { actions } = planInstall(request(), installed({ envMode: 0o644 }));
    expect(actions).toContainEqual({ kind: 'note', text: expect.stringContaining('chmod 0640 /etc/zino/zino.env') });
  });
});

describe('planInstall: the HTTP front end', () => {
  const enabling = (files: InstallRequest['files']): InstallRequest['files'] => ({ ...files, config: '[http]\nenabled = true\n' });

  it('is not installed while [http] enabled is not true, and the operator is told how to add it', () => {
    const { actions } = planInstall(request(), fresh());
    expect(writes(actions)).not.toContain('/etc/systemd/system/zino-http.service');
    expect(commands(actions).some((c) => c.includes(HTTP_UNIT))).toBe(false);
    expect(actions).toContainEqual({ kind: 'note', text: expect.stringContaining('set it and run zino install-systemd again') });
  });

  it('is installed and enabled when the configuration written now, or the one in place, enables it', () => {
    const base = request();
    for (const [req, seen] of [
      [request({ files: enabling(base.files) }), fresh()],
      [request(), installed({ httpEnabled: true })],
    ] as const) {
      const { actions } = planInstall(req, seen);
      expect(actions).toContainEqual(expect.objectContaining({ kind: 'write', path: '/etc/systemd/system/zino-http.service', mode: 0o644 }));
      expect(commands(actions)).toContain('systemctl enable zino-http.service');
      expect(touches(actions, '/var/lib/zino-http')).toEqual([]);
    }
    // An existing configuration wins over the package's: it is the one the units read.
    expect(writes(planInstall(request({ files: enabling(base.files) }), installed()).actions)).not.toContain('/etc/systemd/system/zino-http.service');
  });

  it('is restarted on an upgrade when it runs, and stopped, disabled and removed once the configuration no longer enables it', () => {
    const present = [...ALL_UNITS, HTTP_UNIT];
    const upgrade = commands(planInstall(request(), installed({ httpEnabled: true, unitsPresent: present })).actions);
    expect(upgrade.find((c) => c.startsWith('systemctl try-restart'))).toContain(HTTP_UNIT);
    const { actions } = planInstall(request(), installed({ httpEnabled: false, unitsPresent: present }));
    expect(commands(actions)).toEqual(expect.arrayContaining(['systemctl stop zino-http.service', 'systemctl disable zino-http.service']));
    expect(actions).toContainEqual(expect.objectContaining({ kind: 'remove', path: '/etc/systemd/system/zino-http.service' }));
    expect(commands(actions).find((c) => c.startsWith('systemctl try-restart'))).not.toContain(HTTP_UNIT);
  });
});

describe('planUninstall', () => {
  it('stops, disables and removes the HTTP unit too, and with --purge its token', () => {
    const seen = installed({ unitsPresent: [...ALL_UNITS, HTTP_UNIT], httpStateDirExists: true });
    const { actions } = planUninstall({ layout: makeLayout(), purge: false }, seen);
    expect(commands(actions)[0]).toMatch(/^systemctl stop zino\.target .* zino-http\.service$/);
    expect(actions).toContainEqual(expect.objectContaining({ kind: 'remove', path: '/etc/systemd/system/zino-http.service' }));
    expect(actions).toContainEqual(expect.objectContaining({ kind: 'keep', path: '/var/lib/zino-http' }));
    const purged = planUninstall({ layout: makeLayout(), purge: true }, seen).actions;
    expect(purged).toContainEqual(expect.objectContaining({ kind: 'remove', path: '/var/lib/zino-http' }));
  });

  it('stops, disables and removes units, entries, command and prefix; keeps config, data and user', () => {
    const { actions, errors } = planUninstall({ layout: makeLayout(), purge: false }, installed());
    expect(errors).toEqual([]);
    expect(commands(actions).slice(0, 2)).toEqual([
      'systemctl stop zino.target zino-daemon.service zino-rtr.service zino-agr.service zino-sys.service zino-exc.service zino-mem.service zino-ctx.service zino-runner.service',
      'systemctl disable zino.target zino-daemon.service zino-rtr.service zino-agr.service zino-sys.service zino-exc.service zino-mem.service zino-ctx.service zino-runner.service',
    ]);
    const removed = actions.flatMap((a) => (a.kind === 'remove' ? [a.path] : []));
    expect(removed).toEqual(
      expect.arrayContaining(['/etc/tmpfiles.d/zino.conf', '/usr/local/bin/zino', '/opt/zino', ...ALL_UNITS.map((u) => `/etc/systemd/system/${u}`)]),
    );
    expect(touches(actions, '/var/lib/zino')).toEqual([]);
    expect(touches(actions, '/etc/zino')).toEqual([]);
    expect(commands(actions).some((c) => c.startsWith('userdel'))).toBe(false);
    expect(actions.at(-1)).toMatchObject({ kind: 'remove', path: '/opt/zino' });
  });

  it('with --purge also removes the configuration, the data and the user', () => {
    const { actions } = planUninstall({ layout: makeLayout(), purge: true }, installed());
    const removed = actions.flatMap((a) => (a.kind === 'remove' ? [a.path] : []));
    expect(removed).toEqual(expect.arrayContaining(['/etc/zino', '/var/lib/zino']));
    expect(commands(actions)).toContain('userdel zino');
    expect(commands(actions)).toContain('groupdel zino-runner');
  });

  it('leaves alone a prefix and a zino command that are not its own', () => {
    const { actions } = planUninstall({ layout: makeLayout(), purge: false }, installed({ prefix: 'foreign', wrapper: 'foreign' }));
    expect(touches(actions, '/opt/zino')).toEqual([]);
    expect(touches(actions, '/usr/local/bin/zino')).toEqual([]);
  });

  it('has nothing to do where nothing is installed', () => {
    expect(planUninstall({ layout: makeLayout(), purge: true }, fresh()).actions).toEqual([]);
  });
});
