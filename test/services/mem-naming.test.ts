import { describe, expect, it } from 'vitest';
import { ZinoError } from '../../src/runtime/index.js';
import { channelFileName, channelFileStem, checkChannelId } from '../../src/services/mem/naming.js';

const SAFE_NAME = /^[a-z0-9_%A-F-]+(~[0-9a-f]{64})?\.jsonl$/;

function codeOf(fn: () => void): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    return err instanceof ZinoError ? err.code : 'THREW';
  }
}

describe('channel file names', () => {
  it('keeps lower-case letters, digits, _ and - as they are', () => {
    expect(channelFileName('chan-1_x')).toBe('chan-1_x.jsonl');
  });

  it('escapes every other byte, so a/b and a_b never share a file', () => {
    expect(channelFileStem('a/b')).toBe('a%2Fb');
    expect(channelFileStem('a_b')).toBe('a_b');
    expect(channelFileStem('a%2Fb')).toBe('a%252%46b');
  });

  it('never yields a path separator, a dot, or a name that leaves the directory', () => {
    for (const id of ['..', '.', '../x', '../../etc/passwd', '/etc/passwd', 'a\u0000b', 'x/../../y', '\\..\\x', '~', '.hidden']) {
      const name = channelFileName(id);
      expect(name).toMatch(SAFE_NAME);
      expect(name.slice(0, -'.jsonl'.length)).not.toContain('.');
    }
  });

  it('keeps ids that differ only in case apart, even on a case-insensitive file system', () => {
    const upper = channelFileName('Chat');
    const lower = channelFileName('chat');
    expect(upper).not.toBe(lower);
    expect(upper.toLowerCase()).not.toBe(lower.toLowerCase());
  });

  it('escapes multi-byte characters byte by byte', () => {
    expect(channelFileStem('ü')).toBe('%C3%BC');
  });

  it('bounds long names with a hash suffix and keeps long ids with a common prefix apart', () => {
    const a = 'x'.repeat(255) + 'a';
    const b = 'x'.repeat(255) + 'b';
    const wide = '日'.repeat(85); // 255 bytes, 765 escaped characters
    for (const id of [a, b, wide]) {
      const name = channelFileName(id);
      expect(name).toMatch(SAFE_NAME);
      expect(Buffer.byteLength(name)).toBeLessThanOrEqual(200);
    }
    expect(channelFileName(a)).not.toBe(channelFileName(b));
    // The cut never splits an escape.
    expect(channelFileStem(wide).split('~')[0]).toMatch(/^(%[0-9A-F]{2})+$/);
  });

  it('is injective over a sample of tricky ids', () => {
    const ids = [
      'a/b',
      'a_b',
      'a%2Fb',
      'a%2fb',
      'A/B',
      'a.b',
      'a b',
      'a\u0000b',
      '..',
      '.',
      '...',
      'ü',
      'u\u0308',
      'Ü',
      'x'.repeat(120),
      'x'.repeat(121),
      'x'.repeat(256),
    ];
    const names = ids.map(channelFileName);
    expect(new Set(names).size).toBe(ids.length);
  });

  it('accepts ids up to 256 UTF-8 bytes and refuses empty, longer or malformed ones with INVALID_REQUEST', () => {
    expect(codeOf(() => checkChannelId('x'.repeat(256)))).toBeUndefined();
    expect(codeOf(() => checkChannelId('ü'.repeat(128)))).toBeUndefined();
    expect(codeOf(() => checkChannelId('x'.repeat(257)))).toBe('INVALID_REQUEST');
    expect(codeOf(() => checkChannelId('ü'.repeat(129)))).toBe('INVALID_REQUEST');
    expect(codeOf(() => checkChannelId(''))).toBe('INVALID_REQUEST');
    // A lone surrogate would encode to U+FFFD and share the file of the real U+FFFD.
    expect(codeOf(() => checkChannelId('a\uD800'))).toBe('INVALID_REQUEST');
    expect(codeOf(() => checkChannelId('a\u{1F600}'))).toBeUndefined();
  });
});
