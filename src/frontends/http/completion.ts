/**
 * Answering one chat completion: the answer's steps ({@link answerSteps}) through
 * {@link AnswerText}, out as server-sent `chat.completion.chunk` events ending in
 * `data: [DONE]`, or as one `chat.completion` object. Shapes are OpenAI's (the
 * `openai` package's `ChatCompletion` and `ChatCompletionChunk`; checked in
 * test/frontends/http-openai.test.ts).
 *
 * A streamed response starts (status 200, headers) with the first frame from
 * ZINO, so an error before that, the daemon unreachable for one, is still a proper
 * status; an error after it is an SSE event `{"error": {…}}`, which the `openai`
 * clients raise as an `APIError`.
 */
import { once } from 'node:events';
import type http from 'node:http';
import { randomBytes } from 'node:crypto';
import type { Logger, ResolvedConfig } from '../../runtime/index.js';
import type { Usage } from '../../protocol/rtr.js';
import { AnswerText } from './answer-text.js';
import type { ChatJob } from './chat-request.js';
import { fromZinoError, sendError, type HttpError } from './errors.js';
import { answerSteps } from './sources.js';

/** What one completion runs with. */
export interface CompletionContext {
  config: Readonly<ResolvedConfig>;
  log: Logger;
  requestId: string;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
}

/** OpenAI's usage block. */
interface UsageBlock {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

function usageBlock(usage: Usage | undefined): UsageBlock | undefined {
  return (
    usage && { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens, total_tokens: usage.prompt_tokens + usage.completion_tokens }
  );
}

/** Answers `job` on `res`. Never throws: every failure becomes a response (or the end of one). */
export async function complete(job: ChatJob, res: http.ServerResponse, ctx: CompletionContext): Promise<void> {
  const id = `chatcmpl-${randomBytes(12).toString('base64url')}`;
  const created = Math.floor(Date.now() / 1000);
  const out: AnswerOut = job.stream ? new StreamedAnswer(res, job, id, created) : new CollectedAnswer(res, job, id, created);
  const text = new AnswerText(job.model === 'zino-direct' ? 'raw' : job.verbose ? 'verbose' : 'plain');
  const started = performance.now();
  let firstTextMs: number | undefined;
  let usage: Usage | undefined;
  try {
    for await (const step of answerSteps(ctx.config, job, ctx)) {
      let piece = '';
      if (step.kind === 'text') piece = text.chunk(step.delta);
      else if (step.kind === 'event') piece = text.event(step.event);
      else usage = step.usage;
      out.start();
      if (piece !== '') {
        firstTextMs ??= performance.now() - started;
        await out.text(piece, ctx.signal);
      }
    }
    out.start();
    const rest = text.end();
    if (rest !== '') await out.text(rest, ctx.signal);
    await out.finish(usage, ctx.signal);
    ctx.log.info(
      { model: job.model, stream: job.stream, channel: job.channelId, ttftMs: round(firstTextMs), durationMs: round(performance.now() - started), usage },
      'chat completion answered',
    );
  } catch (err) {
    if (ctx.signal.aborted) {
      ctx.log.info({ model: job.model, durationMs: round(performance.now() - started) }, 'chat completion cancelled: the client went away');
      res.destroy();
      return;
    }
    const error = fromZinoError(err, job.model === 'zino-direct' ? 'rtr' : 'daemon');
    const level = error.status >= 500 ? 'warn' : 'info';
    ctx.log[level](
      { model: job.model, status: error.status, reason: (err as Error).message, err: error.status === 500 ? err : undefined },
      'chat completion failed',
    );
    out.fail(error);
  }
}

/** Where an answer goes: a stream of events, or one object. */
interface AnswerOut {
  /** Commits the response (a stream's status and headers), once; later calls do nothing. */
  start(): void;
  text(content: string, signal: AbortSignal): Promise<void>;
  finish(usage: Usage | undefined, signal: AbortSignal): Promise<void>;
  fail(error: HttpError): void;
}

function round(ms: number | undefined): number | undefined {
  return ms === undefined ? undefined : Math.round(ms * 10) / 10;
}

/** Writes `data`, waiting for the client to read when its buffer is full. */
async function write(res: http.ServerResponse, data: string, signal: AbortSignal): Promise<void> {
  if (!res.write(data)) await once(res, 'drain', { signal });
}

/** Server-sent events. */
class StreamedAnswer implements AnswerOut {
  private started = false;

  constructor(
    private readonly res: http.ServerResponse,
    private readonly job: ChatJob,
    private readonly id: string,
    private readonly created: number,
  ) {}

  /** Status, headers and the first chunk (the role), once. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      // Reverse proxies (nginx) would otherwise hold the stream back.
      'x-accel-buffering': 'no',
    });
    this.res.flushHeaders();
    this.res.write(this.event(this.chunk({ role: 'assistant', content: '' })));
  }

  async text(content: string, signal: AbortSignal): Promise<void> {
    await write(this.res, this.event(this.chunk({ content })), signal);
  }

  async finish(usage: Usage | undefined, signal: AbortSignal): Promise<void> {
    await write(this.res, this.event(this.chunk({}, 'stop')), signal);
    if (this.job.includeUsage) {
      const last = {
        id: this.id,
        object: 'chat.completion.chunk',
        created: this.created,
        model: this.job.model,
        choices: [],
        usage: usageBlock(usage) ?? null,
      };
      await write(this.res, this.event(last), signal);
    }
    this.res.end('data: [DONE]\n\n');
  }

  fail(error: HttpError): void {
    if (!this.started) {
      sendError(this.res, error);
      return;
    }
    // Headers are out: the error goes in the stream, and there is no [DONE].
    this.res.end(this.event(error.body()));
  }

  private chunk(delta: Record<string, string>, finish: 'stop' | null = null): object {
    return {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.job.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...(this.job.includeUsage ? { usage: null } : {}),
    };
  }

  private event(data: object): string {
    return `data: ${JSON.stringify(data)}\n\n`;
  }
}

/** One JSON object at the end. */
class CollectedAnswer implements AnswerOut {
  private content = '';

  constructor(
    private readonly res: http.ServerResponse,
    private readonly job: ChatJob,
    private readonly id: string,
    private readonly created: number,
  ) {}

  start(): void {
    // Nothing goes out before the whole answer is there.
  }

  text(content: string): Promise<void> {
    this.content += content;
    return Promise.resolve();
  }

  finish(usage: Usage | undefined): Promise<void> {
    const block = usageBlock(usage);
    const body = JSON.stringify({
      id: this.id,
      object: 'chat.completion',
      created: this.created,
      model: this.job.model,
      choices: [{ index: 0, message: { role: 'assistant', content: this.content, refusal: null }, logprobs: null, finish_reason: 'stop' }],
      ...(block ? { usage: block } : {}),
    });
    this.res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    this.res.end(body);
    return Promise.resolve();
  }

  fail(error: HttpError): void {
    sendError(this.res, error);
  }
}
