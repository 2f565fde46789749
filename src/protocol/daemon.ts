/** Wire types of zino-daemon, the front door. */
import { message, type ChatMessage } from '../runtime/index.js';
import type { AgrEvent } from './agr.js';
import type { ApprovalRequired, ApprovalsReply, ApprovalsRequest, ApproveReply, ApproveRequest } from './exc.js';
import type { ChunkFrame, DoneFrame as RtrDone, ResponseFrame as RtrResponse, RtrCapabilities } from './rtr.js';

/** The inbound request of the contract: a message without `type`. */
export interface AskRequest {
  message: string;
  channel_id?: string | undefined;
  stream?: boolean | undefined;
  /** ZINO extra: pass agr's event frames through. */
  events?: boolean | undefined;
  /**
   * ZINO extra: this client answers approvals. It may receive `approval_required`
   * frames mid-stream, to be answered with `approve` on a new connection. Without
   * it, a host run that needs a person gets `[approval] unattended`.
   */
  approvals?: boolean | undefined;
  /**
   * ZINO extra: the conversation before `message`, oldest first. ctx uses it as the
   * history instead of the channel's stored one; with a `channel_id` the exchange is
   * still stored there (and requests on it still run in order).
   */
  history?: ChatMessage[] | undefined;
  /** ZINO extra: sampling temperature (0–2) of this request instead of `[agent] temperature`. */
  temperature?: number | undefined;
  /** ZINO extra: nucleus sampling (0–1) of this request instead of `[agent] top_p`. */
  top_p?: number | undefined;
  request_id?: string | undefined;
}

/**
 * What an answer was made without, or how it was cut short (ZINO extra `degraded`):
 * - `max_iterations`: the loop stopped at `[agr] max_iterations` while the model still called tools;
 * - `tools`: agr could not be reached: rtr answered directly and no tool call was run;
 * - `system_prompt`: sys failed; `context`: ctx failed;
 * - `hard_memories`, `history`: mem could not supply them to ctx.
 */
export type Degradation = 'max_iterations' | 'tools' | 'system_prompt' | 'context' | 'hard_memories' | 'history';

/** The extras the daemon adds to its terminal frames. */
interface AnswerExtras {
  iterations?: number;
  /** "agr", or "rtr" when agr was unreachable. */
  via?: 'agr' | 'rtr';
  /** What the answer lacks (see {@link Degradation}); absent when nothing. */
  degraded?: Degradation[];
}

/** A streamed piece of the answer (as rtr's). */
export type { ChunkFrame } from './rtr.js';
/** Opt-in event frames, passed through from agr. */
export type { AgrEvent } from './agr.js';
/** Opt-in approval frames (`"approvals": true`), passed through from exc. */
export type { ApprovalRequired } from './exc.js';

/** End of a streamed answer: rtr's `done` plus the ZINO extras `iterations` and `via`. */
export interface DoneFrame extends RtrDone, AnswerExtras {}

/** A collected answer: rtr's `response` plus the extras of {@link DoneFrame}. */
export interface ResponseFrame extends RtrResponse, AnswerExtras {}

/** One service in `status`. */
export interface ServiceStatus {
  reachable: boolean;
  /** Round trip of a ping, in milliseconds. */
  latency_ms?: number;
  error?: string;
  /** ZINO extra: the system error behind `error` (ENOENT: no socket; ECONNREFUSED: nobody listening; EACCES). */
  errno?: string;
  socket: string;
}

/** `{"type":"status"}` reply (ZINO extra). */
export interface StatusReply {
  type: 'status';
  version: string;
  services: Record<string, ServiceStatus>;
  /** rtr's capabilities, when rtr answered. */
  rtr?: RtrCapabilities;
}

/**
 * The largest inbound `message` the daemon accepts: `[daemon] max_message_bytes`, and
 * at most a quarter of `[limits] max_frame_bytes` (with the context and the system
 * prompt, it must still fit in one frame). Clients check it before sending too.
 */
export function maxMessageBytes(config: { daemon: { max_message_bytes: number }; limits: { max_frame_bytes: number } }): number {
  return Math.min(config.daemon.max_message_bytes, Math.floor(config.limits.max_frame_bytes / 4));
}

/** The refusal of a message of `bytes` over {@link maxMessageBytes}: says the bound and where it comes from. */
export function messageTooLarge(bytes: number, bound: number): string {
  return `the message is ${bytes} bytes, over the bound of ${bound} bytes ([daemon] max_message_bytes, and at most a quarter of [limits] max_frame_bytes); it was not sent`;
}

/** `{"type":"status"}` (ZINO extra). */
export interface StatusRequest {
  type: 'status';
  request_id?: string | undefined;
}

/**
 * zino-daemon's messages. `ask` is the contract's inbound message: it has no `type`
 * on the wire. It streams `chunk` frames (and, when asked, agr's events) before
 * `done`, or answers one `response`.
 */
export const DAEMON = {
  ask: message<AskRequest, DoneFrame | ResponseFrame, ChunkFrame | AgrEvent | ApprovalRequired>(null, { done: true, response: true }),
  status: message<StatusRequest, StatusReply>('status', { status: true }),
  /** ZINO extra: answers a pending approval (passed on to exc). Anyone who can use the daemon socket may. */
  approve: message<ApproveRequest, ApproveReply>('approve', { ok: true }),
  /** ZINO extra: the pending approvals (from exc). */
  approvals: message<ApprovalsRequest, ApprovalsReply>('approvals', { approvals: true }),
} as const;
