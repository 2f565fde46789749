/** The byte-level examples in docs/protocol.md are what the codec produces. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeFrame } from '../../src/runtime/index.js';

const doc = readFileSync(path.join(__dirname, '../../docs/protocol.md'), 'utf8');

describe('docs/protocol.md', () => {
  it('shows the ping frame byte for byte', () => {
    const line = /^([0-9a-f]{2}(?: {1,2}[0-9a-f]{2})*) +(\{.*\})$/m.exec(doc);
    expect(line, 'the hex dump line').not.toBeNull();
    const [, hex = '', json = ''] = line ?? [];
    const shown = Buffer.from(hex.replace(/ /g, ''), 'hex');
    expect(shown).toEqual(encodeFrame(JSON.parse(json) as { type: string }));
    expect(shown.subarray(4).toString('utf8')).toBe(json);
  });

  it('has the same header in the printf example', () => {
    const printf = /printf '((?:\\x[0-9a-f]{2}){4})(\{.*?\})'/.exec(doc);
    expect(printf, 'the printf line').not.toBeNull();
    const [, header = '', json = ''] = printf ?? [];
    const bytes = Buffer.from(header.replace(/\\x/g, ''), 'hex');
    expect(Buffer.concat([bytes, Buffer.from(json)])).toEqual(encodeFrame(JSON.parse(json) as { type: string }));
  });
});
