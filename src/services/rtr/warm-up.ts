/**
 * A short self-exercise of rtr's streamed path through the openai SDK, run once rtr has
 * imported the SDK (main.ts). Without it the first request pays for V8 compiling the SDK's
 * request building, its server-sent-events parsing and the backend's stream: 13-19 ms of
 * rtr's CPU, on the path of a person's first question after a start (docs/benchmarks.md,
 * rounds 14 and 15). It talks to no one: the SDK is given a `fetch` that answers a canned
 * stream from inside the process, and it logs at debug only (`openai SDK warmed up`, or why
 * it could not be).
 */
import { castToError, type Logger } from '../../runtime/index.js';
import type { FetchFunction } from './http-fetch.js';
import { OpenAiBackend } from './openai-backend.js';

/** Streams gone through: enough for V8 to have compiled every function on the path once, and the hottest to baseline code. */
export const WARM_UP_ROUNDS = 4;

/** Deltas of the canned stream: about a short reply's. */
const DELTAS = 10;

/** A chat completion's stream as an OpenAI-compatible endpoint sends it: deltas, a finish, usage, `[DONE]`. */
function cannedStream(): string {
  const chunk = (choices: unknown[], usage: unknown = null): string =>
    `data: ${JSON.stringify({ id: 'warm-up', object: 'chat.completion.chunk', created: 0, model: 'warm-up', choices, usage })}\n\n`;
  let text = '';
  for (let i = 0; i < DELTAS; i++) text += chunk([{ index: 0, delta: { content: 'ok ' }, finish_reason: null }]);
  text += chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]);
  text += chunk([], { prompt_tokens: 1, completion_tokens: DELTAS, total_tokens: DELTAS + 1 });
  return `${text}data: [DONE]\n\n`;
}

/** Answers every call with the canned stream, as a `Response` like the one rtr's own `fetch` makes. */
const inProcess: FetchFunction = () => Promise.resolve(new Response(cannedStream(), { status: 200, headers: { 'content-type': 'text/event-stream' } }));

/** Streams a short reply through a backend of its own whose SDK client talks only to {@link inProcess}; never throws. */
export async function warmUp(log: Logger, rounds: number = WARM_UP_ROUNDS): Promise<{ rounds: number; deltas: number }> {
  const params = { messages: [{ role: 'user', content: 'warm-up' }], temperature: 0, top_p: 1 };
  let deltas = 0;
  const started = performance.now();
  try {
    const backend = new OpenAiBackend({
      baseUrl: 'http://warm-up.invalid/v1',
      apiKey: 'warm-up',
      model: 'warm-up',
      timeoutMs: 10_000,
      log,
      configFile: 'ZINO.toml',
      fetch: inProcess,
    });
    for (let i = 0; i < rounds; i++) {
      for await (const event of backend.stream(params, AbortSignal.timeout(10_000))) if ('delta' in event) deltas++;
    }
    log.debug({ rounds, deltas, ms: Math.round(performance.now() - started) }, 'openai SDK warmed up');
  } catch (err) {
    log.debug({ err: castToError(err) }, 'warm-up of the SDK failed (the first request compiles it instead)');
  }
  return { rounds, deltas };
}
