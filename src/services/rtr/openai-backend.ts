/**
 * Any OpenAI-compatible chat completions API (OpenAI, OpenRouter, Ollama,
 * llama.cpp server, vLLM) through the official `openai` SDK. The SDK's own retries
 * are off: rtr retries itself (infer.ts), within one `[rtr] timeout` for the whole
 * request, which arrives here as the signal's TIMEOUT reason.
 *
 * Without a configured model, the endpoint's only model is used. It is detected
 * again when the endpoint's list changes: when a check (`zino status`, start-up)
 * sees another list, and when the endpoint answers 404 for the detected model
 * (the server now serves another one); the call is then made once more with it.
 */
import OpenAI, { APIError } from 'openai';
import { ZinoError, type Logger } from '../../runtime/index.js';
import type { Usage } from '../../protocol/rtr.js';
import type { BackendCheck, InferParams, LlmBackend, StreamEvent } from './backend.js';
import { untilAborted } from './deadline.js';
import { nodeFetch, type FetchFunction } from './http-fetch.js';

/** Bound on asking the endpoint for its models, in milliseconds (within the request's own bound). */
const LIST_TIMEOUT_MS = 30_000;

/** Settings of the backend. */
export interface OpenAiBackendOptions {
  baseUrl: string;
  apiKey: string;
  /** Configured model; empty means "ask the endpoint and use it when it serves exactly one". */
  model: string;
  /** `[rtr] timeout`: also the SDK's own per-request bound. */
  timeoutMs: number;
  log: Logger;
  /** The file a user sets `[service] model` in, for advice ("ZINO.toml" when unknown). */
  configFile: string;
  /** The SDK's `fetch`; rtr's own over `node:http` unless given (warm-up.ts gives one that answers in the process). */
  fetch?: FetchFunction | undefined;
}

/** The OpenAI-compatible backend. */
export class OpenAiBackend implements LlmBackend {
  readonly kind = 'openai' as const;
  private readonly client: OpenAI;
  private detected: Promise<string> | undefined;
  private resolvedModel: string;

  constructor(private readonly options: OpenAiBackendOptions) {
    // Node's HTTP client under the SDK instead of the global fetch: half of rtr's CPU per request was undici's (http-fetch.ts).
    this.client = new OpenAI({
      baseURL: options.baseUrl,
      apiKey: options.apiKey,
      maxRetries: 0,
      timeout: options.timeoutMs,
      fetch: options.fetch ?? nodeFetch(),
    });
    this.resolvedModel = options.model;
  }

  get model(): string {
    return this.resolvedModel;
  }

  async complete(params: InferParams, signal: AbortSignal): Promise<{ content: string; usage?: Usage | undefined }> {
    return this.withModel(signal, async (model) => {
      const completion = await this.client.chat.completions.create({ model, ...body(params), stream: false }, { signal });
      return { content: completion.choices[0]?.message?.content ?? '', usage: usageOf(completion.usage) };
    });
  }

  async *stream(params: InferParams, signal: AbortSignal): AsyncIterable<StreamEvent> {
    const stream = await this.withModel(signal, (model) =>
      this.client.chat.completions.create({ model, ...body(params), stream: true, stream_options: { include_usage: true } }, { signal }),
    );
    let finished = false;
    try {
      for await (const chunk of stream) {
        const choice = chunk.choices[0];
        if (choice?.finish_reason) finished = true;
        const delta = choice?.delta?.content;
        if (delta) yield { delta };
        const usage = usageOf(chunk.usage);
        if (usage) yield { usage };
      }
      // The SDK's stream ends quietly when aborted (by the caller, or [rtr] timeout), and so does a body cut short cleanly.
      signal.throwIfAborted();
      if (!finished) throw new ZinoError('UPSTREAM_ERROR', 'the LLM stream ended before the reply was finished (no finish_reason)');
    } catch (err) {
      throw reasonOf(signal) ?? err;
    }
  }

  async check(signal: AbortSignal): Promise<BackendCheck> {
    let ids: string[] | undefined;
    try {
      ids = await this.listModels(signal);
    } catch (err) {
      throw reasonOf(signal) ?? err;
    }
    if (this.options.model === '' && ids !== undefined) {
      const only = ids.length === 1 ? ids[0] : undefined;
      if (only !== undefined && only !== this.resolvedModel) this.adopt(only);
      else if (only === undefined && this.resolvedModel !== '') {
        this.options.log.info({ previous: this.resolvedModel, served: ids.slice(0, 10) }, 'the endpoint no longer serves exactly one model; model unknown');
        this.resolvedModel = '';
        this.detected = undefined;
      }
    }
    return { models: ids };
  }

  /**
   * Runs `call` with the model to use. A 404 for a detected model means the server
   * now serves another: detect again and, when that gives another model, call once more.
   */
  private async withModel<T>(signal: AbortSignal, call: (model: string) => Promise<T>): Promise<T> {
    const model = await this.modelFor(signal);
    try {
      return await call(model);
    } catch (err) {
      const reason = reasonOf(signal);
      if (reason) throw reason;
      if (this.options.model !== '' || !(err instanceof APIError) || err.status !== 404) throw err;
      this.options.log.info({ model }, 'the endpoint answered 404 for the detected model; detecting again');
      if (this.resolvedModel === model) {
        this.resolvedModel = '';
        this.detected = undefined;
      }
      const fresh = await this.modelFor(signal);
      if (fresh === model) throw err;
      return call(fresh);
    }
  }

  /** The configured model, or the only model the endpoint serves, asked once and shared by concurrent callers. */
  private async modelFor(signal: AbortSignal): Promise<string> {
    if (this.resolvedModel !== '') return this.resolvedModel;
    // The listing has a bound of its own (not one caller's signal, which may end while others wait).
    this.detected ??= this.detectModel(AbortSignal.timeout(Math.min(this.options.timeoutMs, LIST_TIMEOUT_MS))).then(
      (model) => {
        this.adopt(model);
        return model;
      },
      (err: unknown) => {
        this.detected = undefined;
        throw err;
      },
    );
    try {
      return await untilAborted(this.detected, signal);
    } catch (err) {
      throw reasonOf(signal) ?? err;
    }
  }

  private adopt(model: string): void {
    if (model === this.resolvedModel) return;
    this.options.log.info({ model, previous: this.resolvedModel || undefined }, 'no model configured; using the only model the endpoint serves');
    this.resolvedModel = model;
    this.detected = Promise.resolve(model);
  }

  /**
   * The only model the endpoint lists. A failure to reach it (refused, timed out,
   * 401, 5xx) is thrown as the SDK raised it, so that infer reports the real problem
   * and retries what may be retried; only a reachable endpoint that leaves the
   * choice open is told to set a model.
   */
  private async detectModel(signal: AbortSignal): Promise<string> {
    const ids = await this.listModels(signal);
    const where = `set [service] model in ${this.options.configFile}`;
    if (ids === undefined) throw new ZinoError('NOT_CONFIGURED', `no model configured, and ${this.options.baseUrl} does not list its models (404): ${where}`);
    if (ids.length === 1 && ids[0]) return ids[0];
    const served = ids.length === 0 ? 'it lists none' : `it serves: ${ids.slice(0, 10).join(', ')}${ids.length > 10 ? ', ...' : ''}`;
    throw new ZinoError('NOT_CONFIGURED', `no model configured: ${where} (${served})`);
  }

  /** The ids the endpoint lists; undefined when it has no list (404). */
  private async listModels(signal: AbortSignal): Promise<string[] | undefined> {
    try {
      const page = await this.client.models.list({ signal });
      return page.data.map((m) => m.id);
    } catch (err) {
      if (err instanceof APIError && err.status === 404) return undefined;
      throw err;
    }
  }
}

/** The reason a signal was aborted with, when it is ours to report (TIMEOUT of [rtr] timeout). */
function reasonOf(signal: AbortSignal): ZinoError | undefined {
  return signal.aborted && signal.reason instanceof ZinoError ? signal.reason : undefined;
}

function body(params: InferParams): { messages: OpenAI.Chat.ChatCompletionMessageParam[]; temperature: number; top_p: number; max_tokens?: number } {
  return {
    messages: params.messages as OpenAI.Chat.ChatCompletionMessageParam[],
    temperature: params.temperature,
    top_p: params.top_p,
    ...(params.max_tokens === undefined ? {} : { max_tokens: params.max_tokens }),
  };
}

function usageOf(usage: OpenAI.CompletionUsage | null | undefined): Usage | undefined {
  if (!usage) return undefined;
  return { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens };
}
