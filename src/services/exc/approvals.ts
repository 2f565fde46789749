/**
 * The pending approvals of one exc: a host run, or a call of an MCP tool, waiting
 * for a person. Each one is settled exactly once, by the first of: an answer
 * (`approve`), its timeout (a denial), or its request going away (cancelled,
 * nothing runs). Settled ids are
 * remembered for a while, so a late or second answer is told what happened instead
 * of "unknown".
 */
import { randomBytes } from 'node:crypto';
import { ZinoError, abortError, isAbortError, type Logger } from '../../runtime/index.js';
import { LISTED_CODE_CHARS, type ApprovalRequired, type McpCallAsked, type PendingApproval } from '../../protocol/exc.js';

/** What a run (or an MCP call) waiting for approval is. */
export interface ApprovalAsk {
  /** The executor, or an MCP tool's function name. */
  executor: string;
  /** The program, or an MCP call's arguments as indented JSON. */
  code: string;
  reason: string;
  requestId: string;
  channelId?: string | undefined;
  noSandbox: boolean;
  /** Set for a call of an MCP tool. */
  mcp?: McpCallAsked | undefined;
}

/** How an approval ended for the run that waited. */
export type ApprovalOutcome =
  { decision: 'allow'; how: 'approved'; id: string; note?: string } | { decision: 'deny'; how: 'denied' | 'timeout'; id: string; note?: string };

/** How an approval ended, for a late answer's error. */
type Settlement = 'allowed' | 'denied' | 'expired' | 'cancelled';

interface Pending {
  ask: ApprovalAsk;
  id: string;
  askedAt: number;
  expiresAt: number;
  settle(outcome: ApprovalOutcome | 'cancelled'): void;
}

/** Options of {@link ApprovalBook}. */
export interface ApprovalBookOptions {
  /** How long a person has, in ms. */
  timeoutMs: number;
  /** How many settled ids to remember. @default 10000 */
  remember?: number;
  /** The clock. @default Date.now */
  now?: () => number;
}

/** The pending approvals, by id. */
export class ApprovalBook {
  private readonly pending = new Map<string, Pending>();
  /** Settled ids, oldest first (a Map keeps insertion order). */
  private readonly settled = new Map<string, Settlement>();
  private readonly remember: number;
  private readonly now: () => number;

  constructor(private readonly options: ApprovalBookOptions) {
    this.remember = options.remember ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  /** Number of approvals waiting. */
  get size(): number {
    return this.pending.size;
  }

  /**
   * Opens an approval: `frame` is what to send to the caller, `outcome` settles with
   * the answer or the timeout, and rejects (CANCELLED) when `signal` aborts first.
   * The approval exists (and can be answered) as soon as this returns.
   */
  open(ask: ApprovalAsk, signal: AbortSignal): { frame: ApprovalRequired; outcome: Promise<ApprovalOutcome> } {
    if (signal.aborted) throw abortError(signal, 'approval');
    const id = this.freshId();
    const askedAt = this.now();
    const expiresAt = askedAt + this.options.timeoutMs;
    let settle!: Pending['settle'];
    const outcome = new Promise<ApprovalOutcome>((resolve, reject) => {
      const timer = setTimeout(() => settle({ decision: 'deny', how: 'timeout', id }), this.options.timeoutMs);
      const onAbort = (): void => settle('cancelled');
      signal.addEventListener('abort', onAbort, { once: true });
      settle = (result) => {
        if (!this.pending.has(id)) return;
        this.pending.delete(id);
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.recordSettled(id, result === 'cancelled' ? 'cancelled' : result.how === 'approved' ? 'allowed' : result.how === 'timeout' ? 'expired' : 'denied');
        if (result === 'cancelled') reject(abortError(signal, 'approval'));
        else resolve(result);
      };
    });
    this.pending.set(id, { ask, id, askedAt, expiresAt, settle });
    const frame: ApprovalRequired = {
      type: 'approval_required',
      id,
      executor: ask.executor,
      code: ask.code,
      reason: ask.reason,
      expires_at: new Date(expiresAt).toISOString(),
      request_id: ask.requestId,
      ...(ask.noSandbox ? { no_sandbox: true } : {}),
      ...(ask.mcp ? { mcp: { server: ask.mcp.server, tool: ask.mcp.tool } } : {}),
    };
    return { frame, outcome };
  }

  /**
   * Answers approval `id`. Throws APPROVAL_UNKNOWN (no such approval, or long
   * forgotten), APPROVAL_EXPIRED (it timed out first) or APPROVAL_SETTLED (it was
   * already answered, or its request went away).
   */
  answer(id: string, decision: 'allow' | 'deny', note?: string): void {
    const entry = this.pending.get(id);
    if (!entry) throw this.missing(id);
    const withNote = note !== undefined && note !== '' ? { note } : {};
    entry.settle(decision === 'allow' ? { decision: 'allow', how: 'approved', id, ...withNote } : { decision: 'deny', how: 'denied', id, ...withNote });
  }

  /** The pending approvals, oldest first; each program cut at {@link LISTED_CODE_CHARS} characters. */
  list(): PendingApproval[] {
    return [...this.pending.values()].map((entry) => describe(entry, false));
  }

  /** The pending approval `id` with its whole program; throws as {@link answer} does when it is not pending. */
  get(id: string): PendingApproval {
    const entry = this.pending.get(id);
    if (!entry) throw this.missing(id);
    return describe(entry, true);
  }

  /** Why `id` is not pending. */
  private missing(id: string): ZinoError {
    const shown = JSON.stringify(id.slice(0, 64));
    const settled = this.settled.get(id);
    if (settled === undefined) return new ZinoError('APPROVAL_UNKNOWN', `no pending approval ${shown} (see "zino approvals")`);
    if (settled === 'expired') return new ZinoError('APPROVAL_EXPIRED', `approval ${shown} expired before it was answered; the run was denied`);
    const what = settled === 'cancelled' ? 'its request was cancelled; nothing ran' : `it was already ${settled}`;
    return new ZinoError('APPROVAL_SETTLED', `approval ${shown} is settled: ${what}`);
  }

  private recordSettled(id: string, how: Settlement): void {
    this.settled.set(id, how);
    while (this.settled.size > this.remember) {
      const oldest = this.settled.keys().next().value;
      if (oldest === undefined) break;
      this.settled.delete(oldest);
    }
  }

  /** Ten hex digits: easy to type, and not reused while the old one is remembered. */
  private freshId(): string {
    for (;;) {
      const id = randomBytes(5).toString('hex');
      if (!this.pending.has(id) && !this.settled.has(id)) return id;
    }
  }
}

function describe({ ask, id, askedAt, expiresAt }: Pending, whole: boolean): PendingApproval {
  const cut = !whole && ask.code.length > LISTED_CODE_CHARS;
  return {
    id,
    executor: ask.executor,
    code: cut ? ask.code.slice(0, LISTED_CODE_CHARS) : ask.code,
    code_bytes: Buffer.byteLength(ask.code, 'utf8'),
    ...(cut ? { code_truncated: true } : {}),
    reason: ask.reason,
    expires_at: new Date(expiresAt).toISOString(),
    asked_at: new Date(askedAt).toISOString(),
    request_id: ask.requestId,
    ...(ask.channelId === undefined ? {} : { channel_id: ask.channelId }),
    ...(ask.noSandbox ? { no_sandbox: true } : {}),
    ...(ask.mcp ? { mcp: { server: ask.mcp.server, tool: ask.mcp.tool } } : {}),
  };
}

/** The request an approval is asked on: how the frame goes up, and when it is gone. */
export interface AskingRequest {
  signal: AbortSignal;
  log: Logger;
  send(frame: ApprovalRequired): Promise<void>;
}

/**
 * Asks a person: opens the approval in `book`, sends its frame up the stream and
 * waits for the answer or the timeout. When the request goes away first,
 * `onCancelled` records it and the request's abort error (for the message `what`) is
 * thrown. `fields` go to the two log lines.
 */
export async function askPerson(
  book: ApprovalBook,
  ask: ApprovalAsk,
  request: AskingRequest,
  what: string,
  fields: Record<string, unknown>,
  onCancelled: (approvalId: string) => Promise<void>,
): Promise<ApprovalOutcome> {
  const { frame, outcome } = book.open(ask, request.signal);
  // Settled by the answer, the timeout or the caller leaving, whichever comes first; handled below either way.
  outcome.catch(() => undefined);
  request.log.info({ approval_id: frame.id, ...fields, expires_at: frame.expires_at, pending: book.size }, 'approval asked');
  try {
    await request.send(frame);
    const answer = await outcome;
    request.log.info({ approval_id: frame.id, decision: answer.decision, how: answer.how }, 'approval settled');
    return answer;
  } catch (err) {
    if (!request.signal.aborted && !isAbortError(err)) throw err;
    request.log.info({ approval_id: frame.id }, 'approval cancelled: the request went away');
    await onCancelled(frame.id);
    throw abortError(request.signal, what);
  }
}
