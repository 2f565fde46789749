import { describe, expect, it } from 'vitest';
import {
  InvalidRequestError,
  chatMessages,
  forChatApi,
  isChatMessage,
  optionalBoolean,
  optionalInteger,
  optionalNumber,
  optionalString,
  parseMessages,
  requireNumber,
  requireString,
  textOf,
} from '../../src/runtime/index.js';

function message(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidRequestError);
    return (err as Error).message;
  }
  throw new Error('expected INVALID_REQUEST');
}

describe('field readers', () => {
  it('read present values and treat null as absent for optional fields', () => {
    const f = { s: 'x', b: true, n: 1.5, i: 3, z: null };
    expect(requireString(f, 's')).toBe('x');
    expect(optionalString(f, 'z')).toBeUndefined();
    expect(optionalBoolean(f, 'b')).toBe(true);
    expect(optionalNumber(f, 'n')).toBe(1.5);
    expect(optionalInteger(f, 'i', { min: 1 })).toBe(3);
    expect(requireNumber(f, 'n', { min: 0, max: 2 })).toBe(1.5);
  });

  it('name the field and the problem', () => {
    expect(message(() => requireString<{ message?: unknown }>({}, 'message'))).toBe('missing required field "message"');
    expect(message(() => requireString({ message: 5 }, 'message'))).toBe('field "message" must be a string, got number 5');
    expect(message(() => requireString({ message: '  ' }, 'message', { allowEmpty: false }))).toBe('field "message" must not be empty');
    expect(message(() => optionalBoolean({ stream: 'yes' }, 'stream'))).toBe('field "stream" must be true or false, got a string');
    expect(message(() => optionalInteger({ top_k: 1.5 }, 'top_k', { min: 1 }))).toBe('field "top_k" must be an integer, got 1.5');
    expect(message(() => optionalInteger({ top_k: 0 }, 'top_k', { min: 1 }))).toBe('field "top_k" must be at least 1, got 0');
    expect(message(() => requireNumber({ t: Number.NaN }, 't'))).toBe('field "t" must be a number, got number NaN');
    expect(message(() => requireNumber({ t: 3 }, 't', { max: 2 }))).toBe('field "t" must be at most 2, got 3');
  });

  it('print a wire value as text: strings as they are, objects as JSON, never [object Object]', () => {
    expect(textOf('a "b"')).toBe('a "b"');
    expect(textOf({ a: [1] })).toBe('{"a":[1]}');
    expect(textOf([1, 'x'])).toBe('[1,"x"]');
    expect(textOf(1.5)).toBe('1.5');
    expect(textOf(false)).toBe('false');
    expect(textOf(null)).toBe('null');
    expect(textOf(undefined)).toBe('undefined');
  });
});

describe('parseMessages', () => {
  it('keeps only role and content', () => {
    expect(parseMessages([{ role: 'user', content: 'hi', extra: 1 }])).toEqual([{ role: 'user', content: 'hi' }]);
  });

  it('accepts any role string, as the contract does', () => {
    expect(
      parseMessages([
        { role: 'function', content: '{}' },
        { role: 'wizard', content: 'x' },
      ]),
    ).toHaveLength(2);
  });

  it.each([
    [undefined, 'missing required field "messages"'],
    ['hi', 'field "messages" must be a list of {role, content} messages, got a string'],
    [[1], 'messages[0] must be an object with "role" and "content", got number 1'],
    [[{ role: '', content: 'x' }], 'messages[0].role must not be empty'],
    [[{ role: 7, content: 'x' }], 'messages[0].role must be a string, got number 7'],
    [[{ role: 'user', content: null }], 'messages[0].content must be a string, got null'],
  ])('rejects %j', (value, expected) => {
    expect(message(() => parseMessages(value))).toBe(expected);
  });

  it('rejects an empty list when asked to', () => {
    expect(message(() => parseMessages([], 'messages', { allowEmpty: false }))).toBe('field "messages" must not be empty');
  });
});

describe('chatMessages and forChatApi', () => {
  it('keep the valid {role, content} entries only', () => {
    expect(
      chatMessages([{ role: 'user', content: 'a', x: 1 }, { role: '', content: 'b' }, { role: 'tool' }, null, 'x', { role: 'tool', content: 'c' }]),
    ).toEqual([
      { role: 'user', content: 'a' },
      { role: 'tool', content: 'c' },
    ]);
    expect(chatMessages('nope')).toEqual([]);
    expect(isChatMessage({ role: 'user', content: '' })).toBe(true);
  });

  it('turn a role a chat API would refuse into a user message that says what it was', () => {
    expect(forChatApi({ role: 'function', content: '{"ok":true}' })).toEqual({ role: 'user', content: '[function] {"ok":true}' });
    expect(forChatApi({ role: 'assistant', content: 'hi' })).toEqual({ role: 'assistant', content: 'hi' });
  });
});
