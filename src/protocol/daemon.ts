/** Wire types of zino-daemon, the front door. */
import type { DoneFrame as RtrDone, ResponseFrame as RtrResponse } from './rtr.js';

/** The inbound request of the contract: a message without `type`. */
export interface AskRequest {
  message: string;
  channel_id?: string;
  stream?: boolean;
  /** ZINO extra: pass agr's event frames through. */
  events?: boolean;
  request_id?: string;
}

/** The extras the daemon adds to its terminal frames. */
interface AnswerExtras {
  iterations?: number;
  /** "agr", or "rtr" when agr was unreachable. */
  via?: 'agr' | 'rtr';
}

/** A streamed piece of the answer (as rtr's). */
export type { ChunkFrame } from './rtr.js';

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
  socket: string;
}

/** `{"type":"status"}` reply (ZINO extra). */
export interface StatusReply {
  type: 'status';
  version: string;
  services: Record<string, ServiceStatus>;
  /** rtr's capabilities, when rtr answered. */
  rtr?: Record<string, unknown>;
}
