/** Wire types of zino-rtr, the LLM router. */
import { message, type ChatMessage } from '../runtime/index.js';

/** `{"type":"infer"}`: one inference. */
export interface InferRequest {
  type: 'infer';
  messages: ChatMessage[];
  /** Sampling temperature (0–2). ZINO default when absent: `[agent] temperature`. */
  temperature: number;
  /** Nucleus sampling (0–1). ZINO default when absent: `[agent] top_p`. */
  top_p: number;
  /** Stream when true and `[rtr] streaming` allows it. ZINO default when absent: false. */
  stream: boolean;
  /** ZINO extra: cap on generated tokens, passed to the API. */
  max_tokens?: number | undefined;
  request_id?: string | undefined;
}

/** Token counts reported by the API (ZINO extra on `done` and `response`). */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
}

/** ZINO extra of `capabilities` with `probe: true`: the endpoint as it answered just now. */
export interface LlmProbe {
  /** True when the endpoint answered (its model list, or for the demo model, always). */
  reachable: boolean;
  /** The models the endpoint lists (when it lists them). */
  models?: string[];
  /** Why the endpoint could not be used, when it could not. */
  error?: string;
  /** The error's stable code (UPSTREAM_UNAVAILABLE, TIMEOUT, UPSTREAM_ERROR, NOT_CONFIGURED). */
  code?: string;
}

/** `{"type":"capabilities"}` reply: the contract's two fields plus ZINO extras. */
export interface RtrCapabilities {
  type: 'capabilities';
  streaming: boolean;
  /** The model in use: the configured one, or the one detected from the endpoint ("" while unknown). */
  model: string;
  /** ZINO extra (absent from a contract rtr): "openai" (any compatible API), "demo", or "none" (not configured). */
  backend?: 'openai' | 'demo' | 'none';
  /** ZINO extra (absent from a contract rtr): false when infer would answer NOT_CONFIGURED. */
  configured?: boolean;
  /** ZINO extra: `[api] base_url` as rtr uses it. */
  base_url?: string;
  /** ZINO extra: what is wrong with the configuration, when `configured` is false. */
  problem?: string;
  /** ZINO extra: where the API key comes from (`[api] key`, `[api] key_file …`, LLM_API_KEY, no key); never the key. */
  key_source?: string;
  /** ZINO extra, only when the request asked for `probe`: the endpoint checked now. */
  llm?: LlmProbe;
}

/** A streamed piece of the reply. */
export interface ChunkFrame {
  type: 'chunk';
  delta: string;
}

/** End of a streamed reply. */
export interface DoneFrame {
  type: 'done';
  full_text: string;
  usage?: Usage;
}

/** A collected reply. */
export interface ResponseFrame {
  type: 'response';
  content: string;
  usage?: Usage;
}

/** `{"type":"capabilities"}`. */
export interface RtrCapabilitiesRequest {
  type: 'capabilities';
  /** ZINO extra: also check the endpoint now (list its models) and report it under `llm`. */
  probe?: boolean | undefined;
  request_id?: string | undefined;
}

/** zino-rtr's messages. */
export const RTR = {
  // The contract's reply has no `type`; ZINO's rtr sends one.
  capabilities: message<RtrCapabilitiesRequest, RtrCapabilities>('capabilities', { capabilities: true }, { untypedReply: true }),
  infer: message<InferRequest, DoneFrame | ResponseFrame, ChunkFrame>('infer', { done: true, response: true }),
} as const;
