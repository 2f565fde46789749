/**
 * The models the endpoint serves. They are ways of reaching the one LLM ZINO is
 * configured with, not different LLMs:
 *
 * - `zino`: the agent, as `zino ask` answers: ZINO's system prompt, its memory, the
 *   tool loop (agr → exc), through the daemon. Only the answer text is sent.
 * - `zino-verbose`: the same, with tool calls and their results written into the
 *   answer as Markdown, for chat front ends that render it.
 * - `zino-direct`: the LLM through rtr, with the client's messages as they are: no
 *   system prompt of ZINO's, no memory, no tools.
 */

/** One model of `GET /v1/models`, in OpenAI's shape (`openai` package: `Model`). */
export interface ModelEntry {
  id: ModelId;
  object: 'model';
  created: number;
  owned_by: string;
}

/** The model names a request may use. */
export const MODEL_IDS = ['zino', 'zino-verbose', 'zino-direct'] as const;
/** One of {@link MODEL_IDS}. */
export type ModelId = (typeof MODEL_IDS)[number];

/** True when `value` names a model of this endpoint. */
export function isModelId(value: unknown): value is ModelId {
  return typeof value === 'string' && (MODEL_IDS as readonly string[]).includes(value);
}

/** Every model, `created` being when this endpoint started (seconds since the epoch). */
export function modelList(created: number): { object: 'list'; data: ModelEntry[] } {
  return { object: 'list', data: MODEL_IDS.map((id) => modelEntry(id, created)) };
}

/** One model. */
export function modelEntry(id: ModelId, created: number): ModelEntry {
  return { id, object: 'model', created, owned_by: 'zino' };
}
