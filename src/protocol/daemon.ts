/** Wire types of zino-daemon, the front door. */
import type { Usage } from './rtr.js';

/** The inbound request of the contract: a message without `type`. */
export interface AskRequest {
  message: string;
  channel_id?: string;
  stream?: boolean;
  /** ZINO extra: pass agr's event frames through. */
  events?: boolean;
  request_id?: string;
}

/** A streamed piece of the answer. */
export interface ChunkFrame {
  type: 'chunk';
  delta: string;
}

/** End of a streamed answer. ZINO extras: `iterations`, `usage`, `via`. */
export interface DoneFrame {
  type: 'done';
  full_text: string;
  iterations?: number;
  usage?: Usage;
  /** "agr", or "rtr" when agr was unreachable. */
  via?: 'agr' | 'rtr';
}

/** A collected answer. ZINO extras as on {@link DoneFrame}. */
export interface ResponseFrame {
  type: 'response';
  content: string;
  iterations?: number;
  usage?: Usage;
  via?: 'agr' | 'rtr';
}

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
