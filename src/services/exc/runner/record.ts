/**
 * The runner's check of a host run against the audit log: it runs a program only
 * when exc has recorded, before handing it over, the `decision` that allowed it.
 *
 * Why this is sound: the audit log is written only by exc (0600, owned by exc's
 * user; under systemd /var/log/zino is writable by zino-exc alone, every other unit
 * has ProtectSystem=strict and no LogsDirectory=), and exc appends and fsyncs the
 * decision before it connects to the runner. So a run reaches a program only when
 * exc, the one process that decides host runs, has said on disk that this program
 * (by its SHA-256) may run on the host, under this id. The runner reads the file
 * itself (it runs as root): nothing a caller sends can stand in for the record.
 * Each id runs at most once: the runner keeps the ids it ran, and refuses an id the
 * log already holds a `run` line for (exc writes one when the run ends), which holds
 * across a runner restart; and only while the decision is fresh.
 */
import { open } from 'node:fs/promises';

/** Bytes read from the end of the log (and of the rotated one) to find a decision: exc wrote it just before asking. */
export const RECORD_TAIL_BYTES = 4 * 1024 * 1024;

/** How old a decision may be when its run reaches the runner, in milliseconds. */
export const RECORD_MAX_AGE_MS = 5 * 60_000;

/** What the runner was asked to run. */
export interface RunClaim {
  /** The decision's id. */
  id: string;
  executor: string;
  /** SHA-256 of the code the runner received (computed by the runner, not taken from the caller). */
  sha256: string;
}

/** Where to look, and when "now" is (tests set it). */
export interface RecordOptions {
  auditFile: string;
  now?: number | undefined;
  tailBytes?: number | undefined;
  maxAgeMs?: number | undefined;
}

/** Resolves with undefined when the audit log allows `claim`, or with why it does not. */
export async function checkRecord(claim: RunClaim, options: RecordOptions): Promise<string | undefined> {
  const tail = options.tailBytes ?? RECORD_TAIL_BYTES;
  let records: Record<string, unknown>[];
  try {
    // The rotated file first: a rotation may fall between a decision and its run.
    const previous = await linesWithId(`${options.auditFile}.1`, claim.id, tail).catch(() => []);
    records = [...previous, ...(await linesWithId(options.auditFile, claim.id, tail))];
  } catch (err) {
    return `the audit log ${options.auditFile} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`;
  }
  const lines = records.filter((r) => r.event === 'decision');
  if (lines.length === 0) return `the audit log holds no decision with id ${JSON.stringify(claim.id)}`;
  if (records.some((r) => r.event === 'run')) return `the decision ${claim.id} was already used: the audit log holds its run`;
  // Any refusal under this id wins (an id is never reused by exc).
  for (const line of lines) {
    if (line.decision !== 'allow') return `the recorded decision ${claim.id} refused the run (${String(line.how)})`;
    if (line.where !== 'host') return `the recorded decision ${claim.id} is not for a host run`;
    if (line.code_sha256 !== claim.sha256) return `the recorded decision ${claim.id} is for other code (SHA-256 differs)`;
    if (line.executor !== claim.executor)
      return `the recorded decision ${claim.id} is for executor ${JSON.stringify(line.executor)}, not ${JSON.stringify(claim.executor)}`;
    const time = typeof line.time === 'string' ? Date.parse(line.time) : Number.NaN;
    const age = (options.now ?? Date.now()) - time;
    if (!Number.isFinite(age) || age > (options.maxAgeMs ?? RECORD_MAX_AGE_MS) || age < -60_000)
      return `the recorded decision ${claim.id} is not fresh (recorded ${String(line.time)})`;
  }
  return undefined;
}

/** The `decision` and `run` lines with `id` among the last `tail` bytes of `file` (rejects when the file cannot be read). */
async function linesWithId(file: string, id: string, tail: number): Promise<Record<string, unknown>[]> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    const start = Math.max(0, size - tail);
    const buffer = Buffer.alloc(size - start);
    let read = 0;
    while (read < buffer.length) {
      const { bytesRead } = await handle.read(buffer, read, buffer.length - read, start + read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    let text = buffer.subarray(0, read).toString('utf8');
    // A tail that starts mid-line: drop the partial first line.
    if (start > 0) text = text.slice(text.indexOf('\n') + 1);
    const quoted = JSON.stringify(id);
    const out: Record<string, unknown>[] = [];
    for (const raw of text.split('\n')) {
      if (!raw.includes(quoted)) continue;
      let line: unknown;
      try {
        line = JSON.parse(raw);
      } catch {
        continue;
      }
      if (typeof line === 'object' && line !== null && !Array.isArray(line)) {
        const record = line as Record<string, unknown>;
        if (record.id === id && (record.event === 'decision' || record.event === 'run')) out.push(record);
      }
    }
    return out;
  } finally {
    await handle.close();
  }
}
