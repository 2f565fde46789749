/**
 * The life of a socket file: its parent directory is created 0750 when missing;
 * an existing file is only replaced when it is a socket nobody listens on.
 */
import { lstat, chmod, unlink } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { ZinoError } from '../errors.js';
import { isPathError, makeDirectory } from '../dirs.js';
import type { Logger } from '../log.js';

/** Linux `sun_path` holds 108 bytes including the terminating NUL. */
export const MAX_SOCKET_PATH_BYTES = 107;

/** Mode of a directory we create for sockets. */
export const SOCKET_DIR_MODE = 0o750;

/**
 * Makes `socketPath` ready to listen on. Throws ADDRESS_IN_USE when a process is
 * listening there (or the path is not a socket); removes a stale socket file.
 */
export async function prepareSocketPath(socketPath: string, log: Logger): Promise<void> {
  if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH_BYTES) {
    throw new ZinoError('CONFIG', `socket path is longer than ${MAX_SOCKET_PATH_BYTES} bytes: ${socketPath}`);
  }
  const dir = path.dirname(socketPath);
  let created: string | undefined;
  try {
    created = await makeDirectory(dir, SOCKET_DIR_MODE);
  } catch (err) {
    if (isPathError(err)) throw new ZinoError('CONFIG', `cannot create the directory of socket ${socketPath}: ${err.message}`);
    throw err;
  }
  // mkdir's mode is filtered by the umask; set it exactly on the directory we made.
  if (created !== undefined) await chmod(dir, SOCKET_DIR_MODE);

  let isSocket: boolean;
  try {
    isSocket = (await lstat(socketPath)).isSocket();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (!isSocket) throw new ZinoError('ADDRESS_IN_USE', `${socketPath} exists and is not a socket; refusing to replace it`);
  if (await isListening(socketPath)) {
    throw new ZinoError('ADDRESS_IN_USE', `another server is already listening on ${socketPath}`);
  }
  await unlink(socketPath).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
  log.warn({ socket: socketPath }, 'removed stale socket file');
}

/**
 * True when something accepts connections on `socketPath`. A process that accepts
 * but never answers ping still owns the path: we refuse rather than steal it.
 */
export function isListening(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.createConnection({ path: socketPath });
    const done = (listening: boolean): void => {
      socket.destroy();
      resolve(listening);
    };
    socket.once('connect', () => done(true));
    // ENOTDIR: a parent is a file, so nothing can listen there either.
    socket.once('error', (err: NodeJS.ErrnoException) => done(err.code !== 'ECONNREFUSED' && err.code !== 'ENOENT' && err.code !== 'ENOTDIR'));
  });
}

/** Removes the socket file if it is still the one we created (same inode). */
export async function removeSocketFile(socketPath: string, inode: number | undefined): Promise<void> {
  try {
    const stat = await lstat(socketPath);
    if (inode !== undefined && stat.ino !== inode) return;
    await unlink(socketPath);
  } catch {
    // Already gone: nothing to do.
  }
}

/**
 * Removes `socketPath` when it is a socket nobody listens on (left by a process
 * that was killed); never a live socket, never anything that is not a socket.
 * Returns whether it removed something.
 */
export async function removeStaleSocket(socketPath: string): Promise<boolean> {
  try {
    if (!(await lstat(socketPath)).isSocket() || (await isListening(socketPath))) return false;
    await unlink(socketPath);
    return true;
  } catch {
    return false;
  }
}
