/**
 * The audit log: one JSON object a line for every run and every host-run decision,
 * and for every call of an MCP tool and every decision on one,
 * appended (O_APPEND) to `[exc] audit_log`, 0600, and fsynced before `append`
 * resolves, so a decision is on disk before the run it allows starts. At
 * `[exc] audit_max_bytes` the file is renamed to `<file>.1` (replacing the previous
 * one) and a new one is started. Writes are serialised.
 *
 * A failed write does not take exc down: the file is reopened on the next append,
 * and the caller decides what a missing record means (exc refuses a host run whose
 * decision could not be recorded).
 */
import { createHash } from 'node:crypto';
import { mkdir, open, rename, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { utf8Boundary } from './capture.js';
import { castToError, type Logger } from '../../runtime/index.js';

/** Bytes of a program the log keeps (its full length and SHA-256 are always there). */
export const AUDIT_CODE_BYTES = 4096;

/** The word for how a run (or an MCP call) was allowed or refused. */
export type AuditHow =
  | 'sandboxed'
  | 'trusted'
  | 'read_only'
  | 'approved'
  | 'denied'
  | 'timeout'
  | 'cancelled'
  | 'policy:allow'
  | 'policy:deny'
  | 'unattended:allow'
  | 'unattended:deny'
  | `rule:${number}`;

/** What every line of the audit log has. */
interface AuditCommon {
  /** ISO 8601, UTC. */
  time: string;
  /** The run's id: a host run's `decision` and `run` lines share it (so do an MCP call's). */
  id: string;
  /** `decision`: a host run (or an MCP call needing approval) was allowed or refused, written before it runs; `run`: it finished. */
  event: 'decision' | 'run';
  request_id: string;
  channel_id?: string;
  decision: 'allow' | 'deny';
  how: AuditHow;
  /** The approval's id, when a person was asked. */
  approval_id?: string;
  /** The person's note. */
  note?: string;
  duration_ms?: number;
  /** Why a run that was allowed did not produce a result. */
  error?: string;
}

/** A line about a program (`execute`). */
export interface ProgramAuditRecord extends AuditCommon {
  executor: string;
  where: 'sandbox' | 'host';
  /** The model's reason for a host run. */
  reason?: string;
  /** The program, cut at {@link AUDIT_CODE_BYTES} bytes. */
  code: string;
  code_bytes: number;
  code_sha256: string;
  code_truncated?: boolean;
  /** The uid the program ran as (host runs). */
  uid?: number;
  exit_code?: number;
  timed_out?: boolean;
  /** stdout or stderr went over `[exc] max_output_bytes`. */
  truncated?: boolean;
  /** Bytes of stdout and stderr returned. */
  stdout_bytes?: number;
  stderr_bytes?: number;
}

/** A line about a call of an MCP tool (`call_tool`): it runs outside the sandbox, in the server. */
export interface McpAuditRecord extends AuditCommon {
  where: 'mcp';
  /** The `[mcp.servers.<server>]`. */
  server: string;
  /** The tool's name on the server. */
  tool: string;
  /** The arguments as JSON, cut at {@link AUDIT_CODE_BYTES} bytes. */
  arguments: string;
  arguments_bytes: number;
  arguments_sha256: string;
  arguments_truncated?: boolean;
  /** The tool reported a failure. */
  is_error?: boolean;
  /** The result went over `[exc] max_output_bytes`. */
  truncated?: boolean;
}

/** One line of the audit log. */
export type AuditRecord = ProgramAuditRecord | McpAuditRecord;

/** The code fields of a record: the program cut to {@link AUDIT_CODE_BYTES}, its full length and SHA-256. */
export function codeFields(code: string): Pick<ProgramAuditRecord, 'code' | 'code_bytes' | 'code_sha256' | 'code_truncated'> {
  const { text, bytes, sha256, truncated } = capped(code);
  return { code: text, code_bytes: bytes, code_sha256: sha256, ...(truncated ? { code_truncated: true } : {}) };
}

/** The argument fields of an MCP record: the arguments as JSON cut to {@link AUDIT_CODE_BYTES}, its full length and SHA-256. */
export function argumentFields(
  args: Record<string, unknown>,
): Pick<McpAuditRecord, 'arguments' | 'arguments_bytes' | 'arguments_sha256' | 'arguments_truncated'> {
  const { text, bytes, sha256, truncated } = capped(JSON.stringify(args));
  return { arguments: text, arguments_bytes: bytes, arguments_sha256: sha256, ...(truncated ? { arguments_truncated: true } : {}) };
}

function capped(whole: string): { text: string; bytes: number; sha256: string; truncated: boolean } {
  const bytes = Buffer.from(whole, 'utf8');
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  if (bytes.length <= AUDIT_CODE_BYTES) return { text: whole, bytes: bytes.length, sha256, truncated: false };
  const head = bytes.subarray(0, AUDIT_CODE_BYTES);
  return { text: head.subarray(0, utf8Boundary(head)).toString('utf8'), bytes: bytes.length, sha256, truncated: true };
}

/** The audit log file. */
export class AuditLog {
  private handle: FileHandle | undefined;
  private size = 0;
  private queue: Promise<void> = Promise.resolve();
  private lastError: string | undefined;

  constructor(
    /** Absolute path of the log. */
    readonly file: string,
    private readonly maxBytes: number,
  ) {}

  /** The rotated file. */
  get previous(): string {
    return `${this.file}.1`;
  }

  /** Why the last write failed, or undefined when it worked. */
  get problem(): string | undefined {
    return this.lastError;
  }

  /** Opens (creating) the file now, so that a problem shows at start; resolves with it, or undefined. */
  async probe(): Promise<string | undefined> {
    await this.serialised(() => this.ensureOpen()).catch(() => undefined);
    return this.lastError;
  }

  /** Appends `record` as one line and fsyncs; rejects when it could not be written. */
  append(record: AuditRecord): Promise<void> {
    const line = Buffer.from(`${JSON.stringify(record)}\n`, 'utf8');
    return this.serialised(async () => {
      const handle = await this.ensureOpen();
      try {
        if (this.size > 0 && this.size + line.length > this.maxBytes) {
          await this.rotate();
          return await this.write(await this.ensureOpen(), line);
        }
        await this.write(handle, line);
      } catch (err) {
        await this.drop(err);
        throw err;
      }
    });
  }

  /** Closes the file (pending writes finish first). */
  async close(): Promise<void> {
    await this.serialised(async () => {
      const handle = this.handle;
      this.handle = undefined;
      await handle?.close();
    }).catch(() => undefined);
  }

  private async write(handle: FileHandle, line: Buffer): Promise<void> {
    await handle.write(line);
    await handle.datasync();
    this.size += line.length;
    this.lastError = undefined;
  }

  private async ensureOpen(): Promise<FileHandle> {
    if (this.handle) return this.handle;
    try {
      await mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
      const handle = await open(this.file, 'a', 0o600);
      try {
        // An existing file keeps its mode on open: the log holds every program that ran.
        await handle.chmod(0o600);
        this.size = (await handle.stat()).size;
      } catch (err) {
        await handle.close().catch(() => undefined);
        throw err;
      }
      this.handle = handle;
      return handle;
    } catch (err) {
      this.lastError = `cannot open ${this.file}: ${describe(err)}`;
      throw err;
    }
  }

  /** `file` → `file.1` (replacing it), then a new file on the next open. */
  private async rotate(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close();
    await rename(this.file, this.previous);
    this.size = 0;
  }

  private async drop(err: unknown): Promise<void> {
    this.lastError = `cannot write ${this.file}: ${describe(err)}`;
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close().catch(() => undefined);
  }

  private serialised<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task);
    this.queue = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }
}

function describe(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return e.code ?? e.message ?? String(err);
}

/**
 * Appends `record` to `audit`; when it cannot be written, logs `problem` with the
 * record's id and `fields` instead. For records of what already happened (a run, a
 * refusal): a record that allows something is appended with {@link AuditLog.append}
 * itself, whose failure stops it.
 */
export async function recordOrLog(audit: AuditLog, log: Logger, record: AuditRecord, fields: Record<string, unknown>, problem: string): Promise<void> {
  try {
    await audit.append(record);
  } catch (err) {
    log.error({ err: castToError(err), id: record.id, how: record.how, ...fields }, problem);
  }
}
