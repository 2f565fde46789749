/** The `approvals` reply: every pending approval (programs cut), or one whole, within the frame limit. */
import type { ApprovalsReply, PendingApproval } from '../../protocol/exc.js';
import type { ApprovalBook } from './approvals.js';

/**
 * The pending approvals, oldest first, as many as fit in half a frame (`omitted`
 * counts the rest); with `id`, that one with its whole program (or the error saying
 * why it is not pending).
 */
export function listApprovals(book: ApprovalBook, id: string | undefined, maxFrameBytes: number): ApprovalsReply {
  if (id !== undefined) return { type: 'approvals', pending: [book.get(id)] };
  const budget = Math.floor(maxFrameBytes / 2);
  const pending: PendingApproval[] = [];
  let used = 64;
  let omitted = 0;
  for (const entry of book.list()) {
    // JSON-escaped text may take up to 6 bytes a character; the exact size is cheap enough to measure.
    const size = Buffer.byteLength(JSON.stringify(entry), 'utf8') + 1;
    if (omitted > 0 || used + size > budget) {
      omitted++;
      continue;
    }
    used += size;
    pending.push(entry);
  }
  return omitted > 0 ? { type: 'approvals', pending, omitted } : { type: 'approvals', pending };
}
