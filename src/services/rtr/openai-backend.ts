/**
 * Any OpenAI-compatible chat completions API (OpenAI, OpenRouter, Ollama,
 * llama.cpp server, vLLM) through the official `openai` SDK. The SDK's own retries
 * are off: rtr retries itself so that the backoff can be aborted.
 */
import OpenAI from 'openai';
import { ZinoError, type Logger } from '../../runtime/index.js';
import type { Usage } from '../../protocol/rtr.js';
import type { InferParams, LlmBackend, StreamEvent } from './backend.js';

/** Settings of the backend. */
export interface OpenAiBackendOptions {
  baseUrl: string;
  apiKey: string;
  /** Configured model; empty means "ask the endpoint and use it when it serves exactly one". */
  model: string;
  timeoutMs: number;
  log: Logger;
}

/** The OpenAI-compatible backend. */
export class OpenAiBackend implements LlmBackend {
  readonly kind = 'openai' as const;
  private readonly client: OpenAI;
  private detected: Promise<string> | undefined;
  private resolvedModel: string;

  constructor(private readonly options: OpenAiBackendOptions) {
    this.client = new OpenAI({ baseURL: options.baseUrl, apiKey: options.apiKey, maxRetries: 0, timeout: options.timeoutMs });
    this.resolvedModel = options.model;
  }

  get model(): string {
    return this.resolvedModel;
  }

  async complete(params: InferParams, signal: AbortSignal): Promise<{ content: string; usage?: Usage | undefined }> {
    const model = await this.modelFor();
    const bound = this.bound(signal);
    try {
      const completion = await this.client.chat.completions.create({ model, ...body(params), stream: false }, { signal: bound.signal });
      return { content: completion.choices[0]?.message?.content ?? '', usage: usageOf(completion.usage) };
    } catch (err) {
      throw bound.timeoutError() ?? err;
    } finally {
      bound.clear();
    }
  }

  async *stream(params: InferParams, signal: AbortSignal): AsyncIterable<StreamEvent> {
    const model = await this.modelFor();
    const bound = this.bound(signal);
    let finished = false;
    try {
      const stream = await this.client.chat.completions.create(
        { model, ...body(params), stream: true, stream_options: { include_usage: true } },
        { signal: bound.signal },
      );
      for await (const chunk of stream) {
        const choice = chunk.choices[0];
        if (choice?.finish_reason) finished = true;
        const delta = choice?.delta?.content;
        if (delta) yield { delta };
        const usage = usageOf(chunk.usage);
        if (usage) yield { usage };
      }
      // The SDK's stream ends quietly when aborted, and so does a body cut short cleanly.
      const late = bound.timeoutError();
      if (late) throw late;
      signal.throwIfAborted();
      if (!finished) throw new ZinoError('UPSTREAM_ERROR', 'the LLM stream ended before the reply was finished (no finish_reason)');
    } catch (err) {
      throw bound.timeoutError() ?? err;
    } finally {
      bound.clear();
    }
  }

  /**
   * The caller's signal bounded by `[rtr] timeout`: the SDK's own timeout stops at the
   * response headers, so it would not bound a stream that stalls afterwards. A plain
   * timer (cleared by `clear()`) rather than AbortSignal.timeout inside AbortSignal.any,
   * which Node 20 may collect before it fires.
   */
  private bound(caller: AbortSignal): { signal: AbortSignal; timeoutError: () => ZinoError | undefined; clear: () => void } {
    const controller = new AbortController();
    let expired = false;
    const onAbort = (): void => controller.abort(caller.reason);
    caller.addEventListener('abort', onAbort, { once: true });
    if (caller.aborted) onAbort();
    const timer = setTimeout(() => {
      expired = true;
      controller.abort(new ZinoError('TIMEOUT', 'LLM request timed out'));
    }, this.options.timeoutMs);
    return {
      signal: controller.signal,
      timeoutError: () =>
        expired && !caller.aborted ? new ZinoError('TIMEOUT', `the LLM did not finish within ${this.options.timeoutMs / 1000} s ([rtr] timeout)`) : undefined,
      clear: () => {
        clearTimeout(timer);
        caller.removeEventListener('abort', onAbort);
      },
    };
  }

  /**
   * The configured model, or the only model the endpoint serves, asked once under a
   * bound of its own (not a caller's signal, which may be cancelled while others wait).
   */
  private modelFor(): Promise<string> {
    if (this.resolvedModel !== '') return Promise.resolve(this.resolvedModel);
    this.detected ??= this.detectModel(AbortSignal.timeout(this.options.timeoutMs)).then(
      (model) => {
        this.resolvedModel = model;
        return model;
      },
      (err: unknown) => {
        this.detected = undefined;
        throw err;
      },
    );
    return this.detected;
  }

  private async detectModel(signal: AbortSignal): Promise<string> {
    let ids: string[];
    try {
      const page = await this.client.models.list({ signal });
      ids = page.data.map((m) => m.id);
    } catch (err) {
      throw new ZinoError(
        'NOT_CONFIGURED',
        `no model configured and ${this.options.baseUrl} did not list its models (${(err as Error).message}): set [service] model in ZINO.toml`,
      );
    }
    if (ids.length === 1 && ids[0]) {
      this.options.log.info({ model: ids[0] }, 'no model configured; using the only model the endpoint serves');
      return ids[0];
    }
    const served = ids.length === 0 ? 'it lists none' : `it serves: ${ids.slice(0, 10).join(', ')}${ids.length > 10 ? ', …' : ''}`;
    throw new ZinoError('NOT_CONFIGURED', `no model configured: set [service] model in ZINO.toml (${served})`);
  }
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
