/**
 * The hard memory index snapshot, `hard_memories.index`: the search index and the
 * offset table as they were when the first `covers_bytes` bytes of
 * `hard_memories.jsonl` had been indexed, so that a start does not have to tokenise
 * everything again. It is a cache: the log stays the only truth, and a snapshot that
 * is missing, torn, corrupt or does not match the log is ignored (and removed) and the
 * index is rebuilt from the log.
 *
 * Layout (docs/storage.md): the 8 bytes `ZINO-HIX`, a 4-byte big-endian length and a
 * JSON header, zero bytes up to a multiple of 8, the sections in the header's order
 * (offsets and lengths as float64, document frequencies, posting ids and term counts
 * as uint32, all in the machine's byte order, which the header names; then the terms,
 * UTF-8, one per line), and the SHA-256 of everything before it.
 *
 * The header's `covers_sha256` is the SHA-256 of the log's first `covers_bytes` bytes:
 * a snapshot is used only when the log still starts with exactly those bytes.
 */
import { createHash } from 'node:crypto';
import { endianness } from 'node:os';
import type { IndexImage } from './tfidf.js';
import type { Slicer } from './slices.js';

/** File name of the snapshot inside `data_dir`. */
export const SNAPSHOT_FILE = 'hard_memories.index';

const MAGIC = Buffer.from('ZINO-HIX', 'latin1');
const FORMAT = 1;
const CHECKSUM_BYTES = 32;
/** Largest JSON header accepted (a real one is a few hundred bytes). */
const MAX_HEADER_BYTES = 64 * 1024;
/** Terms encoded between checks of the slice clock. */
const TERMS_PER_PIECE = 65536;
/** Bytes hashed between checks of the slice clock. */
const HASH_PIECE_BYTES = 4 * 1024 * 1024;

/** What a snapshot holds. */
export interface SnapshotData {
  /** Bytes of the log the snapshot was taken after (always the end of a line). */
  coversBytes: number;
  /** SHA-256 (hex) of those bytes of the log. */
  coversSha256: string;
  /** The next id to give out when the snapshot was taken. */
  nextId: number;
  /** Byte offset of each id's line, -1 for an id without an entry. */
  offsets: Float64Array;
  /** Length of each id's line without its newline, -1 for an id without an entry. */
  lengths: Float64Array;
  index: IndexImage;
}

/** A snapshot that cannot be used; `message` says why (for the log). */
export class SnapshotInvalid extends Error {}

interface Header {
  format: number;
  endian: string;
  covers_bytes: number;
  covers_sha256: string;
  next_id: number;
  ids: number;
  entries: number;
  terms: number;
  postings: number;
  terms_bytes: number;
}

const COUNTS = ['covers_bytes', 'next_id', 'ids', 'entries', 'terms', 'postings', 'terms_bytes'] as const;

function padTo8(n: number): number {
  return (8 - (n % 8)) % 8;
}

function bytesOf(array: Float64Array | Uint32Array): Buffer {
  return Buffer.from(array.buffer, array.byteOffset, array.byteLength);
}

/** Serialises a snapshot as the parts of one file (written one after another). */
export async function encodeSnapshot(data: SnapshotData, slicer: Slicer): Promise<Buffer[]> {
  const { index } = data;
  // Terms are runs of letters and digits, so a newline never occurs in one; the count check at load would fail otherwise.
  const terms: Buffer[] = [];
  let termsBytes = 0;
  for (let i = 0; i < index.terms.length; i += TERMS_PER_PIECE) {
    const more = i + TERMS_PER_PIECE < index.terms.length;
    const piece = Buffer.from(`${index.terms.slice(i, i + TERMS_PER_PIECE).join('\n')}${more ? '\n' : ''}`, 'utf8');
    terms.push(piece);
    termsBytes += piece.length;
    if (slicer.due) await slicer.pause();
  }
  const header: Header = {
    format: FORMAT,
    endian: endianness(),
    covers_bytes: data.coversBytes,
    covers_sha256: data.coversSha256,
    next_id: data.nextId,
    ids: data.offsets.length,
    entries: index.count,
    terms: index.terms.length,
    postings: index.docs.length,
    terms_bytes: termsBytes,
  };
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const length = Buffer.alloc(4);
  length.writeUInt32BE(json.length);
  const pad = Buffer.alloc(padTo8(MAGIC.length + 4 + json.length));
  const parts = [MAGIC, length, json, pad, bytesOf(data.offsets), bytesOf(data.lengths), bytesOf(index.dfs), bytesOf(index.docs), bytesOf(index.tfs), ...terms];
  const hash = createHash('sha256');
  for (const part of parts) await hashInPieces(hash, part, slicer);
  parts.push(hash.digest());
  return parts;
}

/** Parses and checks a snapshot file's bytes; throws {@link SnapshotInvalid} when it is torn, corrupt or of another format. */
export async function decodeSnapshot(bytes: Buffer, slicer: Slicer): Promise<SnapshotData> {
  if (bytes.length < MAGIC.length + 4 + CHECKSUM_BYTES || !bytes.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw new SnapshotInvalid('not a snapshot (no ZINO-HIX header)');
  }
  const headerBytes = bytes.readUInt32BE(MAGIC.length);
  if (headerBytes > MAX_HEADER_BYTES || MAGIC.length + 4 + headerBytes > bytes.length) throw new SnapshotInvalid('header length out of range');
  const header = parseHeader(bytes.subarray(MAGIC.length + 4, MAGIC.length + 4 + headerBytes));
  let pos = MAGIC.length + 4 + headerBytes;
  pos += padTo8(pos);
  const expected = pos + 16 * header.ids + 4 * header.terms + 8 * header.postings + header.terms_bytes + CHECKSUM_BYTES;
  if (bytes.length !== expected) throw new SnapshotInvalid(`${bytes.length} bytes where its header makes ${expected} (torn or cut)`);
  const hash = createHash('sha256');
  await hashInPieces(hash, bytes.subarray(0, bytes.length - CHECKSUM_BYTES), slicer);
  if (!hash.digest().equals(bytes.subarray(bytes.length - CHECKSUM_BYTES))) throw new SnapshotInvalid('checksum mismatch (corrupt)');

  const take = (n: number): Buffer => {
    const out = bytes.subarray(pos, pos + n);
    pos += n;
    return out;
  };
  // Copies into fresh arrays: the file's bytes need not be aligned for a typed-array view.
  const f64 = (n: number): Float64Array => {
    const out = new Float64Array(n);
    new Uint8Array(out.buffer).set(take(8 * n));
    return out;
  };
  const u32 = (n: number): Uint32Array => {
    const out = new Uint32Array(n);
    new Uint8Array(out.buffer).set(take(4 * n));
    return out;
  };
  const offsets = f64(header.ids);
  const lengths = f64(header.ids);
  const dfs = u32(header.terms);
  const docs = u32(header.postings);
  const tfs = u32(header.postings);
  const terms = await splitTerms(take(header.terms_bytes).toString('utf8'), header.terms, slicer);
  let sum = 0;
  for (const df of dfs) {
    if (df === 0) throw new SnapshotInvalid('a term without documents');
    sum += df;
  }
  if (sum !== header.postings) throw new SnapshotInvalid('document frequencies do not add up to the postings');
  return {
    coversBytes: header.covers_bytes,
    coversSha256: header.covers_sha256,
    nextId: header.next_id,
    offsets,
    lengths,
    index: { count: header.entries, terms, dfs, docs, tfs },
  };
}

function parseHeader(json: Buffer): Header {
  let value: unknown;
  try {
    value = JSON.parse(json.toString('utf8'));
  } catch {
    throw new SnapshotInvalid('header is not JSON');
  }
  if (value === null || typeof value !== 'object') throw new SnapshotInvalid('header is not an object');
  const header = value as Partial<Record<keyof Header, unknown>>;
  if (header.format !== FORMAT) throw new SnapshotInvalid(`format ${String(header.format)}, not ${FORMAT}`);
  if (header.endian !== endianness()) throw new SnapshotInvalid(`written on a ${String(header.endian)} machine, this one is ${endianness()}`);
  for (const key of COUNTS) {
    const n = header[key];
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw new SnapshotInvalid(`header field ${key} is not a count`);
  }
  if (typeof header.covers_sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(header.covers_sha256))
    throw new SnapshotInvalid('header field covers_sha256 is not a SHA-256');
  return header as Header;
}

/** The `count` newline-separated terms of `text`, split in slices (millions of terms took a third of a second in one go). */
async function splitTerms(text: string, count: number, slicer: Slicer): Promise<string[]> {
  const terms: string[] = [];
  let start = 0;
  for (let i = 0; i < count; i++) {
    const end = i === count - 1 ? text.length : text.indexOf('\n', start);
    if (end < 0) throw new SnapshotInvalid(`${i + 1} terms where its header says ${count}`);
    terms.push(text.slice(start, end));
    start = end + 1;
    if ((i & 4095) === 4095 && slicer.due) await slicer.pause();
  }
  if (count === 0 ? text.length > 0 : start !== text.length + 1) throw new SnapshotInvalid(`more terms than the ${count} its header says`);
  return terms;
}

/** Feeds `data` to `hash` a few MiB at a time, yielding between pieces when the slice is used up. */
export async function hashInPieces(hash: ReturnType<typeof createHash>, data: Buffer, slicer: Slicer): Promise<void> {
  for (let start = 0; start < data.length; start += HASH_PIECE_BYTES) {
    hash.update(data.subarray(start, start + HASH_PIECE_BYTES));
    if (slicer.due) await slicer.pause();
  }
}
