import { describe, expect, it } from 'vitest';
import { messageBytes } from '../../src/runtime/index.js';

/** What messageBytes stands for: the message's JSON in a list, and its comma. */
function stringified(role: string, content: string): number {
  return Buffer.byteLength(JSON.stringify({ role, content }), 'utf8') + 1;
}

describe('messageBytes', () => {
  it('counts what JSON.stringify writes for the message, and its comma, whatever the text holds', () => {
    const texts = [
      '',
      'plain ascii',
      'x'.repeat(5000),
      'a "quoted" word',
      'back\\slash and C:\\path',
      'lines\nand\ttabs\r',
      '\u0000\u0001\u001f control characters',
      '\u007f delete is written as itself',
      'accents: é, ü, ß; CJK: 漢字',
      'an emoji pair: 😀 and 🧪',
      'a lone high surrogate \ud83d here',
      'a lone low surrogate \ude00 here',
      'line and paragraph separators: \u2028 \u2029',
      '</script> and <!-- html -->',
    ];
    for (const content of texts) {
      for (const role of ['user', 'assistant', 'a "role"', 'tool\n']) {
        expect(messageBytes({ role, content }), JSON.stringify({ role, content })).toBe(stringified(role, content));
      }
    }
  });
});
