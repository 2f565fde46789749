/**
 * A `POST /v1/chat/completions` body, checked and turned into what ZINO runs.
 *
 * Conversations: the last message must be the user's, and is the prompt. Without a
 * channel (the OpenAI way: the client sends the whole conversation every time) the
 * earlier messages are the daemon's `history`, and nothing is stored. With a channel
 * (`user`, or the `X-Zino-Channel` header) the daemon's stored history of that
 * channel is used and the exchange is stored there, as long as the request carries
 * no earlier turns: a client that sends its whole conversation anyway gets that
 * conversation as the history (never the stored one as well), so no turn is in the
 * prompt twice. docs/http.md says the same for users.
 *
 * Fields OpenAI has and ZINO does not use (tools, stop, seed, logprobs, …) are
 * ignored, as OpenAI-compatible servers do.
 */
import type http from 'node:http';
import { forChatApi, type ChatMessage } from '../../runtime/index.js';
import { checkChannelId } from '../../protocol/mem.js';
import { HttpError, badRequest } from './errors.js';
import { isModelId, type ModelId } from './models.js';

/** What one chat completion request asks for. */
export interface ChatJob {
  model: ModelId;
  stream: boolean;
  /** `stream_options.include_usage`: a last chunk with the usage. */
  includeUsage: boolean;
  /** Tool calls and results as Markdown in the answer. */
  verbose: boolean;
  temperature?: number | undefined;
  topP?: number | undefined;
  /** `max_completion_tokens` or `max_tokens` (used by `zino-direct` only). */
  maxTokens?: number | undefined;
  /** Every message, as a chat API takes them (what `zino-direct` sends). */
  messages: ChatMessage[];
  /** The prompt: the last message's text. */
  prompt: string;
  /** The history to send instead of the channel's; `undefined` when the channel's is used. */
  history?: ChatMessage[] | undefined;
  channelId?: string | undefined;
}

/** Headers that change how a request runs (ZINO's own). */
export const CHANNEL_HEADER = 'x-zino-channel';
/** @see CHANNEL_HEADER */
export const VERBOSE_HEADER = 'x-zino-verbose';

const TRUE_WORDS = new Set(['1', 'true', 'yes', 'on']);

/** Checks `body`; throws a 400 or 404 {@link HttpError}. */
export function parseChatRequest(body: Record<string, unknown>, headers: http.IncomingHttpHeaders): ChatJob {
  const model = body.model;
  if (model === undefined || model === null) throw badRequest('missing required field "model" (one of zino, zino-verbose, zino-direct)', 'model');
  if (typeof model !== 'string') throw badRequest('field "model" must be a string', 'model');
  if (!isModelId(model)) {
    throw new HttpError(
      404,
      `The model \`${model}\` does not exist: this endpoint serves zino, zino-verbose and zino-direct`,
      'invalid_request_error',
      'model_not_found',
      'model',
    );
  }
  const messages = parseMessageList(body.messages);
  const stream = optionalBoolean(body, 'stream') ?? false;
  const options = body.stream_options;
  if (options !== undefined && options !== null && (typeof options !== 'object' || Array.isArray(options))) {
    throw badRequest('field "stream_options" must be an object', 'stream_options');
  }
  const includeUsage = stream && options !== undefined && options !== null && (options as Record<string, unknown>).include_usage === true;
  const n = body.n;
  if (n !== undefined && n !== null && n !== 1) throw badRequest('field "n": ZINO gives one answer per request (n must be 1)', 'n');
  const job: ChatJob = {
    model,
    stream,
    includeUsage,
    verbose: model === 'zino-verbose' || TRUE_WORDS.has(headerValue(headers, VERBOSE_HEADER)?.toLowerCase() ?? ''),
    temperature: optionalNumber(body, 'temperature', 0, 2),
    topP: optionalNumber(body, 'top_p', 0, 1),
    maxTokens: optionalInteger(body, 'max_completion_tokens') ?? optionalInteger(body, 'max_tokens'),
    messages: messages.map(forChatApi),
    prompt: '',
  };
  if (model === 'zino-direct') return job;

  const last = messages[messages.length - 1] as ChatMessage;
  if (last.role !== 'user') throw badRequest(`the last message must be the user's (it is ${last.role}): ZINO answers the last user message`, 'messages');
  if (last.content.trim() === '') throw badRequest('the last user message is empty', 'messages');
  job.prompt = last.content;
  const earlier = messages.slice(0, -1);
  const channel = channelOf(body, headers);
  if (channel === undefined) {
    job.history = earlier;
  } else {
    job.channelId = channel;
    // Only system messages before the prompt: the channel's stored conversation is the history.
    if (earlier.some((m) => m.role !== 'system' && m.role !== 'developer')) job.history = earlier;
  }
  return job;
}

/** The channel: the `X-Zino-Channel` header, else `user`; checked as the daemon checks `channel_id`. */
function channelOf(body: Record<string, unknown>, headers: http.IncomingHttpHeaders): string | undefined {
  const header = headerValue(headers, CHANNEL_HEADER);
  if (header !== undefined && header !== '') return checkedChannel(utf8Header(header), 'X-Zino-Channel');
  const user = body.user;
  if (user === undefined || user === null || user === '') return undefined;
  if (typeof user !== 'string') throw badRequest('field "user" must be a string', 'user');
  return checkedChannel(user, 'user');
}

function checkedChannel(id: string, field: string): string {
  try {
    checkChannelId(id, field);
  } catch (err) {
    throw badRequest((err as Error).message, field === 'user' ? 'user' : null);
  }
  return id;
}

/** Node gives header values as latin1; a channel name may be UTF-8. */
function utf8Header(value: string): string {
  const bytes = Buffer.from(value, 'latin1');
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw badRequest('the X-Zino-Channel header is not valid UTF-8');
  }
}

function headerValue(headers: http.IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** `messages`: a non-empty list of `{role, content}`, content a string or a list of text parts. */
function parseMessageList(value: unknown): ChatMessage[] {
  if (value === undefined || value === null) throw badRequest('missing required field "messages"', 'messages');
  if (!Array.isArray(value) || value.length === 0) throw badRequest('field "messages" must be a non-empty list of messages', 'messages');
  return value.map((item: unknown, i): ChatMessage => {
    const param = `messages[${i}]`;
    if (item === null || typeof item !== 'object' || Array.isArray(item)) throw badRequest(`${param} must be an object with "role" and "content"`, param);
    const { role, content } = item as Record<string, unknown>;
    if (typeof role !== 'string' || role === '') throw badRequest(`${param}.role must be a non-empty string`, `${param}.role`);
    return { role, content: contentText(content, role, `${param}.content`) };
  });
}

/** A message's text: a string, text parts joined by newlines, or nothing (an assistant turn that only called tools). */
function contentText(content: unknown, role: string, param: string): string {
  if (typeof content === 'string') return content;
  if (content === undefined || content === null) {
    if (role === 'assistant') return '';
    throw badRequest(`${param} is missing`, param);
  }
  if (!Array.isArray(content)) throw badRequest(`${param} must be a string or a list of content parts`, param);
  const texts = content.map((part: unknown, i) => {
    const { type, text } = (part ?? {}) as Record<string, unknown>;
    if (type === 'text' && typeof text === 'string') return text;
    if (type === 'refusal') return '';
    throw badRequest(`${param}[${i}]: only text content parts are supported, got ${typeof type === 'string' ? type : 'an invalid part'}`, `${param}[${i}]`);
  });
  return texts.join('\n');
}

function optionalBoolean(body: Record<string, unknown>, key: string): boolean | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw badRequest(`field "${key}" must be true or false`, key);
  return value;
}

function optionalNumber(body: Record<string, unknown>, key: string, min: number, max: number): number | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw badRequest(`field "${key}" must be a number from ${min} to ${max}`, key);
  }
  return value;
}

function optionalInteger(body: Record<string, unknown>, key: string): number | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw badRequest(`field "${key}" must be a positive integer`, key);
  return value;
}
