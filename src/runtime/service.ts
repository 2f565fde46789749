/**
 * Running a service as a process: listen, log, handle signals.
 *
 * SIGTERM / SIGINT: stop accepting, let in-flight requests finish within
 * `[limits] shutdown_grace_ms`, remove the socket file, exit 0. SIGHUP calls the
 * service's `reload()` when it has one.
 */
import type { ResolvedConfig } from './config/schema.js';
import { castToError } from './errors.js';
import type { Logger } from './log.js';
import type { Handler, Handlers } from './transport/connection.js';
import { serve, type ZinoServer } from './transport/server.js';
import { closeKeptConnections } from './transport/client.js';
import { warmUpTransport } from './transport/warm-up.js';

/** What a service provides: its handlers and optional lifecycle hooks. */
export interface ServiceInstance {
  handlers: Handlers;
  /** Handles a request without `type` (the daemon's inbound message). */
  untyped?: Handler;
  /** Called on SIGHUP. */
  reload?(): Promise<void> | void;
  /** Called once the service listens: work that need not delay its first answer (rtr imports the openai SDK). */
  listening?(): void;
  /** Called when shutdown begins, before the server drains: ends requests that never end by themselves (sys's `watch`). */
  stopping?(): void;
  /** Called after the server has drained on shutdown. */
  close?(): Promise<void> | void;
}

/** Options of {@link runService}. */
export interface RunServiceOptions {
  socketPath: string;
  config: Readonly<ResolvedConfig>;
  log: Logger;
  instance: ServiceInstance;
  /** Ends the process after shutdown. @default process.exit */
  exit?: (code: number) => void;
}

/** Serves `instance` on `socketPath` and wires the process signals. */
export async function runService(options: RunServiceOptions): Promise<ZinoServer> {
  const { config, log, instance } = options;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  // Signals are wired before listening: a SIGTERM that arrives while the socket is being
  // set up (a client may already have been answered) must stop us cleanly, not kill us.
  let server: ZinoServer | undefined;
  let stopRequested: string | undefined;
  let stopping = false;
  const stop = (signal: string): void => {
    if (!server) {
      stopRequested ??= signal;
      return;
    }
    if (stopping) return;
    stopping = true;
    log.info({ signal, open: server.connectionCount }, 'shutting down');
    instance.stopping?.();
    server
      .close()
      .then(() => {
        // Our own kept connections to other services: closed now rather than at exit, so theirs end at once.
        closeKeptConnections();
        return instance.close?.();
      })
      .then(() => {
        log.info('stopped');
        exit(0);
      })
      .catch((err: unknown) => {
        log.error({ err: castToError(err) }, 'shutdown failed');
        exit(1);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGHUP', () => {
    if (!instance.reload) {
      log.info('SIGHUP ignored: nothing to reload');
      return;
    }
    Promise.resolve(instance.reload()).then(
      () => log.info('reloaded on SIGHUP'),
      (err: unknown) => log.error({ err: castToError(err) }, 'reload failed'),
    );
  });
  server = await serve(options.socketPath, {
    handlers: instance.handlers,
    untyped: instance.untyped,
    log,
    maxFrameBytes: config.limits.max_frame_bytes,
    requestReadTimeoutMs: config.limits.request_read_timeout_ms,
    shutdownGraceMs: config.limits.shutdown_grace_ms,
    maxConnections: config.limits.max_connections,
    maxReceiveBytes: config.limits.max_receive_bytes,
    keepAlive: config.limits.keep_alive_ms > 0,
  });
  log.info({ socket: options.socketPath }, 'listening');
  if (stopRequested) stop(stopRequested);
  else {
    instance.listening?.();
    // After listening, so that it never delays the first answer (ping included).
    void warmUpTransport(options.socketPath, { log, keepAliveMs: config.limits.keep_alive_ms, stopping: () => stopping });
  }
  return server;
}

/** Where a service's configuration came from. */
export interface ServiceContext {
  /** The most specific config file read (the local one, when there is one), or `null` when running on built-in defaults. */
  configFile: string | null;
  /** Every config file read, in order (`./ZINO.toml`, then the local `DIR/ZINO.toml`). */
  configFiles?: readonly string[];
}

/** A service module's default export: its name and how to build its handlers from the config. */
export interface ServiceDefinition {
  name: import('./config/schema.js').ServiceName;
  create(config: Readonly<ResolvedConfig>, log: Logger, context: ServiceContext): Promise<ServiceInstance> | ServiceInstance;
}
