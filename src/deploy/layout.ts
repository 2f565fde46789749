/**
 * Where a systemd installation of ZINO puts things. Every path is the path on
 * the target system; {@link Layout.at} maps it into the root being installed to
 * (`/` normally, a temp dir for tests and packaging).
 */
import path from 'node:path';
import { SERVICE_NAMES, type ServiceName } from '../runtime/index.js';

/** The system user and group the services run as. */
export const ZINO_USER = 'zino';
/** @see ZINO_USER */
export const ZINO_GROUP = 'zino';
/** The group that may connect to the privileged runner's socket: zino-exc's supplementary group, nobody else's. */
export const RUNNER_GROUP = 'zino-runner';

/** Install prefix used when `--prefix` is not given. */
export const DEFAULT_PREFIX = '/opt/zino';

/** Fixed paths on the target system. */
export const PATHS = {
  /** Configuration directory, 0750 root:zino. */
  configDir: '/etc/zino',
  /** The configuration every unit reads (0640 root:zino), written only when absent. */
  configFile: '/etc/zino/ZINO.toml',
  /** `LLM_API_KEY=…` for rtr (0640 root:zino), written only when absent. */
  envFile: '/etc/zino/zino.env',
  /** Locally installed units. */
  unitDir: '/etc/systemd/system',
  /** tmpfiles.d entry for the runtime directory. */
  tmpfilesFile: '/etc/tmpfiles.d/zino.conf',
  /** sysusers.d entry for the user and group. */
  sysusersFile: '/etc/sysusers.d/zino.conf',
  /** The `zino` command for every user. */
  wrapper: '/usr/local/bin/zino',
  /** The sockets' directory (RuntimeDirectory= and tmpfiles.d). */
  runtimeDir: '/run/zino',
  /** mem's data (StateDirectory=zino). Never touched by install; removed only by `--purge`. */
  stateDir: '/var/lib/zino',
  /** exc's audit log (LogsDirectory=zino of zino-exc: 0750 zino:zino). */
  auditLog: '/var/log/zino/audit.jsonl',
  /** The HTTP front end's token (StateDirectory=zino-http). Never touched by install; removed only by `--purge`. */
  httpStateDir: '/var/lib/zino-http',
  /** `[http] token_file` of the installation. */
  httpTokenFile: '/var/lib/zino-http/http.token',
} as const;

/** The target unit that groups the services. */
export const TARGET_UNIT = 'zino.target';

/** `zino-<name>.service` for every service, in the contract's order. */
export const SERVICE_UNITS: readonly string[] = SERVICE_NAMES.map((name: ServiceName) => `zino-${name}.service`);

/** exc's privileged runner of approved host runs; installed always, idle (inactive) while `[approval] host_user` is empty. */
export const RUNNER_UNIT = 'zino-runner.service';

/** Every unit file installed: the services, the runner, then the target. */
export const ALL_UNITS: readonly string[] = [...SERVICE_UNITS, RUNNER_UNIT, TARGET_UNIT];

/** The OpenAI-compatible HTTP front end: installed only when `[http] enabled = true`. */
export const HTTP_UNIT = 'zino-http.service';

/** Every unit an installation may have: {@link ALL_UNITS} and {@link HTTP_UNIT}. */
export const KNOWN_UNITS: readonly string[] = [...ALL_UNITS, HTTP_UNIT];

/** Name of the file, inside the prefix, that marks a directory as a ZINO installation. */
export const MANIFEST = '.zino-install.json';

/** Paths of one installation: a prefix inside a root. */
export interface Layout {
  /** The root installed into (`/` for a real installation). */
  readonly root: string;
  /** Absolute install prefix on the target system. */
  readonly prefix: string;
  /** True when `root` is `/`: commands (systemctl, systemd-sysusers…) may run. */
  readonly live: boolean;
  /** Maps a target-system path into the root. */
  readonly at: (targetPath: string) => string;
}

/**
 * Builds the layout for `root` (default `/`) and `prefix` (default
 * {@link DEFAULT_PREFIX}). Throws when the prefix is not an absolute path below `/`:
 * a relative one would be taken from the working directory, and removed by uninstall.
 */
export function makeLayout(options: { root?: string | undefined; prefix?: string | undefined } = {}): Layout {
  const root = path.resolve(options.root ?? '/');
  const prefix = path.normalize(options.prefix ?? DEFAULT_PREFIX).replace(/(.)\/+$/, '$1');
  if (!path.isAbsolute(prefix) || prefix === '/') throw new Error(`--prefix must be an absolute directory other than /, got "${options.prefix ?? ''}"`);
  return {
    root,
    prefix,
    live: root === '/',
    at: (targetPath) => (root === '/' ? targetPath : path.join(root, targetPath)),
  };
}

/** The unit file path of `unit` on the target system. */
export function unitPath(unit: string): string {
  return path.posix.join(PATHS.unitDir, unit);
}
