/**
 * Chat messages as the contract carries them: OpenAI-format `{role, content}`
 * objects with string content.
 */
import { InvalidRequestError } from './errors.js';
import { kindOf } from './validate.js';

/** One chat message. */
export interface ChatMessage {
  role: string;
  content: string;
}

/** Roles a message may have. */
export const ROLES: ReadonlySet<string> = new Set(['system', 'user', 'assistant', 'tool', 'developer']);

/**
 * Checks that `value` is a list of `{role, content}` with a known role and string
 * content; returns copies holding only those two fields. Throws INVALID_REQUEST
 * naming the first offending element.
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
    if (typeof role !== 'string' || !ROLES.has(role)) {
      throw new InvalidRequestError(`${field}[${i}].role must be one of ${[...ROLES].join(', ')}, got ${typeof role === 'string' ? JSON.stringify(role.slice(0, 40)) : kindOf(role)}`);
    }
    if (typeof content !== 'string') throw new InvalidRequestError(`${field}[${i}].content must be a string, got ${kindOf(content)}`);
    return { role, content };
  });
}
