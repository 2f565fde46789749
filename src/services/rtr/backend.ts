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

/** An LLM behind rtr: an OpenAI-compatible API or the built-in demo model. */
export interface LlmBackend {
  readonly kind: 'openai' | 'demo';
  /** Model name as far as it is known (configured, or detected after the first call). */
  readonly model: string;
  complete(params: InferParams, signal: AbortSignal): Promise<{ content: string; usage?: Usage | undefined }>;
  stream(params: InferParams, signal: AbortSignal): AsyncIterable<StreamEvent>;
}
