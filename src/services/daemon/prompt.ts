/**
 * Assembling `[system?, ...context, user]`: the system prompt (kept from sys's `watch`
 * stream, else sys `get`) and the context (ctx `build`) are fetched concurrently;
 * either one failing leaves its part out and is logged, never failing the request.
 */
import { Endpoint, chatMessages, clientOptions, forChatApi, type ChatMessage, type HandlerContext, type ResolvedConfig } from '../../runtime/index.js';
import { CTX } from '../../protocol/ctx.js';
import { SYS } from '../../protocol/sys.js';
import { fitBudget, fitBytes, lastMessages } from '../ctx/budget.js';
import type { PromptWatch } from './prompt-watch.js';

/** What the prompt may be built without: sys's prompt, ctx's context, or parts of it mem could not supply. */
export type PromptPart = 'system_prompt' | 'context' | 'hard_memories' | 'history';

/** The assembled prompt and which parts could not be fetched. */
export interface Prompt {
  messages: ChatMessage[];
  missing: PromptPart[];
}

/** Where the history comes from: the request's own `history`, else the channel's stored one. */
export interface HistorySource {
  channelId?: string | undefined;
  history?: ChatMessage[] | undefined;
}

/** Builds the prompt for `message`, with the history of `source`; `watch` holds sys's prompt while its stream is open. */
export async function assemblePrompt(
  config: Readonly<ResolvedConfig>,
  message: string,
  source: HistorySource,
  ctx: HandlerContext,
  watch?: PromptWatch,
): Promise<Prompt> {
  const options = { signal: ctx.signal, timeoutMs: config.daemon.dependency_timeout_ms };
  const ctxService = new Endpoint(CTX, config.ctx.socket, clientOptions(config, 'ctx', options));
  const kept = watch?.current;
  const [system, context] = await Promise.allSettled([
    kept !== undefined
      ? { content: kept }
      : new Endpoint(SYS, config.sys.socket, clientOptions(config, 'sys', options)).request('get', { request_id: ctx.requestId }),
    ctxService.request('build', {
      user_message: message,
      request_id: ctx.requestId,
      ...(source.history !== undefined ? { history: source.history } : source.channelId !== undefined ? { channel_id: source.channelId } : {}),
    }),
  ]);
  ctx.signal.throwIfAborted();
  const messages: ChatMessage[] = [];
  const missing: Prompt['missing'] = [];
  if (system.status === 'fulfilled' && typeof system.value.content === 'string') {
    if (system.value.content !== '') messages.push({ role: 'system', content: system.value.content });
  } else {
    missing.push('system_prompt');
    ctx.log.warn({ reason: reasonOf(system) }, 'no system prompt: sys failed; answering without it');
  }
  const built = context.status === 'fulfilled' && Array.isArray(context.value.messages);
  // Stored or imported turns may carry roles a chat API refuses (function, tool): keep them as user text.
  const contextMessages = built ? chatMessages(context.value.messages).map(forChatApi) : [];
  if (built) {
    messages.push(...contextMessages);
    // ctx answers without what mem could not supply, and says which (checked: another process's data).
    const parts: unknown = context.value.missing;
    if (Array.isArray(parts)) for (const part of parts as unknown[]) if (part === 'hard_memories' || part === 'history') missing.push(part);
  } else {
    missing.push('context');
    ctx.log.warn({ reason: reasonOf(context) }, 'no context: ctx failed; answering without it');
  }
  // The request's own history is the caller's conversation: it must reach the model. Our ctx says it took it;
  // a ctx written from the contract alone does not know the field, and a failed ctx took nothing.
  if (source.history !== undefined && !(built && context.value.history_taken === true)) {
    const { history, dropped } = historyWithin(config, contextMessages, source.history);
    messages.push(...history.map(forChatApi));
    ctx.log.info(
      { messages: history.length, dropped, ctx: built ? 'did not take it' : 'failed' },
      built ? "ctx did not take the request's history (a ctx without ZINO's history field): added it here" : "ctx failed: the request's history added here",
    );
  }
  messages.push({ role: 'user', content: message });
  return { messages, missing };
}

/**
 * The request's history bounded as ctx bounds it, together with the context already in
 * the prompt: its last `[ctx] history_limit` messages, then the token budget and a quarter
 * of the frame limit over context and history (the oldest history message goes first).
 */
function historyWithin(config: Readonly<ResolvedConfig>, context: ChatMessage[], history: ChatMessage[]): { history: ChatMessage[]; dropped: number } {
  const last = lastMessages(history, config.ctx.history_limit);
  const trimmed = fitBytes(
    fitBudget({ examples: context, hard: [], history: last }, config.ctx.max_context_tokens),
    Math.floor(config.limits.max_frame_bytes / 4),
  );
  return { history: trimmed.parts.history, dropped: history.length - trimmed.parts.history.length };
}

function reasonOf(result: PromiseSettledResult<unknown>): string {
  if (result.status === 'rejected') return result.reason instanceof Error ? result.reason.message : String(result.reason);
  return 'unexpected reply';
}
