/**
 * Test and benchmark harness for real ZINO services: a config file in a temp
 * directory (sockets under DIR/run, data under DIR/data), and `zino serve <name>`
 * processes started from the compiled CLI and awaited by ping.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'smol-toml';
import { SERVICE_NAMES, loadConfig, type ResolvedConfig, type ServiceName } from '../runtime/index.js';
import { serviceNodeFlags } from '../runtime/node-flags.js';
import { CLI_PATH, PACKAGE_ROOT } from './paths.js';
import { startProcess, waitForPing, type RunningProcess } from './process.js';

export { PACKAGE_ROOT } from './paths.js';

/** Config sections with some keys overridden. */
export type ConfigOverrides = { [S in keyof ResolvedConfig]?: { [K in keyof ResolvedConfig[S]]?: ResolvedConfig[S][K] } };

/**
 * Writes `DIR/ZINO.toml` for a test: sockets in `DIR/run`, mem data in `DIR/data/mem`,
 * the package's tools, skills and SYSTEM.md, fast shutdown, then `overrides` on top.
 * Returns the file path and the resolved config.
 */
export function writeTestConfig(dir: string, overrides: ConfigOverrides = {}): { file: string; config: Readonly<ResolvedConfig> } {
  const base: Record<string, Record<string, unknown>> = {
    tools: { dir: path.join(PACKAGE_ROOT, 'tools') },
    skills: { dir: path.join(PACKAGE_ROOT, 'skills') },
    sys: { template: path.join(PACKAGE_ROOT, 'SYSTEM.md') },
    mem: { data_dir: path.join(dir, 'data', 'mem') },
    limits: { shutdown_grace_ms: 3000 },
  };
  for (const name of SERVICE_NAMES) {
    base[name] = { ...base[name], socket: path.join(dir, 'run', `${name}.sock`) };
  }
  for (const [section, keys] of Object.entries(overrides)) base[section] = { ...base[section], ...(keys as Record<string, unknown>) };
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'ZINO.toml');
  writeFileSync(file, stringify(base));
  return { file, config: loadConfig({ path: file, env: {} }).config };
}

/** A started service. */
export interface StartedService extends RunningProcess {
  readonly name: ServiceName;
  readonly socket: string;
}

/**
 * Starts `zino serve <name> --config FILE` with the Node flags `zino up` and the systemd units
 * give that service (node-flags.ts), and waits until it answers ping: a test or a benchmark sees
 * the service's heap as it runs in production (docs/benchmarks.md, round 18).
 */
export async function startService(name: ServiceName, configFile: string, options: { env?: NodeJS.ProcessEnv } = {}): Promise<StartedService> {
  const { config } = loadConfig({ path: configFile, env: options.env ?? process.env });
  const socket = config[name].socket;
  const env = { ...process.env, ZINO_LOG_LEVEL: process.env.ZINO_LOG_LEVEL ?? 'debug', ...options.env };
  const proc = startProcess(CLI_PATH, ['serve', name, '--config', configFile], { env, nodeFlags: serviceNodeFlags(name) });
  try {
    await waitForPing(socket, { proc });
  } catch (err) {
    await proc.stop('SIGKILL');
    throw err;
  }
  return Object.assign(proc, { name, socket });
}

/** Several services started on one config. */
export interface ServiceGroup {
  readonly dir: string;
  readonly file: string;
  readonly config: Readonly<ResolvedConfig>;
  readonly services: Partial<Record<ServiceName, StartedService>>;
  /** The started service `name` (throws when it was not started). */
  get(name: ServiceName): StartedService;
  /** Stops every service (SIGTERM) and returns how each exited. */
  stop(): Promise<Record<string, { code: number | null; signal: NodeJS.Signals | null }>>;
}

/** Writes a test config in `dir` and starts `names` together, each awaited by ping. */
export async function startServices(
  names: readonly ServiceName[],
  dir: string,
  overrides: ConfigOverrides = {},
  options: { env?: NodeJS.ProcessEnv } = {},
): Promise<ServiceGroup> {
  const { file, config } = writeTestConfig(dir, overrides);
  const services: Partial<Record<ServiceName, StartedService>> = {};
  const results = await Promise.allSettled(
    names.map(async (name) => {
      services[name] = await startService(name, file, options);
    }),
  );
  const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) {
    await Promise.all(Object.values(services).map((s) => s?.stop('SIGKILL')));
    throw failure.reason;
  }
  return {
    dir,
    file,
    config,
    services,
    get(name) {
      const service = services[name];
      if (!service) throw new Error(`${name} was not started`);
      return service;
    },
    async stop() {
      const entries = await Promise.all(Object.entries(services).map(async ([name, s]) => [name, await s.stop()] as const));
      return Object.fromEntries(entries);
    },
  };
}
