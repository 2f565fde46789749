/** Loading the configuration for a client command; a bad config ends the command with its message. */
import { ZinoClient } from '../client/index.js';
import { ConfigError, EXIT, loadConfig, type ResolvedConfig } from '../runtime/index.js';

/** `--config` and `--dir`, as every command that talks to the services takes them. */
export interface ConfigOptions {
  config?: string;
  dir?: string;
}

/** The configuration, or exit 78 with the message. */
export function cliConfig(options: ConfigOptions): Readonly<ResolvedConfig> {
  try {
    return loadConfig({ path: options.config, dir: options.dir }).config;
  } catch (err) {
    process.stderr.write(`zino: ${err instanceof ConfigError ? err.message : (err as Error).message}\n`);
    process.exit(EXIT.CONFIG);
  }
}

/** A client of the suite the options point at, or exit 78 with the config's message. */
export function cliClient(options: ConfigOptions): ZinoClient {
  return new ZinoClient({ config: cliConfig(options) });
}

/** Prints `message` to stderr and exits with `code`. */
export function fail(message: string, code: number = EXIT.FAILURE): never {
  process.stderr.write(`zino: ${message}\n`);
  process.exit(code);
}

/** The advice printed when the daemon cannot be reached. */
export function howToStart(socket: string, reason: string): string {
  return [
    `cannot reach the ZINO daemon at ${socket} (${reason}).`,
    'Start the suite with "zino up" (from a source checkout: "npm start"), or under systemd with',
    '"sudo systemctl start zino.target". If it runs with --dir DIR, pass the same --dir (or set ZINO_DIR).',
  ].join('\n');
}
