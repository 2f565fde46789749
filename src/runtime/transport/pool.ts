/**
 * Kept connections between ZINO processes: an opt-in extension of "one request per
 * connection" (docs/protocol.md, "Kept connections").
 *
 * A client that asks (`"keep_alive": true` in its request) and whose service agrees (the
 * same field in the terminal frame) may send its next request on the same connection
 * instead of connecting again; a connect, an accept and a close per hop were about six
 * tenths of a bare relay chain's CPU (docs/benchmarks.md, round 15). A service written
 * from the contract alone never agrees, and its connections close after one request as
 * before.
 *
 * This is the client's side: the connections waiting for their next request, by socket
 * path. A connection waits at most {@link IdlePool.idleMs} and is closed by us, the side
 * that decides when to send, so closing one never races a request. What arrives on a
 * waiting connection (the service's `keep_alive_end`, its EOF, an error) drops it.
 * Waiting connections are unref'd: they never keep a process alive.
 */
import type net from 'node:net';

/** Connections kept waiting per socket path, at most; more are closed after their request. */
export const MAX_IDLE_PER_PATH = 8;

/** The member a kept connection's request asks with, and its terminal frame agrees with (added as the frame's last). */
export const KEEP_ALIVE_MEMBER = '"keep_alive":true';

/** The frame a service sends on a kept connection it closes before another request: that request, if one crossed it, was not read. */
export const KEEP_ALIVE_END = 'keep_alive_end';

interface Waiting {
  readonly socket: net.Socket;
  readonly since: number;
  readonly drop: () => void;
}

/** Connections waiting for their next request, by socket path. */
export class IdlePool {
  private readonly waiting = new Map<string, Waiting[]>();
  /** Sockets that served a request before the one they carry now. */
  private readonly reused = new WeakSet<net.Socket>();
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    /** How long a connection waits for its next request before it is closed, in milliseconds. */
    readonly idleMs: number,
  ) {}

  /** Connections waiting now, over every path. */
  get size(): number {
    let n = 0;
    for (const list of this.waiting.values()) n += list.length;
    return n;
  }

  /** The connection to `path` that waited least, taken out of the pool (ref'd, paused), or undefined. */
  take(path: string): net.Socket | undefined {
    const list = this.waiting.get(path);
    if (list === undefined) return undefined;
    for (let entry = list.pop(); entry !== undefined; entry = list.pop()) {
      const { socket } = entry;
      detach(entry);
      if (usable(socket)) {
        // Paused until its reader listens: a reply must not be emitted to nobody.
        socket.pause();
        socket.ref();
        this.reused.add(socket);
        return socket;
      }
      socket.destroy();
    }
    return undefined;
  }

  /** True when `socket` came out of the pool (it served a request before). */
  wasReused(socket: net.Socket): boolean {
    return this.reused.has(socket);
  }

  /** Keeps `socket` for the next request to `path`, or closes it when it cannot be kept. */
  give(path: string, socket: net.Socket): void {
    let list = this.waiting.get(path);
    if (!usable(socket) || (list !== undefined && list.length >= MAX_IDLE_PER_PATH) || this.idleMs <= 0) {
      socket.destroy();
      return;
    }
    if (list === undefined) {
      list = [];
      this.waiting.set(path, list);
    }
    const entries = list;
    const entry: Waiting = {
      socket,
      since: performance.now(),
      drop: () => {
        const at = entries.indexOf(entry);
        if (at >= 0) entries.splice(at, 1);
        detach(entry);
        socket.destroy();
      },
    };
    // Anything at all while it waits ends it: keep_alive_end, a stray frame, EOF, an error.
    socket.on('data', entry.drop);
    socket.on('end', entry.drop);
    socket.on('close', entry.drop);
    socket.on('error', entry.drop);
    socket.unref();
    socket.resume();
    entries.push(entry);
    if (this.sweeper === undefined) {
      this.sweeper = setInterval(() => this.sweep(), Math.max(this.idleMs / 2, 10));
      this.sweeper.unref();
    }
  }

  /** Closes every waiting connection (at shutdown, and in tests). */
  clear(): void {
    for (const list of this.waiting.values()) for (const entry of list.splice(0)) entry.drop();
    this.waiting.clear();
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  private sweep(): void {
    const oldest = performance.now() - this.idleMs;
    let left = 0;
    for (const [path, list] of this.waiting) {
      // Taken from the end, so the front holds the ones that waited longest.
      while (list.length > 0 && (list[0] as Waiting).since <= oldest) (list[0] as Waiting).drop();
      if (list.length === 0) this.waiting.delete(path);
      left += list.length;
    }
    if (left === 0) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }
}

function detach(entry: Waiting): void {
  const { socket, drop } = entry;
  socket.off('data', drop);
  socket.off('end', drop);
  socket.off('close', drop);
  socket.off('error', drop);
}

function usable(socket: net.Socket): boolean {
  return !socket.destroyed && socket.writable && socket.readable && !socket.readableEnded;
}
