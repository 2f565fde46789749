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

/** The reply to all three. */
export interface SystemPromptReply {
  type: 'system_prompt';
  content: string;
}

/** zino-sys's messages. */
export const SYS = {
  get: message<GetRequest, SystemPromptReply>('get', { system_prompt: true }),
  reload: message<ReloadRequest, SystemPromptReply>('reload', { system_prompt: true }),
  set_soft_memory: message<SetSoftMemoryRequest, SystemPromptReply>('set_soft_memory', { system_prompt: true }),
} as const;
