/**
 * The bearer token of the HTTP front end: read from `[http] token_file`, or created
 * there (0640, 32 random bytes) on first start; and checked in constant time.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod, open, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError, isPathError, makeDirectory, type Logger } from '../../runtime/index.js';

/** Shortest token accepted from a file the operator wrote. */
export const MIN_TOKEN_CHARS = 16;

/** A new token: `zino-` and 43 characters of base64url (256 random bits). */
export function newToken(): string {
  return `zino-${randomBytes(32).toString('base64url')}`;
}

/**
 * The token in `file`, creating the file (and its directory, 0750) with a new one
 * when it does not exist. Throws {@link ConfigError} when the file cannot be read or
 * written, or holds no usable token.
 */
export async function loadToken(file: string, log: Logger): Promise<string> {
  try {
    const created = await createTokenFile(file);
    if (created !== undefined) {
      log.info({ file }, 'created the HTTP token file');
      return created;
    }
    const mode = (await stat(file)).mode & 0o777;
    if ((mode & 0o007) !== 0) log.warn({ file, mode: `0${mode.toString(8)}` }, 'the HTTP token file is readable by every user: chmod 0640 it');
    const text = await readFile(file, 'utf8');
    const token = text.trim();
    if (token === '')
      throw new ConfigError(`[http] token_file ${file} is empty: delete it to get a new token, or write one (at least ${MIN_TOKEN_CHARS} characters)`);
    if (token.length < MIN_TOKEN_CHARS || /\s/.test(token)) {
      throw new ConfigError(`[http] token_file ${file}: the token must be one word of at least ${MIN_TOKEN_CHARS} characters`);
    }
    return token;
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    if (isPathError(err)) throw new ConfigError(`[http] token_file ${file}: cannot be used (${err.code ?? err.message})`);
    throw err;
  }
}

/** Writes a new token to `file` unless it exists; returns it, or `undefined` when the file was there. */
async function createTokenFile(file: string): Promise<string | undefined> {
  await makeDirectory(path.dirname(file), 0o750);
  let handle;
  try {
    handle = await open(file, 'wx', 0o640);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
    throw err;
  }
  const token = newToken();
  try {
    // The umask may have taken bits away; 0640 is what the documentation promises.
    await chmod(file, 0o640);
    await handle.writeFile(`${token}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  return token;
}

/** Checks `Authorization` headers against one token, in time independent of where they differ. */
export class TokenCheck {
  private digest: Buffer;

  constructor(token: string) {
    this.digest = sha256(token);
  }

  /** Checks against `token` from now on. */
  replace(token: string): void {
    this.digest = sha256(token);
  }

  /** True when `header` is `Bearer <token>` (the scheme in any case). */
  matches(header: string | undefined): boolean {
    if (header === undefined) return false;
    const match = /^Bearer +(\S+) *$/i.exec(header);
    // Digests of equal length: the comparison takes the same time whatever was sent.
    return timingSafeEqual(sha256(match?.[1] ?? ''), this.digest) && match !== null;
  }
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
