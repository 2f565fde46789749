/**
 * `zino serve http`: the OpenAI-compatible HTTP front end. A client of the daemon
 * (and, for `zino-direct`, of rtr) like any other: it never holds the LLM's key and
 * never runs the agent itself. See docs/http.md.
 */
import { once } from 'node:events';
import { ZinoError, type Logger, type ResolvedConfig } from '../../runtime/index.js';
import { baseUrl, parseListen, type ListenAddress } from './listen.js';
import { createFrontEnd, type FrontEnd } from './server.js';
import { TokenCheck, loadToken } from './token.js';

/** A listening front end. */
export interface RunningHttp {
  readonly frontEnd: FrontEnd;
  /** Where it listens (the real port when the configured one was 0). */
  readonly address: ListenAddress;
  readonly url: string;
}

/**
 * Checks the configuration, reads (or creates) the token and listens. Throws a
 * `ZinoError`: CONFIG for a bad `[http]` section or token file, ADDRESS_IN_USE
 * when something else listens there.
 */
export async function startHttp(config: Readonly<ResolvedConfig>, log: Logger): Promise<RunningHttp> {
  const wanted = parseListen(config.http.listen, config.http.allow_non_loopback);
  const token = new TokenCheck(await loadToken(config.http.token_file, log));
  const frontEnd = createFrontEnd({ config, log, token, created: Math.floor(Date.now() / 1000) });
  const { server } = frontEnd;
  server.listen(wanted.port, wanted.host);
  try {
    await once(server, 'listening');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new ZinoError('ADDRESS_IN_USE', `[http] listen ${config.http.listen}: the address is already in use`);
    throw new ZinoError('CONFIG', `[http] listen ${config.http.listen}: cannot listen there (${code ?? (err as Error).message})`);
  }
  const bound = server.address();
  const address = typeof bound === 'object' && bound !== null ? { host: wanted.host, port: bound.port } : wanted;
  const url = baseUrl(address);
  log.info({ url, port: address.port, tokenFile: config.http.token_file, maxConcurrent: config.http.max_concurrent }, 'listening');
  return { frontEnd, address, url };
}

/**
 * Runs the front end until SIGTERM/SIGINT (then answers in progress get
 * `[limits] shutdown_grace_ms`, and the process exits 0). SIGHUP reads the token
 * file again, so a token can be replaced without a restart.
 */
export async function runHttp(
  config: Readonly<ResolvedConfig>,
  log: Logger,
  exit: (code: number) => void = (code) => process.exit(code),
): Promise<RunningHttp> {
  let stopRequested: NodeJS.Signals | undefined;
  let running: RunningHttp | undefined;
  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (!running) {
      stopRequested ??= signal;
      return;
    }
    if (stopping) return;
    stopping = true;
    log.info({ signal, inFlight: running.frontEnd.inFlight }, 'shutting down');
    running.frontEnd.close(config.limits.shutdown_grace_ms).then(
      () => {
        log.info('stopped');
        exit(0);
      },
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  running = await startHttp(config, log);
  const { token } = running.frontEnd;
  process.on('SIGHUP', () => {
    loadToken(config.http.token_file, log).then(
      (value) => {
        token.replace(value);
        log.info({ file: config.http.token_file }, 'token file read again on SIGHUP');
      },
      (err: unknown) => log.error({ reason: (err as Error).message }, 'token file not read on SIGHUP; the old token stays'),
    );
  });
  if (stopRequested) stop(stopRequested);
  return running;
}
