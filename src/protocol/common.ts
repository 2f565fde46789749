/** What every service answers, whatever its own messages: `ping`. */
import { message } from '../runtime/index.js';

/** `{"type":"ping"}`: a liveness check every service answers without doing any work. */
export interface PingRequest {
  type: 'ping';
  request_id?: string | undefined;
}

/** `{"type":"pong"}`. */
export interface PongReply {
  type: 'pong';
}

/** The messages every service answers (the runtime's server handles them itself). */
export const COMMON = {
  ping: message<PingRequest, PongReply>('ping', { pong: true }),
} as const;
