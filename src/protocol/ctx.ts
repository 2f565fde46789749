/**
 * Wire types of zino-ctx (contract section "zino-ctx"): assembling the context
 * messages that go between the system prompt and the user message.
 */
import { message, type ChatMessage } from '../runtime/index.js';

/** `→ {"type":"build","channel_id"?,"user_message"}`. */
export interface BuildRequest {
  type: 'build';
  /** When given, the channel's recent history is included. */
  channel_id?: string | null | undefined;
  /** Query of the hard memory search. Required. */
  user_message: string;
  /**
   * ZINO extra: the conversation so far, oldest first, used as the history instead of
   * the channel's stored one (which is then not read). Trimmed like a stored history.
   */
  history?: ChatMessage[] | null | undefined;
  request_id?: string | undefined;
}

/**
 * `← {"type":"context","messages":[...]}`: skill examples, then hard memories
 * (best first), then history (oldest first). Parts that mem could not supply are
 * left out; this reply is never an error for a reason on mem's side.
 */
export interface ContextReply {
  type: 'context';
  messages: ChatMessage[];
  /** ZINO extra: the parts mem could not supply ("hard_memories", "history"); absent when none is missing. */
  missing?: ContextPart[];
  /**
   * ZINO extra: true when the request's `history` was taken as the history (trimmed like a
   * stored one); absent otherwise. A ctx written from the contract alone never says so, and
   * the daemon then adds the history itself rather than lose it.
   */
  history_taken?: true;
}

/** A part of the context that mem supplies and that may be missing. */
export type ContextPart = 'hard_memories' | 'history';

/** zino-ctx's messages. */
export const CTX = {
  build: message<BuildRequest, ContextReply>('build', { context: true }),
} as const;
