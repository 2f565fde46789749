/** Loading the configuration for a client command; a bad config ends the command with its message. */
import path from 'node:path';
import { ConfigError, EXIT, SCHEMA, loadConfig, type LoadedConfig, type ResolvedConfig } from '../runtime/index.js';
import { checkoutHint } from './suite-dir.js';

/** `--config` and `--dir`, as every command that talks to the services takes them. */
export interface ConfigOptions {
  config?: string;
  dir?: string;
}

/** The configuration with the files it came from and its warnings, or exit 78 with the message. */
export function cliLoaded(options: ConfigOptions): LoadedConfig {
  try {
    return loadConfig({ path: options.config, dir: options.dir });
  } catch (err) {
    process.stderr.write(`zino: ${err instanceof ConfigError ? err.message : (err as Error).message}\n`);
    process.exit(EXIT.CONFIG);
  }
}

/** The configuration, or exit 78 with the message. */
export function cliConfig(options: ConfigOptions): Readonly<ResolvedConfig> {
  return cliLoaded(options).config;
}

/** Prints `message` to stderr and exits with `code`. */
export function fail(message: string, code: number = EXIT.FAILURE): never {
  process.stderr.write(`zino: ${message}\n`);
  process.exit(code);
}

/** The advice printed when the daemon (or, for `zino mem`, mem) cannot be reached. */
export function howToStart(socket: string, reason: string, service = 'the ZINO daemon'): string {
  // Only when the command looked where nothing was named (the system sockets): a suite named by --config or --dir is the one meant.
  const hint = path.dirname(socket) === path.dirname(SCHEMA.daemon.socket.default) ? checkoutHint() : undefined;
  return [
    `cannot reach ${service} at ${socket} (${reason}).`,
    ...(hint ? [hint] : []),
    'Start the suite with "zino up" (from a source checkout: "npm start"), or under systemd with',
    '"sudo systemctl start zino.target". If it runs with --dir DIR, pass the same --dir (or set ZINO_DIR).',
  ].join('\n');
}
