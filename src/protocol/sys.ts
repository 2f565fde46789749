/** Wire types of zino-sys, the system prompt service. */

/** `{"type":"get"}`: the current prompt. */
export interface GetRequest {
  type: 'get';
}

/** `{"type":"reload"}`: re-read tools, skills and the template, then answer the new prompt. */
export interface ReloadRequest {
  type: 'reload';
}

/** `{"type":"set_soft_memory","content"}`: replace the `%%SOFT_MEMORIES%%` value. */
export interface SetSoftMemoryRequest {
  type: 'set_soft_memory';
  content: string;
}

/** The reply to all three. */
export interface SystemPromptReply {
  type: 'system_prompt';
  content: string;
}
