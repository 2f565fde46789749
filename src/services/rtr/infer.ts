/**
 * One `infer`: call the backend, retrying connection errors, 429 and 5xx before
 * the first token has been forwarded (never after an abort), and answer streamed
 * (`chunk`… `done`) or collected (`response`).
 *
 * `[rtr] timeout` bounds the whole request: model detection, every attempt and the
 * waits between them. When it runs out the request ends with TIMEOUT saying how
 * many attempts were made, whatever phase it was in.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ZinoError, abortError, type HandlerContext } from '../../runtime/index.js';
import type { ChunkFrame, DoneFrame, ResponseFrame, Usage } from '../../protocol/rtr.js';
import type { InferParams, LlmBackend } from './backend.js';
import { toZinoError, type ErrorHints } from './api-errors.js';
import { deadline, type Deadline } from './deadline.js';
import { classify, retryDelayMs } from './retry.js';

/** What an inference needs besides its parameters. */
export interface InferDeps {
  backend: LlmBackend;
  maxRetries: number;
  /** `[rtr] timeout` in milliseconds: the bound on the whole request, retries included. */
  timeoutMs: number;
  /** For error messages ("cannot reach the LLM API at …", where the key came from). */
  hints: ErrorHints;
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
    async (signal) => {
      for await (const event of deps.backend.stream(params, signal)) {
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
    async (signal) => {
      result = await deps.backend.complete(params, signal);
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
 * `forwarded()` is false, all within one deadline. Returns the number of attempts made.
 */
async function withRetries(
  deps: InferDeps,
  ctx: HandlerContext<ChunkFrame>,
  forwarded: () => boolean,
  attempt: (signal: AbortSignal) => Promise<void>,
): Promise<number> {
  let n = 0;
  const seconds = deps.timeoutMs / 1000;
  const bound: Deadline = deadline(ctx.signal, deps.timeoutMs, () => timedOut(seconds, n + 1));
  try {
    for (; ; n++) {
      try {
        await attempt(bound.signal);
        return n + 1;
      } catch (err) {
        if (ctx.signal.aborted) throw abortError(ctx.signal, 'inference');
        if (bound.expired()) throw timedOut(seconds, n + 1, forwarded());
        if (err instanceof ZinoError) throw err;
        const decision = classify(err);
        if (forwarded()) {
          const base = toZinoError(err, deps.hints, n + 1);
          throw new ZinoError(base.code, `the LLM stream broke after the reply had started: ${base.message}`, { cause: err });
        }
        if (!decision.retryable || n >= deps.maxRetries) throw toZinoError(err, deps.hints, n + 1);
        const delayMs = retryDelayMs(n, decision);
        if (delayMs >= bound.remainingMs()) {
          // Waiting would use up the bound: say so now rather than sleep into a TIMEOUT.
          const base = toZinoError(err, deps.hints, n + 1);
          throw new ZinoError(base.code, `${base.message}; no time left within [rtr] timeout (${seconds} s) to try again`, { cause: err });
        }
        ctx.log.warn({ attempt: n + 1, reason: (err as Error).message, delayMs: Math.round(delayMs) }, 'LLM call failed; retrying');
        try {
          await sleep(delayMs, undefined, { signal: bound.signal });
        } catch {
          if (ctx.signal.aborted) throw abortError(ctx.signal, 'inference');
          throw timedOut(seconds, n + 1);
        }
      }
    }
  } finally {
    bound.clear();
  }
}

/** The TIMEOUT of `[rtr] timeout`, saying how far the request got. */
function timedOut(seconds: number, attempts: number, started = false): ZinoError {
  const tries = attempts > 1 ? ` (${attempts} attempts)` : '';
  const what = started ? 'finish its reply' : 'answer';
  return new ZinoError('TIMEOUT', `the LLM did not ${what} within ${seconds} s ([rtr] timeout, the bound on the whole request)${tries}`);
}

function round(ms: number | undefined): number | undefined {
  return ms === undefined ? undefined : Math.round(ms * 10) / 10;
}
