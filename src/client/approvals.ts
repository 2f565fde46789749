/**
 * Answering host-run approvals from a client: an ask that opts in (`approvals`)
 * may receive `approval_required` frames; the answer goes to the daemon on a new
 * connection (`approve`), while the asking connection stays open and waits.
 */
import { ZinoError, castToError } from '../runtime/index.js';
import type { ApprovalRequired } from '../protocol/exc.js';

/** What an {@link ApprovalHandler} answers. */
export interface ApprovalAnswer {
  decision: 'allow' | 'deny';
  /** Told to the model with a denial, and kept in the audit log. */
  note?: string | undefined;
}

/**
 * Decides one approval: the program (`code`), its `executor`, the model's `reason`,
 * the deadline (`expires_at`). Returning `undefined` answers nothing: the approval
 * waits for someone else (`zino approve`) or its timeout.
 */
export type ApprovalHandler = (request: ApprovalRequired) => Promise<ApprovalAnswer | undefined> | ApprovalAnswer | undefined;

/** Options of an ask that answers approvals. */
export interface ApprovalOptions {
  /**
   * Answers approvals: sets `approvals` on the request and calls this for each
   * `approval_required` frame, then sends its answer on a new connection.
   */
  onApproval?: ApprovalHandler | undefined;
  /** Called when an answer could not be delivered (it expired, someone else answered first, the daemon went away). */
  onApprovalError?: ((error: ZinoError, request: ApprovalRequired) => void) | undefined;
}

/** Sends an answer: `approve(id, decision, note)`. */
export type SendAnswer = (id: string, answer: ApprovalAnswer) => Promise<void>;

/**
 * Passes `frames` through, answering each `approval_required` frame with the
 * handler (before yielding it) when there is one.
 */
export async function* answering<F extends { type: string }>(
  frames: AsyncIterable<F>,
  options: ApprovalOptions,
  send: SendAnswer,
): AsyncGenerator<F, void, undefined> {
  for await (const frame of frames) {
    if (options.onApproval && isApproval(frame)) await answerOne(frame, options, send);
    yield frame;
  }
}

/**
 * Asks the handler about `request` and delivers its answer. A handler that throws
 * answers nothing (the approval waits for someone else, or its timeout); that and a
 * failed delivery go to `onApprovalError`.
 */
export async function answerOne(request: ApprovalRequired, options: ApprovalOptions, send: SendAnswer): Promise<void> {
  try {
    const answer = await options.onApproval?.(request);
    if (answer) await send(request.id, answer);
  } catch (err) {
    const error = err instanceof ZinoError ? err : new ZinoError('INTERNAL', castToError(err).message);
    options.onApprovalError?.(error, request);
  }
}

/** True for an `approval_required` frame that carries an id (frames are another process's data). */
export function isApproval(frame: { type: string }): frame is ApprovalRequired {
  return frame.type === 'approval_required' && typeof (frame as { id?: unknown }).id === 'string';
}
