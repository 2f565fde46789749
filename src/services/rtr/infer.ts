/**
 * One `infer`: call the backend, retrying connection errors, 429 and 5xx before
 * the first token has been forwarded (never after an abort), and answer streamed
 * (`chunk`… `done`) or collected (`response`).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ZinoError, abortError, type HandlerContext } from '../../runtime/index.js';
import type { ChunkFrame, DoneFrame, ResponseFrame, Usage } from '../../protocol/rtr.js';
import type { InferParams, LlmBackend } from './backend.js';
import { toZinoError } from './api-errors.js';
import { classify, retryDelayMs } from './retry.js';

/** What an inference needs besides its parameters. */
export interface InferDeps {
  backend: LlmBackend;
  maxRetries: number;
  /** For error messages ("cannot reach the LLM API at …"). */
  baseUrl: string;
}

/** Streams the reply as `chunk` frames and returns the `done` frame. */
export async function inferStreamed(deps: InferDeps, params: InferParams, ctx: HandlerContext<ChunkFrame>): Promise<DoneFrame> {
  const started = performance.now();
  let firstTokenMs: number | undefined;
  let text = '';
  let usage: Usage | undefined;
  const attempts = await withRetries(
    deps,
    ctx,
    () => text !== '',
    async () => {
      for await (const event of deps.backend.stream(params, ctx.signal)) {
        if ('usage' in event) {
          usage = event.usage;
          continue;
        }
        firstTokenMs ??= performance.now() - started;
        text += event.delta;
        await ctx.send({ type: 'chunk', delta: event.delta });
      }
    },
  );
  ctx.log.info(
    { model: deps.backend.model, attempts, ttftMs: round(firstTokenMs), durationMs: round(performance.now() - started), chars: text.length, usage },
    'stream complete',
  );
  return usage ? { type: 'done', full_text: text, usage } : { type: 'done', full_text: text };
}

/** Returns the whole reply as one `response` frame. */
export async function inferCollected(deps: InferDeps, params: InferParams, ctx: HandlerContext<ChunkFrame>): Promise<ResponseFrame> {
  const started = performance.now();
  let result: { content: string; usage?: Usage | undefined } = { content: '' };
  const attempts = await withRetries(
    deps,
    ctx,
    () => false,
    async () => {
      result = await deps.backend.complete(params, ctx.signal);
    },
  );
  ctx.log.info(
    { model: deps.backend.model, attempts, durationMs: round(performance.now() - started), chars: result.content.length, usage: result.usage },
    'completion done',
  );
  return result.usage ? { type: 'response', content: result.content, usage: result.usage } : { type: 'response', content: result.content };
}

/**
 * Runs `attempt` until it succeeds, retrying what {@link classify} allows while
 * `forwarded()` is false. Returns the number of attempts made.
 */
async function withRetries(deps: InferDeps, ctx: HandlerContext<ChunkFrame>, forwarded: () => boolean, attempt: () => Promise<void>): Promise<number> {
  for (let n = 0; ; n++) {
    try {
      await attempt();
      return n + 1;
    } catch (err) {
      if (ctx.signal.aborted) throw abortError(ctx.signal, 'inference');
      if (err instanceof ZinoError) throw err;
      const decision = classify(err);
      if (forwarded()) {
        const base = toZinoError(err, deps.baseUrl, n + 1);
        throw new ZinoError(base.code, `the LLM stream broke after the reply had started: ${base.message}`, { cause: err });
      }
      if (!decision.retryable || n >= deps.maxRetries) throw toZinoError(err, deps.baseUrl, n + 1);
      const delayMs = retryDelayMs(n, decision);
      ctx.log.warn({ attempt: n + 1, reason: (err as Error).message, delayMs: Math.round(delayMs) }, 'LLM call failed; retrying');
      try {
        await sleep(delayMs, undefined, { signal: ctx.signal });
      } catch {
        throw abortError(ctx.signal, 'inference');
      }
    }
  }
}

function round(ms: number | undefined): number | undefined {
  return ms === undefined ? undefined : Math.round(ms * 10) / 10;
}
