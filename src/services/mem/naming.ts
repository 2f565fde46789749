/**
 * channel_id → file name, injectively and safely.
 *
 * Every UTF-8 byte outside `[a-z0-9_-]` becomes `%XX` (upper-case hex), so the
 * name holds only `[a-z0-9_%A-F-]`: no `/`, no `.`, hence no traversal, no hidden
 * file, never `.` or `..`. Upper-case letters are escaped too, so ids that differ
 * only in case stay distinct even on a case-insensitive file system (macOS, exFAT).
 * The escaping is prefix-free, hence injective: `a/b` → `a%2Fb`, `a_b` → `a_b`,
 * `a%2Fb` → `a%252%46b`.
 *
 * A name longer than {@link MAX_PLAIN_NAME} characters is cut to
 * {@link HASHED_PREFIX} characters (never inside an escape) and suffixed with `~`
 * and the SHA-256 of the id's bytes. `~` never appears in a plain name, so hashed
 * and plain names cannot meet; two hashed names meet only on a SHA-256 collision.
 * The longest name (with `.jsonl`) is 191 bytes, under every file system's 255.
 */
import { createHash } from 'node:crypto';
export { checkChannelId } from '../../protocol/mem.js';

/** Longest escaped name kept as is. */
export const MAX_PLAIN_NAME = 120;
/** Length of the escaped prefix kept before `~<sha256>` in a long name. */
export const HASHED_PREFIX = 120;

const HEX = '0123456789ABCDEF';

function keep(byte: number): boolean {
  return (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x30 && byte <= 0x39) || byte === 0x5f || byte === 0x2d;
}

/** The file name stem of a (checked) channel id; see the module comment. */
export function channelFileStem(id: string): string {
  const bytes = Buffer.from(id, 'utf8');
  let out = '';
  for (const b of bytes) out += keep(b) ? String.fromCharCode(b) : `%${HEX[b >> 4]}${HEX[b & 15]}`;
  if (out.length <= MAX_PLAIN_NAME) return out;
  let cut = HASHED_PREFIX;
  // Never cut inside an escape: '%' may sit at most two characters before the cut.
  const pct = out.lastIndexOf('%', cut - 1);
  if (pct >= 0 && pct > cut - 3) cut = pct;
  return `${out.slice(0, cut)}~${createHash('sha256').update(bytes).digest('hex')}`;
}

/** The history file name of a channel id: `<stem>.jsonl`. */
export function channelFileName(id: string): string {
  return `${channelFileStem(id)}.jsonl`;
}
