/**
 * `approve` and `approvals` on the daemon: the front door to exc's pending
 * approvals, for anyone who can use the daemon socket. Each answer arrives on a
 * connection of its own (the asking request's connection carries only its own
 * frames), is checked here, and is passed on to exc, which decides.
 */
import {
  Endpoint,
  InvalidRequestError,
  clientOptions,
  optionalString,
  requireString,
  type HandlerContext,
  type ResolvedConfig,
  type Unvalidated,
} from '../../runtime/index.js';
import { EXC, MAX_NOTE_CHARS, type ApprovalsReply, type ApprovalsRequest, type ApproveReply, type ApproveRequest } from '../../protocol/exc.js';

/** Longest approval id accepted; exc's are ten hex digits. */
const MAX_ID_CHARS = 64;

function exc(config: Readonly<ResolvedConfig>, ctx: HandlerContext): Endpoint<typeof EXC> {
  return new Endpoint(EXC, config.exc.socket, clientOptions(config, 'exc', { signal: ctx.signal, timeoutMs: config.daemon.dependency_timeout_ms }));
}

function checkId(id: string): void {
  if (id === '' || id.length > MAX_ID_CHARS)
    throw new InvalidRequestError(`field "id" must be an approval id (1 to ${MAX_ID_CHARS} characters), got ${id.length}`);
}

/** `{"type":"approve","id","decision","note"?}` → exc; `{"type":"ok"}` or exc's error (APPROVAL_UNKNOWN, _EXPIRED, _SETTLED). */
export async function approve(config: Readonly<ResolvedConfig>, req: Unvalidated<ApproveRequest>, ctx: HandlerContext): Promise<ApproveReply> {
  const id = requireString(req, 'id');
  checkId(id);
  const decision = requireString(req, 'decision');
  if (decision !== 'allow' && decision !== 'deny')
    throw new InvalidRequestError(`field "decision" must be "allow" or "deny", got ${JSON.stringify(decision.slice(0, 32))}`);
  const note = optionalString(req, 'note');
  if (note !== undefined && note.length > MAX_NOTE_CHARS)
    throw new InvalidRequestError(`field "note" must be at most ${MAX_NOTE_CHARS} characters, got ${note.length}`);
  await exc(config, ctx).request('approve', { id, decision, ...(note === undefined ? {} : { note }), request_id: ctx.requestId });
  ctx.log.info({ approval_id: id, decision }, 'approval answered');
  return { type: 'ok' };
}

/** `{"type":"approvals","id"?}` → exc's list. */
export async function approvals(config: Readonly<ResolvedConfig>, req: Unvalidated<ApprovalsRequest>, ctx: HandlerContext): Promise<ApprovalsReply> {
  const id = optionalString(req, 'id');
  if (id !== undefined) checkId(id);
  return exc(config, ctx).request('approvals', { request_id: ctx.requestId, ...(id === undefined ? {} : { id }) });
}
