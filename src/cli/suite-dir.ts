/**
 * Which suite a client command talks to when nothing says: with no `--config`,
 * no `--dir`, no `$ZINO_CONFIG`/`$ZINO_DIR`, and no socket set in `./ZINO.toml`,
 * the sockets would be the system ones under /run/zino. When `./.zino` (where
 * `npm start` runs the suite) holds a running daemon, that suite is meant: use it,
 * and say so, so that nobody wonders which suite answered.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { SCHEMA, isListening, loadConfig } from '../runtime/index.js';

/** The directory `npm start` runs the suite in, relative to the checkout. */
export const CHECKOUT_DIR = '.zino';

/** A suite found in `./.zino`: the `--dir` to use and what to tell the user. */
export interface FoundSuite {
  dir: string;
  notice: string;
}

/** What the detection looks at. */
export interface DetectOptions {
  config?: string | undefined;
  dir?: string | undefined;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

/** The suite in `./.zino` when it is running and nothing else was asked for; else undefined. */
export async function findCheckoutSuite(options: DetectOptions): Promise<FoundSuite | undefined> {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  if (options.config !== undefined || options.dir !== undefined || env.ZINO_CONFIG || env.ZINO_DIR) return undefined;
  if (!socketsAreDefault(env, cwd)) return undefined;
  const socket = path.join(cwd, CHECKOUT_DIR, 'run', 'daemon.sock');
  if (!existsSync(socket) || !(await isListening(socket))) return undefined;
  return {
    dir: CHECKOUT_DIR,
    notice: `zino: using the suite running in ./${CHECKOUT_DIR} (as with --dir ${CHECKOUT_DIR}; pass --dir or --config for another)`,
  };
}

/** True when `./ZINO.toml` (if any) leaves the daemon's socket at its default: it does not say where the suite is. */
function socketsAreDefault(env: NodeJS.ProcessEnv, cwd: string): boolean {
  try {
    return loadConfig({ env, cwd }).config.daemon.socket === SCHEMA.daemon.socket.default;
  } catch {
    // A broken ./ZINO.toml: the command will report it when it loads the configuration itself.
    return false;
  }
}

/** A hint for when the daemon cannot be reached: a `./.zino` that is not running. */
export function checkoutHint(cwd = process.cwd()): string | undefined {
  if (!existsSync(path.join(cwd, CHECKOUT_DIR))) return undefined;
  return `./${CHECKOUT_DIR} holds a suite that is not running: start it with "npm start" (or "zino up --dir ${CHECKOUT_DIR}").`;
}
