/**
 * `zino serve <service>`: runs one service in the foreground. This is what
 * systemd runs; logs are JSON lines on stderr.
 */
import { ConfigError, SERVICE_NAMES, castToError, createLogger, loadConfig, runService, ZinoError } from '../../runtime/index.js';
import { isServiceName, loadServiceDefinition } from '../../services/index.js';
import type { ConfigOptions } from '../config.js';
import { EXIT } from '../../runtime/exit.js';

/** Runs `name` until SIGTERM/SIGINT. Exits with 78 on a configuration error, 1 when it cannot start. */
export async function serveCommand(name: string, options: ConfigOptions): Promise<void> {
  // Before anything else (before the first log line anyone may react to): a stop asked for
  // while the service starts (mem indexes its memories) is kept and delivered again once
  // runService has its handlers, instead of killing us mid-start with SIGTERM's default action.
  let earlySignal: NodeJS.Signals | undefined;
  const early = (signal: NodeJS.Signals): void => {
    earlySignal ??= signal;
  };
  process.on('SIGTERM', early);
  process.on('SIGINT', early);
  if (!isServiceName(name) && name !== 'http' && name !== 'runner') {
    process.stderr.write(`zino serve: unknown service "${name}" (one of: ${SERVICE_NAMES.join(', ')}, http, runner)\n`);
    process.exit(EXIT.USAGE);
  }
  const service = name;
  let loaded;
  try {
    loaded = loadConfig({ path: options.config, dir: options.dir });
  } catch (err) {
    const log = createLogger(service);
    log.fatal({ code: 'CONFIG', reason: (err as Error).message }, 'invalid configuration');
    process.exit(err instanceof ConfigError ? EXIT.CONFIG : EXIT.FAILURE);
  }
  const { config } = loaded;
  const log = createLogger(service, { configLevel: config.logging.level });
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
    if (service === 'http') {
      // The OpenAI-compatible front end: an HTTP server, a client of the daemon.
      const { runHttp } = await import('../../frontends/http/main.js');
      await runHttp(config, log);
    } else if (service === 'runner') {
      // exc's privileged runner of approved host runs (systemd's zino-runner.service).
      const { runRunner } = await import('../../services/exc/runner/main.js');
      // With no [approval] host_user there is nothing for it to do: exit 0 (the unit stays inactive, not failed).
      if (!(await runRunner(config, log))) process.exit(EXIT.OK);
    } else {
      const definition = await loadServiceDefinition(service);
      const instance = await definition.create(config, log, { configFile: loaded.file, configFiles: loaded.files });
      await runService({ socketPath: config[service].socket, config, log, instance });
    }
    process.off('SIGTERM', early);
    process.off('SIGINT', early);
    if (earlySignal) process.kill(process.pid, earlySignal);
    // Under `zino up` our stdin is a pipe from the supervisor: its end means the supervisor is gone.
    if (process.env.ZINO_SUPERVISED === '1') {
      process.stdin.on('end', () => process.kill(process.pid, 'SIGTERM'));
      process.stdin.resume();
    }
  } catch (err) {
    const code = err instanceof ZinoError ? err.code : 'INTERNAL';
    log.fatal({ code, reason: castToError(err).message, err: err instanceof ZinoError ? undefined : castToError(err) }, 'cannot start');
    process.exit(code === 'CONFIG' ? EXIT.CONFIG : code === 'ADDRESS_IN_USE' ? EXIT.IN_USE : EXIT.FAILURE);
  }
}
