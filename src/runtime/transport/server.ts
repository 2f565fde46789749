/**
 * `serve(socketPath, options)`: the UDS server every service runs.
 *
 * Socket lifecycle (parent dir 0750, stale file removed, live server refused,
 * socket 0660), routing by `type` with a built-in ping, per-connection failure
 * isolation, and a graceful, bounded, idempotent `close()`.
 */
import { chmod, lstat } from 'node:fs/promises';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { ZinoError, errorFrame } from '../errors.js';
import { DEFAULT_MAX_FRAME_BYTES, encodeFrame } from '../frame/codec.js';
import type { Logger } from '../log.js';
import { Connection, type Handler, type Handlers } from './connection.js';
import { Deadlines } from './deadlines.js';
import { IdleCompactor, logCompaction, type IdleCompactorOptions } from './reclaim.js';
import { ReceiveBudget } from './receive-budget.js';
import { prepareSocketPath, removeSocketFile } from './socket-path.js';

/** Mode of a listening socket: owner and group may connect, others may not. */
export const SOCKET_MODE = 0o660;

/** Options of {@link serve}. */
export interface ServeOptions {
  handlers: Handlers;
  /** Handles a request without `type` (the daemon's inbound message). */
  untyped?: Handler | undefined;
  log: Logger;
  /** Largest frame accepted or sent, in bytes. @default 16 MiB */
  maxFrameBytes?: number | undefined;
  /** Time a client has to send its request, in milliseconds. @default 30000 */
  requestReadTimeoutMs?: number | undefined;
  /** Time in-flight requests get to finish on close, in milliseconds. @default 10000 */
  shutdownGraceMs?: number | undefined;
  /**
   * Connections served at once. A new one past it closes the oldest connection whose
   * request has not arrived (one that sent nothing first); when every connection is
   * being answered, it gets an OVERLOADED error frame. @default 1024
   */
  maxConnections?: number | undefined;
  /** Bytes of partly received requests held at once across connections (raised to maxFrameBytes). @default 64 MiB */
  maxReceiveBytes?: number | undefined;
  /**
   * Agrees to keep a connection open for the client's next request when it asks
   * (`"keep_alive": true`, pool.ts); a kept connection waits for it at most
   * `requestReadTimeoutMs`. @default true
   */
  keepAlive?: boolean | undefined;
  /** When the heap is compacted after a busy spell (reclaim.ts). @default 4 MiB or 25 % of growth, 5 s without connections */
  compaction?: Pick<IdleCompactorOptions, 'afterGrowthBytes' | 'afterGrowthRatio' | 'afterIdleMs'> | undefined;
}

/** A listening server. */
export interface ZinoServer {
  readonly socketPath: string;
  /** Open connections (waiting for a request or being answered). */
  readonly connectionCount: number;
  /** Bytes of partly received large requests counted against `maxReceiveBytes` now. */
  readonly receivingBytes: number;
  /**
   * Stops accepting, lets in-flight requests finish within the grace period,
   * cancels what is left, removes the socket file. Safe to call more than once.
   */
  close(): Promise<void>;
}

/** Listens on `socketPath` and serves `options.handlers` until `close()`. */
export async function serve(socketPath: string, options: ServeOptions): Promise<ZinoServer> {
  const { log } = options;
  await prepareSocketPath(socketPath, log);
  const connections = new Set<Connection>();
  let closing: Promise<void> | undefined;
  const receiveBudget = new ReceiveBudget(options.maxReceiveBytes ?? 64 * 1024 * 1024, options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES, (peak) =>
    log.info({ heldPeakBytes: peak }, 'memory of large requests reclaimed'),
  );
  const compactor = new IdleCompactor(
    Object.assign({}, options.compaction, {
      openConnections: () => connections.size,
      onCompact: logCompaction(log),
    }),
  );
  const connectionOptions = {
    handlers: options.handlers,
    untyped: options.untyped,
    log,
    maxFrameBytes: options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES,
    readDeadlines: new Deadlines(options.requestReadTimeoutMs ?? 30_000),
    receiveBudget,
    keepAlive: options.keepAlive ?? true,
    closing: () => closing !== undefined,
    onDone: (connection: Connection) => {
      connections.delete(connection);
      if (connections.size === 0 && !closing) compactor.idle();
    },
  };

  const maxConnections = options.maxConnections ?? 1024;
  const server = net.createServer({ allowHalfOpen: true }, (socket) => {
    if (closing) {
      socket.destroy();
      return;
    }
    if (connections.size >= maxConnections) {
      // A connection whose request has not arrived holds a slot for nobody: the oldest of them makes room (one that
      // has sent nothing first), so idle or trickling connections cannot crowd out ping or the suite's own callers.
      const victim = evictionCandidate(connections);
      if (victim) {
        connections.delete(victim);
        const silent = victim.silent;
        victim.evict();
        log.warn(
          { open: connections.size + 1, silent },
          silent
            ? 'connection limit reached: closed the oldest connection that had sent nothing'
            : 'connection limit reached: closed the oldest connection whose request had not arrived in full',
        );
      }
    }
    if (connections.size >= maxConnections) {
      log.warn({ open: connections.size }, 'connection refused: too many open connections');
      socket.on('error', () => undefined);
      socket.end(encodeFrame(errorFrame(new ZinoError('OVERLOADED', `too many connections (${maxConnections}); try again shortly`))));
      return;
    }
    connections.add(new Connection(socket, connectionOptions));
  });
  server.on('error', (err) => log.error({ err }, 'server error'));

  // A burst of up to max_connections clients waits in the accept queue (capped by the
  // kernel's somaxconn) rather than failing at once with EAGAIN, as it did with Node's 511.
  await listen(server, socketPath, Math.max(511, maxConnections));
  await chmod(socketPath, SOCKET_MODE);
  const inode = (await lstat(socketPath)).ino;
  log.debug({ socket: socketPath }, 'listening');

  const graceMs = options.shutdownGraceMs ?? 10_000;
  async function shutdown(): Promise<void> {
    server.close();
    receiveBudget.stop();
    compactor.stop();
    for (const connection of connections) if (connection.idle) connection.closeIdle();
    const drained = Promise.all([...connections].map((c) => c.done));
    const controller = new AbortController();
    const inTime = await Promise.race([drained.then(() => true), sleep(graceMs, false, { signal: controller.signal }).catch(() => false)]);
    controller.abort();
    if (!inTime) {
      log.warn({ open: connections.size, graceMs }, 'requests still running after the shutdown grace; cancelling them');
      for (const connection of connections) connection.abort(new ZinoError('SHUTTING_DOWN', 'the service is shutting down'));
      const settle = new AbortController();
      await Promise.race([Promise.all([...connections].map((c) => c.done)), sleep(1000, undefined, { signal: settle.signal }).catch(() => undefined)]);
      settle.abort();
      for (const connection of connections) connection.destroy();
    }
    await removeSocketFile(socketPath, inode);
  }

  return {
    socketPath,
    get connectionCount() {
      return connections.size;
    },
    get receivingBytes() {
      return receiveBudget.heldBytes;
    },
    close() {
      closing ??= shutdown();
      return closing;
    },
  };
}

/**
 * The connection to close when the service is full: the oldest that has sent nothing,
 * else the oldest whose request has not arrived in full (a Set iterates in insertion
 * order). The oldest is the one nearest its `request_read_timeout_ms` anyway.
 */
function evictionCandidate(connections: ReadonlySet<Connection>): Connection | undefined {
  let oldestReading: Connection | undefined;
  for (const connection of connections) {
    if (connection.silent) return connection;
    if (!oldestReading && connection.idle) oldestReading = connection;
  }
  return oldestReading;
}

/** Binds with a umask that keeps the socket private from the first instant (chmod follows). */
function listen(server: net.Server, socketPath: string, backlog: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      reject(err.code === 'EADDRINUSE' ? new ZinoError('ADDRESS_IN_USE', `another server is already listening on ${socketPath}`) : err);
    };
    server.once('error', onError);
    const previous = process.umask(0o117);
    try {
      server.listen({ path: socketPath, backlog }, () => {
        server.off('error', onError);
        resolve();
      });
    } finally {
      process.umask(previous);
    }
  });
}
