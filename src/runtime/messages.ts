/**
 * Chat messages as the contract carries them: `{role, content}` objects whose
 * role is a string (the contract does not restrict it) and whose content is a string.
 * One definition, used everywhere a message list is read.
 */
import { InvalidRequestError } from './errors.js';
import { kindOf } from './validate.js';

/** One chat message. */
export interface ChatMessage {
  role: string;
  content: string;
}

/**
 * Characters `JSON.stringify` writes other than as themselves: `"`, a backslash, the controls, and
 * surrogates (a lone one is escaped; a pair is not, but the pair's text is then measured the slow way).
 */
// eslint-disable-next-line no-control-regex -- the controls are what JSON escapes
const ESCAPED_IN_JSON = /["\\\u0000-\u001f\ud800-\udfff]/;

/** UTF-8 bytes of `text` written as a JSON string, quotes included. */
function jsonStringBytes(text: string): number {
  return ESCAPED_IN_JSON.test(text) ? Buffer.byteLength(JSON.stringify(text), 'utf8') : Buffer.byteLength(text, 'utf8') + 2;
}

/** Bytes of `{"role":,"content":}` around the two strings, and the comma that separates messages in a list. */
const MESSAGE_FRAME_BYTES = 21;

/**
 * Encoded size of one message in a list: `JSON.stringify({role, content})` and a separating
 * comma, in UTF-8 bytes, counted without writing the JSON (ctx and mem size every message of
 * every context this way: the stringify was 3–5 % of their CPU per request, issue 18).
 */
export function messageBytes(m: ChatMessage): number {
  return MESSAGE_FRAME_BYTES + jsonStringBytes(m.role) + jsonStringBytes(m.content);
}

/** Characters (UTF-16 code units) of the messages' contents, added up: what token estimates and cheap size bounds start from. */
export function contentChars(messages: readonly ChatMessage[]): number {
  let n = 0;
  for (const m of messages) n += m.content.length;
  return n;
}

/** Roles an OpenAI-compatible chat API takes without extra fields (`tool` needs a `tool_call_id`). */
export const CHAT_ROLES: ReadonlySet<string> = new Set(['system', 'user', 'assistant', 'developer']);

/** True for an object with a non-empty string `role` and a string `content`. */
export function isChatMessage(value: unknown): value is ChatMessage {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const { role, content } = value as Record<string, unknown>;
  return typeof role === 'string' && role !== '' && typeof content === 'string';
}

/** Copies (`{role, content}` only) of the valid messages of `value`; anything else is left out. */
export function chatMessages(value: unknown): ChatMessage[] {
  if (!Array.isArray(value)) return [];
  return value.filter(isChatMessage).map(({ role, content }) => ({ role, content }));
}

/**
 * A message a chat API will accept: a role outside {@link CHAT_ROLES} (an imported
 * `function` or `tool` turn) becomes a user message that says what it was.
 */
export function forChatApi(message: ChatMessage): ChatMessage {
  return CHAT_ROLES.has(message.role) ? message : { role: 'user', content: `[${message.role}] ${message.content}` };
}

/**
 * Checks that `value` is a list of `{role, content}` with string role and content;
 * returns copies holding only those two fields. Throws INVALID_REQUEST naming the
 * first offending element.
 */
export function parseMessages(value: unknown, field = 'messages', options: { allowEmpty?: boolean } = {}): ChatMessage[] {
  if (value === undefined || value === null) throw new InvalidRequestError(`missing required field "${field}"`);
  if (!Array.isArray(value)) throw new InvalidRequestError(`field "${field}" must be a list of {role, content} messages, got ${kindOf(value)}`);
  if (value.length === 0 && options.allowEmpty === false) throw new InvalidRequestError(`field "${field}" must not be empty`);
  return value.map((item: unknown, i) => {
    if (item === null || typeof item !== 'object' || Array.isArray(item)) {
      throw new InvalidRequestError(`${field}[${i}] must be an object with "role" and "content", got ${kindOf(item)}`);
    }
    const { role, content } = item as Record<string, unknown>;
    if (typeof role !== 'string') throw new InvalidRequestError(`${field}[${i}].role must be a string, got ${kindOf(role)}`);
    if (role === '') throw new InvalidRequestError(`${field}[${i}].role must not be empty`);
    if (typeof content !== 'string') throw new InvalidRequestError(`${field}[${i}].content must be a string, got ${kindOf(content)}`);
    return { role, content };
  });
}
