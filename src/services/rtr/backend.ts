/** What rtr needs from an LLM: a collected completion and a stream of deltas. */
import type { ChatMessage } from '../../runtime/index.js';
import type { Usage } from '../../protocol/rtr.js';

/** The parameters of one inference. */
export interface InferParams {
  messages: ChatMessage[];
  temperature: number;
  top_p: number;
  max_tokens?: number | undefined;
}

/** One event of a streamed completion. */
export type StreamEvent = { delta: string } | { usage: Usage };

/** What the endpoint said when it was checked: the models it lists. Failures are thrown as ZinoErrors. */
export interface BackendCheck {
  /** Undefined when the endpoint has no model list (it answered 404). */
  models: string[] | undefined;
}

/**
 * An LLM behind rtr: an OpenAI-compatible API or the built-in demo model. `signal`
 * ends a call: the caller went away, or the `[rtr] timeout` of the whole request
 * ran out (its reason is then the TIMEOUT error).
 */
export interface LlmBackend {
  readonly kind: 'openai' | 'demo';
  /** Model name as far as it is known (configured, or detected from the endpoint). */
  readonly model: string;
  complete(params: InferParams, signal: AbortSignal): Promise<{ content: string; usage?: Usage | undefined }>;
  stream(params: InferParams, signal: AbortSignal): AsyncIterable<StreamEvent>;
  /** Asks the endpoint for its models now (and re-detects the model in use when none is configured). */
  check(signal: AbortSignal): Promise<BackendCheck>;
}
