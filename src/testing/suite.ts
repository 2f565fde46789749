/**
 * Test and benchmark harness for real ZINO services: a config file in a temp
 * directory (sockets under DIR/run, data under DIR/data), and `zino serve <name>`
 * processes started from the compiled CLI and awaited by ping.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'smol-toml';
import { loadConfig, type ResolvedConfig, type ServiceName } from '../runtime/index.js';
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
  for (const name of ['daemon', 'rtr', 'agr', 'sys', 'exc', 'mem', 'ctx'] as const) {
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

/** Starts `zino serve <name> --config FILE` and waits until it answers ping. */
export async function startService(name: ServiceName, configFile: string, options: { env?: NodeJS.ProcessEnv } = {}): Promise<StartedService> {
  const { config } = loadConfig({ path: configFile, env: options.env ?? process.env });
  const socket = config[name].socket;
  const env = { ...process.env, ZINO_LOG_LEVEL: process.env.ZINO_LOG_LEVEL ?? 'debug', ...options.env };
  const proc = startProcess(CLI_PATH, ['serve', name, '--config', configFile], { env });
  try {
    await waitForPing(socket, { proc });
  } catch (err) {
    await proc.stop('SIGKILL');
    throw err;
  }
  return Object.assign(proc, { name, socket });
}
