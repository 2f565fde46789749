/**
 * What the unit templates promise, read from the files themselves: the
 * contract's ordering, restart policy, the one unit with network, the umask, the
 * writable places, and exc's room for bubblewrap.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { landlockKernelNote } from '../../src/deploy/install.js';
import { HTTP_UNIT, RUNNER_UNIT, SERVICE_UNITS } from '../../src/deploy/layout.js';
import { PACKAGE_ROOT } from '../../src/testing/paths.js';
import { serviceNodeFlags } from '../../src/runtime/node-flags.js';
import { last, parseUnit, words, type UnitSettings } from './helpers.js';

const units = new Map<string, UnitSettings>(
  [...SERVICE_UNITS, HTTP_UNIT, 'zino.target'].map((unit) => [unit, parseUnit(readFileSync(path.join(PACKAGE_ROOT, 'systemd', unit), 'utf8'))]),
);
function unit(name: string): UnitSettings {
  const settings = units.get(name);
  if (!settings) throw new Error(`no unit ${name}`);
  return settings;
}
const others = (name: string): string[] => SERVICE_UNITS.filter((u) => u !== name);

describe('unit templates', () => {
  it.each(SERVICE_UNITS)('%s runs zino serve as zino with the installed config, active once it answers ping', (name) => {
    const service = name.replace(/^zino-|\.service$/g, '');
    const u = unit(name);
    expect(last(u, 'ExecStart')).toBe(
      `@NODE@ ${serviceNodeFlags(service).join(' ')} @PREFIX@/dist/bundle/zino.js serve ${service} --config /etc/zino/ZINO.toml`,
    );
    expect(last(u, 'ExecStartPost')).toBe(`@NODE@ @PREFIX@/dist/src/deploy/wait-ready.js ${service} /etc/zino/ZINO.toml`);
    expect(last(u, 'User')).toBe('zino');
    expect(last(u, 'Group')).toBe('zino');
  });

  it.each([...SERVICE_UNITS, HTTP_UNIT])('%s runs node with the flags zino up gives its service, on the command line', (name) => {
    const service = name.replace(/^zino-|\.service$/g, '');
    const [node, ...rest] = (last(unit(name), 'ExecStart') ?? '').split(' ');
    expect(node).toBe('@NODE@');
    expect(rest.slice(0, rest.indexOf('@PREFIX@/dist/bundle/zino.js'))).toEqual(serviceNodeFlags(service));
    // NODE_OPTIONS cannot carry --initial-old-space-size: a unit that set the flags there would not start.
    expect(words(unit(name), 'Environment').filter((w) => w.startsWith('NODE_OPTIONS='))).toEqual([]);
  });

  it.each(SERVICE_UNITS)('%s is part of zino.target, restarts on failure but not on a config error', (name) => {
    const u = unit(name);
    expect(words(u, 'PartOf')).toContain('zino.target');
    expect(words(u, 'WantedBy')).toContain('zino.target');
    expect(last(u, 'Restart')).toBe('on-failure');
    expect(words(u, 'RestartPreventExitStatus')).toContain('78');
    expect(words(u, 'RestartPreventExitStatus')).toContain('73');
    // Above [limits] shutdown_grace_ms = 10 s.
    expect(Number(/^(\d+)s$/.exec(last(u, 'TimeoutStopSec') ?? '')?.[1])).toBeGreaterThan(10);
  });

  it.each(SERVICE_UNITS)('%s creates files with umask 0007 or stricter and keeps W^X off for the JIT', (name) => {
    const u = unit(name);
    expect(Number.parseInt(last(u, 'UMask') ?? '0', 8) & 0o007).toBe(0o007);
    expect(last(u, 'MemoryDenyWriteExecute') ?? 'no').toBe('no');
  });

  it.each(SERVICE_UNITS)('%s can write only to /run/zino (and mem to /var/lib/zino)', (name) => {
    const u = unit(name);
    expect(last(u, 'ProtectSystem')).toBe('strict');
    expect(last(u, 'ProtectHome')).toBe('yes');
    expect(last(u, 'PrivateTmp')).toBe('yes');
    expect(u.get('ReadWritePaths')).toBeUndefined();
    expect(last(u, 'RuntimeDirectory')).toBe('zino');
    expect(last(u, 'RuntimeDirectoryMode')).toBe('0750');
    expect(last(u, 'RuntimeDirectoryPreserve')).toBe('yes');
    expect(u.get('StateDirectory')).toEqual(name === 'zino-mem.service' ? ['zino'] : undefined);
  });

  it.each(SERVICE_UNITS)('%s may use Internet sockets only if it is rtr', (name) => {
    const u = unit(name);
    const families = words(u, 'RestrictAddressFamilies');
    expect(families).toContain('AF_UNIX');
    if (name === 'zino-rtr.service') {
      expect(families).toEqual(expect.arrayContaining(['AF_INET', 'AF_INET6']));
    } else {
      expect(families).not.toContain('AF_INET');
      expect(families).not.toContain('AF_INET6');
      // exc shares the host's network namespace so that its runs see the host's network (the landlock view).
      expect(last(u, 'PrivateNetwork')).toBe(name === 'zino-exc.service' ? undefined : 'yes');
      expect(last(u, 'IPAddressDeny')).toBe('any');
    }
  });

  it('lets exc create no namespace and mount nothing; the bubblewrap drop-in gives both back for older kernels', () => {
    const u = unit('zino-exc.service');
    expect(last(u, 'RestrictNamespaces')).toBe('yes');
    expect(words(u, 'SystemCallFilter')).not.toContain('@mount');
    expect(last(u, 'ProtectKernelTunables')).toBe('yes');
    const dropIn = parseUnit(readFileSync(path.join(PACKAGE_ROOT, 'systemd', 'zino-exc-bubblewrap.conf'), 'utf8'));
    // An empty assignment first: the unit's "yes" is reset, not merged.
    expect(dropIn.get('RestrictNamespaces')).toEqual(['', 'user mnt pid net ipc uts cgroup']);
    expect(words(dropIn, 'SystemCallFilter')).toEqual(['@mount']);
    expect(last(dropIn, 'ProtectKernelTunables')).toBe('no');
    expect(last(dropIn, 'ProtectKernelLogs')).toBe('no');
  });

  it('tells an operator installing on a kernel before 6.12 that exc has no sandbox there without the drop-in', () => {
    expect(landlockKernelNote('6.1.0-28-amd64')).toMatch(/older than Linux 6\.12.*zino-exc-bubblewrap\.conf/);
    expect(landlockKernelNote('5.15.0')).toMatch(/older than Linux 6\.12/);
    for (const newer of ['6.12.0', '6.18.44-fc-v657', '7.0.1']) expect(landlockKernelNote(newer)).toBeUndefined();
    expect(landlockKernelNote('unknown')).toBeUndefined();
  });

  it("lets exc's runs see the host as zino does: no user, network or /proc hiding, and the Landlock calls allowed", () => {
    const u = unit('zino-exc.service');
    for (const key of ['PrivateUsers', 'PrivateNetwork', 'ProtectProc']) expect(u.get(key), key).toBeUndefined();
    expect(words(u, 'SystemCallFilter')).toEqual(expect.arrayContaining(['landlock_create_ruleset', 'landlock_add_rule', 'landlock_restrict_self']));
    expect(words(u, 'RestrictAddressFamilies')).toEqual(['AF_UNIX', 'AF_NETLINK']);
  });

  it('gives the LLM key to rtr only and hides it from every other unit', () => {
    for (const name of SERVICE_UNITS) {
      const u = unit(name);
      if (name === 'zino-rtr.service') {
        expect(u.get('EnvironmentFile')).toEqual(['-/etc/zino/zino.env']);
      } else {
        expect(u.get('EnvironmentFile')).toBeUndefined();
        expect(words(u, 'InaccessiblePaths')).toContain('-/etc/zino/zino.env');
      }
      if (name !== 'zino-mem.service') expect(words(u, 'InaccessiblePaths')).toContain('-/var/lib/zino');
    }
  });

  it('orders the services as the contract implies', () => {
    const daemon = unit('zino-daemon.service');
    expect(words(daemon, 'Wants').sort()).toEqual(others('zino-daemon.service').sort());
    expect(words(daemon, 'Requires')).toEqual(['zino-rtr.service']);
    expect(words(daemon, 'After').sort()).toEqual(others('zino-daemon.service').sort());
    expect(words(unit('zino-ctx.service'), 'Wants')).toEqual(['zino-mem.service']);
    expect(words(unit('zino-ctx.service'), 'After')).toEqual(['zino-mem.service']);
    expect(words(unit('zino-agr.service'), 'Wants').sort()).toEqual(['zino-exc.service', 'zino-rtr.service']);
    expect(words(unit('zino-agr.service'), 'After').sort()).toEqual(['zino-exc.service', 'zino-rtr.service']);
    expect(words(unit('zino.target'), 'WantedBy')).toEqual(['multi-user.target']);
    expect(words(unit('zino.target'), 'Also').sort()).toEqual([...SERVICE_UNITS, RUNNER_UNIT].sort());
  });

  it('reloads with SIGHUP the services that reload (sys, agr, ctx)', () => {
    for (const name of SERVICE_UNITS) {
      const reload = last(unit(name), 'ExecReload');
      if (['zino-sys.service', 'zino-agr.service', 'zino-ctx.service'].includes(name)) expect(reload).toBe('/bin/kill -HUP $MAINPID');
      else expect(reload).toBeUndefined();
    }
  });

  it('lets no unit create namespaces or mount (the bubblewrap drop-in is not installed by default); only exc opens netlink sockets', () => {
    for (const name of SERVICE_UNITS) {
      const u = unit(name);
      expect(last(u, 'RestrictNamespaces')).toBe('yes');
      expect(words(u, 'SystemCallFilter')).not.toContain('@mount');
      // exc's runs read the network configuration (ip, ss) over netlink.
      if (name === 'zino-exc.service') expect(words(u, 'RestrictAddressFamilies')).toContain('AF_NETLINK');
      else expect(words(u, 'RestrictAddressFamilies')).not.toContain('AF_NETLINK');
    }
  });
});

describe('the HTTP front end unit (zino-http.service)', () => {
  const http = parseUnit(readFileSync(path.join(PACKAGE_ROOT, 'systemd', 'zino-http.service'), 'utf8'));

  it('runs zino serve http as zino, part of zino.target, after the daemon, restarting but not on a config error', () => {
    expect(last(http, 'ExecStart')).toBe(`@NODE@ ${serviceNodeFlags('http').join(' ')} @PREFIX@/dist/bundle/zino.js serve http --config /etc/zino/ZINO.toml`);
    expect(last(http, 'User')).toBe('zino');
    expect(last(http, 'Group')).toBe('zino');
    expect(words(http, 'PartOf')).toContain('zino.target');
    expect(words(http, 'WantedBy')).toContain('zino.target');
    expect(words(http, 'Wants')).toEqual(['zino-daemon.service']);
    expect(words(http, 'After')).toContain('zino-daemon.service');
    expect(last(http, 'Restart')).toBe('on-failure');
    expect(words(http, 'RestartPreventExitStatus').sort()).toEqual(['73', '78']);
    expect(last(http, 'ExecReload')).toBe('/bin/kill -HUP $MAINPID');
    // Not started by enabling the target: only `systemctl enable zino-http.service` (install-systemd, when enabled) does.
    expect(words(unit('zino.target'), 'Also')).not.toContain('zino-http.service');
  });

  it('is hardened like the services, writes only its token directory, and reaches only loopback', () => {
    for (const key of [
      'NoNewPrivileges',
      'ProtectHome',
      'PrivateTmp',
      'PrivateDevices',
      'PrivateUsers',
      'ProtectKernelTunables',
      'RestrictNamespaces',
      'LockPersonality',
    ]) {
      expect(last(http, key), key).toBe('yes');
    }
    expect(last(http, 'ProtectSystem')).toBe('strict');
    expect(last(http, 'CapabilityBoundingSet')).toBe('');
    expect(http.get('ReadWritePaths')).toBeUndefined();
    expect(last(http, 'StateDirectory')).toBe('zino-http');
    expect(last(http, 'StateDirectoryMode')).toBe('0750');
    expect(Number.parseInt(last(http, 'UMask') ?? '0', 8) & 0o027).toBe(0o027);
    expect(words(http, 'RestrictAddressFamilies').sort()).toEqual(['AF_INET', 'AF_INET6', 'AF_UNIX']);
    expect(last(http, 'IPAddressDeny')).toBe('any');
    expect(last(http, 'IPAddressAllow')).toBe('localhost');
    expect(http.get('EnvironmentFile')).toBeUndefined();
    expect(words(http, 'InaccessiblePaths')).toEqual(expect.arrayContaining(['-/etc/zino/zino.env', '-/var/lib/zino']));
  });
});

describe('the privileged runner unit (zino-runner.service)', () => {
  const runner = parseUnit(readFileSync(path.join(PACKAGE_ROOT, 'systemd', RUNNER_UNIT), 'utf8'));
  const sysusers = readFileSync(path.join(PACKAGE_ROOT, 'systemd', 'zino.sysusers'), 'utf8');

  it('runs zino serve runner as root, its socket directory and socket in group zino-runner only', () => {
    expect(last(runner, 'ExecStart')).toBe('@NODE@ @PREFIX@/dist/bundle/zino.js serve runner --config /etc/zino/ZINO.toml');
    expect(last(runner, 'User')).toBe('root');
    expect(last(runner, 'Group')).toBe('zino-runner');
    expect(last(runner, 'RuntimeDirectory')).toBe('zino-runner');
    expect(last(runner, 'RuntimeDirectoryMode')).toBe('0750');
    expect(last(runner, 'UMask')).toBe('0007');
    expect(words(runner, 'PartOf')).toContain('zino.target');
    expect(words(runner, 'RestartPreventExitStatus')).toContain('78');
  });

  it('gives the zino-runner group to zino-exc alone, and to no user', () => {
    for (const name of SERVICE_UNITS) {
      if (name === 'zino-exc.service') expect(words(unit(name), 'SupplementaryGroups')).toEqual(['zino-runner']);
      else expect(unit(name).get('SupplementaryGroups'), name).toBeUndefined();
    }
    expect(sysusers).toMatch(/^g zino-runner -$/m);
    expect(sysusers).not.toMatch(/^m .*zino-runner/m);
  });

  it('keeps the API key and the services data out of reach of host runs', () => {
    expect(runner.get('InaccessiblePaths')).toEqual(expect.arrayContaining(['-/etc/zino/zino.env', '-/var/lib/zino']));
  });
});
