import { describe, expect, it } from 'vitest';
import { madeUpRequestId } from '../../src/runtime/request-id.js';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('madeUpRequestId', () => {
  it('makes version-4 UUIDs, as crypto.randomUUID does', () => {
    for (let i = 0; i < 1000; i++) expect(madeUpRequestId()).toMatch(UUID_V4);
  });

  it('makes a different id every time', () => {
    const ids = new Set(Array.from({ length: 20_000 }, madeUpRequestId));
    expect(ids.size).toBe(20_000);
  });

  it('uses every hex digit in every position that is not fixed', () => {
    // A slip in the bit arithmetic (a byte always zero, a sign bit lost) leaves a position stuck.
    const seen = Array.from({ length: 36 }, () => new Set<string>());
    for (let i = 0; i < 5000; i++) [...madeUpRequestId()].forEach((char, at) => seen[at]?.add(char));
    const fixed = new Map([
      [8, '-'],
      [13, '-'],
      [14, '4'],
      [18, '-'],
      [23, '-'],
    ]);
    seen.forEach((chars, at) => {
      if (fixed.has(at)) expect([...chars]).toEqual([fixed.get(at)]);
      else if (at === 19) expect([...chars].sort()).toEqual(['8', '9', 'a', 'b']);
      else expect(chars.size).toBe(16);
    });
  });
});
