/** agr's view of rtr: an inference as a stream of text deltas and usage. */
import { RemoteError, type ChatMessage, type Endpoint } from '../../runtime/index.js';
import type { RTR, Usage } from '../../protocol/rtr.js';

/** How to reach rtr. */
export type RtrTarget = Endpoint<typeof RTR>;

/** Sampling parameters of the run. */
export interface Sampling {
  temperature: number;
  top_p: number;
}

/** One event from rtr. */
export type LlmEvent = { delta: string } | { usage: Usage };

/**
 * Asks rtr for a reply and yields it as deltas (one delta for a collected reply),
 * then its usage. An error frame throws {@link RemoteError}; closing early (break or
 * abort) closes the connection, which cancels the LLM request.
 */
export async function* infer(
  target: RtrTarget,
  messages: ChatMessage[],
  sampling: Sampling,
  options: { stream: boolean; signal: AbortSignal; requestId: string },
): AsyncGenerator<LlmEvent> {
  const frames = target.stream(
    'infer',
    { messages, temperature: sampling.temperature, top_p: sampling.top_p, stream: options.stream, request_id: options.requestId },
    { signal: options.signal, mergeChunks: true },
  );
  for await (const frame of frames) {
    if (frame.type === 'chunk' && typeof frame.delta === 'string') yield { delta: frame.delta };
    else if (frame.type === 'response' && typeof frame.content === 'string') {
      yield { delta: frame.content };
      const usage = usageOf(frame);
      if (usage) yield { usage };
    } else if (frame.type === 'done') {
      const usage = usageOf(frame);
      if (usage) yield { usage };
    } else if (frame.type === 'error') throw new RemoteError(frame);
  }
}

/** Collects a whole reply as text. */
export async function inferText(
  target: RtrTarget,
  messages: ChatMessage[],
  sampling: Sampling,
  options: { signal: AbortSignal; requestId: string; onUsage?: (u: Usage) => void },
): Promise<string> {
  let text = '';
  for await (const event of infer(target, messages, sampling, Object.assign({}, options, { stream: false }))) {
    if ('delta' in event) text += event.delta;
    else options.onUsage?.(event.usage);
  }
  return text;
}

/** The frame's usage when it has the right shape (a reply is another process's data). */
function usageOf(frame: { usage?: unknown }): Usage | undefined {
  const usage = frame.usage as Partial<Usage> | undefined;
  if (usage && typeof usage.prompt_tokens === 'number' && typeof usage.completion_tokens === 'number') {
    return { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens };
  }
  return undefined;
}
