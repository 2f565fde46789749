/** Wire types of zino-sys, the system prompt service. */
import { message } from '../runtime/index.js';

/** `{"type":"get"}`: the current prompt. */
export interface GetRequest {
  type: 'get';
  request_id?: string | undefined;
}

/** `{"type":"reload"}`: re-read tools, skills and the template, then answer the new prompt. */
export interface ReloadRequest {
  type: 'reload';
  request_id?: string | undefined;
}

/** `{"type":"set_soft_memory","content"}`: replace the `%%SOFT_MEMORIES%%` value. */
export interface SetSoftMemoryRequest {
  type: 'set_soft_memory';
  content: string;
  request_id?: string | undefined;
}

/**
 * `{"type":"watch"}` (ZINO extra, opt-in): the current prompt as a `system_prompt`
 * frame at once, then again each time it changes, until either side closes; sys ends
 * the stream with `{"type":"done"}` when it shuts down. The daemon keeps the prompt
 * this way instead of asking for it on every request.
 */
export interface WatchRequest {
  type: 'watch';
  request_id?: string | undefined;
}

/** The end of a `watch` stream (sys is shutting down). */
export interface WatchEnd {
  type: 'done';
}

/** The reply to `get`, `reload` and `set_soft_memory`, and each frame of `watch`. */
export interface SystemPromptReply {
  type: 'system_prompt';
  content: string;
}

/** zino-sys's messages. */
export const SYS = {
  get: message<GetRequest, SystemPromptReply>('get', { system_prompt: true }),
  reload: message<ReloadRequest, SystemPromptReply>('reload', { system_prompt: true }),
  set_soft_memory: message<SetSoftMemoryRequest, SystemPromptReply>('set_soft_memory', { system_prompt: true }),
  watch: message<WatchRequest, WatchEnd, SystemPromptReply>('watch', { done: true }),
} as const;
