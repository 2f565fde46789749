/**
 * Running one process of the suite in the foreground, as `zino serve NAME` does: the
 * configuration, the logger, the process-wide handlers and the exit statuses around whatever
 * the process serves. Two entries use it:
 * - `serveCommand` (commands/serve.ts), the command line's `zino serve`, for every name
 *   (the seven services, `http`, `runner`);
 * - the bundle's one file per service (scripts/bundle.mjs), which `zino serve NAME` loads for
 *   the seven when it runs bundled, through {@link serveDefinition}.
 *
 * It imports nothing of the other services, of the command line or of the front ends, so that
 * a service's own file of the bundle holds only that service.
 */
import {
  ConfigError,
  castToError,
  createLogger,
  loadConfig,
  runService,
  ZinoError,
  type LoadedConfig,
  type Logger,
  type ResolvedConfig,
  type ServiceDefinition,
  type ServiceName,
} from '../runtime/index.js';
import { EXIT } from '../runtime/exit.js';
import type { ConfigOptions } from './config.js';

/** Options of the command line: `--config FILE`, `--dir DIR`. */
export type ServeOptions = ConfigOptions;

/**
 * Serves what `start` starts, as `name`, until SIGTERM/SIGINT. `start` resolves once the process
 * serves; `false` means it has nothing to do (it exits 0). Exits with 78 on a configuration
 * error, 1 when it cannot start.
 */
export async function runServe(
  name: string,
  options: ServeOptions,
  start: (config: Readonly<ResolvedConfig>, log: Logger, loaded: LoadedConfig) => Promise<boolean | void>,
): Promise<void> {
  // Before the configuration, the first log line and the service's create() (mem indexes its
  // memories): a stop asked for while the service starts is kept and delivered again once
  // runService has its handlers, instead of killing us mid-start with SIGTERM's default action.
  // (Only loading the code comes before this, and nothing is started or written while it loads.)
  let earlySignal: NodeJS.Signals | undefined;
  const early = (signal: NodeJS.Signals): void => {
    earlySignal ??= signal;
  };
  process.on('SIGTERM', early);
  process.on('SIGINT', early);
  let loaded;
  try {
    loaded = loadConfig({ path: options.config, dir: options.dir });
  } catch (err) {
    const log = createLogger(name);
    log.fatal({ code: 'CONFIG', reason: (err as Error).message }, 'invalid configuration');
    process.exit(err instanceof ConfigError ? EXIT.CONFIG : EXIT.FAILURE);
  }
  const { config } = loaded;
  const log = createLogger(name, { configLevel: config.logging.level });
  // Under `zino up` the supervisor has printed the warnings once; seven services repeating them is noise.
  const supervised = process.env.ZINO_SUPERVISED === '1';
  for (const warning of loaded.warnings) {
    if (supervised) log.debug({ warning }, 'configuration warning (printed by zino up)');
    else log.warn({ warning }, 'configuration warning');
  }
  log.info({ config: loaded.files.length > 0 ? loaded.files.join(' + ') : '(built-in defaults)' }, 'configuration loaded');

  // Handlers are isolated per connection; anything that escapes is a bug: log it and
  // exit non-zero so systemd (Restart=on-failure) or `zino up` restarts us.
  process.on('uncaughtException', (err) => {
    log.fatal({ err }, 'uncaught exception');
    process.exit(EXIT.FAILURE);
  });
  process.on('unhandledRejection', (reason) => {
    log.fatal({ err: castToError(reason) }, 'unhandled rejection');
    process.exit(EXIT.FAILURE);
  });

  try {
    if ((await start(config, log, loaded)) === false) process.exit(EXIT.OK);
    process.off('SIGTERM', early);
    process.off('SIGINT', early);
    if (earlySignal) process.kill(process.pid, earlySignal);
    // Under `zino up` our stdin is a pipe from the supervisor: its end means the supervisor is gone.
    if (supervised) {
      process.stdin.on('end', () => process.kill(process.pid, 'SIGTERM'));
      process.stdin.resume();
    }
  } catch (err) {
    const code = err instanceof ZinoError ? err.code : 'INTERNAL';
    log.fatal({ code, reason: castToError(err).message, err: err instanceof ZinoError ? undefined : castToError(err) }, 'cannot start');
    process.exit(code === 'CONFIG' ? EXIT.CONFIG : code === 'ADDRESS_IN_USE' ? EXIT.IN_USE : EXIT.FAILURE);
  }
}

/** Runs the service `name`, whose definition `load` gives, until SIGTERM/SIGINT (see {@link runServe}). */
export function serveDefinition(name: ServiceName, load: () => Promise<ServiceDefinition> | ServiceDefinition, options: ServeOptions): Promise<void> {
  return runServe(name, options, async (config, log, loaded) => {
    const definition = await load();
    const instance = await definition.create(config, log, { configFile: loaded.file, configFiles: loaded.files });
    await runService({ socketPath: config[name].socket, config, log, instance });
  });
}
