import { describe, expect, it } from 'vitest';
import { FrameDecoder, encodeFrame, parseFrameBody, DEFAULT_MAX_FRAME_BYTES, ProtocolError, type Frame } from '../../src/runtime/index.js';
import { LARGE_BODY_BYTES } from '../../src/runtime/frame/decoder.js';
import { rng } from '../helpers/random.js';

function header(length: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(length, 0);
  return b;
}

function rawFrame(body: Buffer): Buffer {
  return Buffer.concat([header(body.length), body]);
}

function decodeAll(pieces: Buffer[], maxFrameBytes?: number): Frame[] {
  const decoder = new FrameDecoder(maxFrameBytes === undefined ? {} : { maxFrameBytes });
  const out: Frame[] = [];
  for (const piece of pieces) out.push(...decoder.pushAndReadAll(piece));
  decoder.end();
  return out;
}

const SAMPLE: Frame[] = [
  { type: 'ping' },
  { type: 'chunk', delta: 'héllo wörld — ✓ 🎉 日本語' },
  { type: 'done', full_text: '', nested: { list: [1, 2, { x: null }], emoji: '👩‍👩‍👧' } },
  { type: 'response', content: 'x'.repeat(5000) },
];

describe('encodeFrame', () => {
  it('writes a big-endian length followed by UTF-8 JSON', () => {
    const bytes = encodeFrame({ type: 'ping', s: 'é' });
    const json = Buffer.from(JSON.stringify({ type: 'ping', s: 'é' }), 'utf8');
    expect(bytes.readUInt32BE(0)).toBe(json.length);
    expect(bytes.subarray(4)).toEqual(json);
  });

  it('refuses to encode a frame larger than the cap', () => {
    expect(() => encodeFrame({ s: 'x'.repeat(2000) }, 1024)).toThrow(expect.objectContaining({ code: 'FRAME_TOO_LARGE' }));
  });

  it('encodes a frozen frame once and reuses its bytes; an unfrozen one every time', () => {
    const frozen = Object.freeze({ type: 'system_prompt', content: 'p'.repeat(5000) });
    const first = encodeFrame(frozen);
    expect(encodeFrame(frozen)).toBe(first);
    expect(parseFrameBody(first.subarray(4))).toEqual(frozen);
    const plain = { type: 'system_prompt', content: 'p' };
    const before = encodeFrame(plain);
    plain.content = 'q';
    expect(parseFrameBody(encodeFrame(plain).subarray(4))).toEqual({ type: 'system_prompt', content: 'q' });
    expect(parseFrameBody(before.subarray(4))).toEqual({ type: 'system_prompt', content: 'p' });
  });

  it('refuses a frozen frame over the cap also when its bytes were encoded before', () => {
    const frozen = Object.freeze({ s: 'x'.repeat(2000) });
    encodeFrame(frozen);
    expect(() => encodeFrame(frozen, 1024)).toThrow(expect.objectContaining({ code: 'FRAME_TOO_LARGE' }));
  });

  it('produces valid UTF-8 even for lone surrogates', () => {
    const bytes = encodeFrame({ s: '\ud800' });
    expect(parseFrameBody(bytes.subarray(4))).toEqual({ s: '\ud800' });
  });
});

describe('FrameDecoder', () => {
  const stream = Buffer.concat(SAMPLE.map((f) => encodeFrame(f)));

  it('decodes a multi-frame buffer split at every possible point', () => {
    for (let cut = 0; cut <= stream.length; cut++) {
      expect(decodeAll([stream.subarray(0, cut), stream.subarray(cut)])).toEqual(SAMPLE);
    }
  });

  it('decodes a multi-frame buffer split at every pair of points around the header and body', () => {
    const small = Buffer.concat([encodeFrame({ a: 'ü' }), encodeFrame({ b: '€' })]);
    for (let i = 0; i <= small.length; i++) {
      for (let j = i; j <= small.length; j++) {
        expect(decodeAll([small.subarray(0, i), small.subarray(i, j), small.subarray(j)])).toEqual([{ a: 'ü' }, { b: '€' }]);
      }
    }
  });

  it('decodes one byte at a time', () => {
    const pieces = [...stream].map((b) => Buffer.from([b]));
    expect(decodeAll(pieces)).toEqual(SAMPLE);
  });

  it('decodes random piece sizes, including splits inside multi-byte characters', () => {
    const random = rng(42);
    const multibyte = encodeFrame({ delta: '€'.repeat(100) + '🎉'.repeat(100) });
    const all = Buffer.concat([stream, multibyte, stream]);
    const expected = [...SAMPLE, { delta: '€'.repeat(100) + '🎉'.repeat(100) }, ...SAMPLE];
    let insideCharacterSplits = 0;
    for (let run = 0; run < 500; run++) {
      const pieces: Buffer[] = [];
      for (let at = 0; at < all.length;) {
        const size = 1 + Math.floor(random() * 40);
        pieces.push(all.subarray(at, at + size));
        at += size;
        // A UTF-8 continuation byte at the cut means a character was split.
        const next = all[at];
        if (next !== undefined && (next & 0xc0) === 0x80) insideCharacterSplits++;
      }
      expect(decodeAll(pieces)).toEqual(expected);
    }
    expect(insideCharacterSplits).toBeGreaterThan(100);
  });

  it('decodes large bodies (gathered in one buffer) in random pieces, with frames before and after in the same pieces', () => {
    const random = rng(9);
    const large = [
      { type: 'big', text: 'é'.repeat(60_000) + '🎉'.repeat(20_000) },
      { type: 'big', text: 'x'.repeat(LARGE_BODY_BYTES * 3) },
    ];
    const all = Buffer.concat([stream, encodeFrame(large[0] as Frame), stream, encodeFrame(large[1] as Frame), encodeFrame({ type: 'ping' })]);
    const expected = [...SAMPLE, large[0], ...SAMPLE, large[1], { type: 'ping' }];
    for (let run = 0; run < 40; run++) {
      const pieces: Buffer[] = [];
      for (let at = 0; at < all.length;) {
        const size = 1 + Math.floor(random() * 100_000);
        pieces.push(all.subarray(at, at + size));
        at += size;
      }
      expect(decodeAll(pieces)).toEqual(expected);
    }
  });

  it('holds a stalled large body in one buffer and says how much of it came when the stream ends', () => {
    const decoder = new FrameDecoder();
    decoder.push(header(10 * LARGE_BODY_BYTES));
    for (let i = 0; i < 3; i++) {
      decoder.push(Buffer.alloc(LARGE_BODY_BYTES, 0x20));
      expect(decoder.read()).toBeUndefined();
    }
    expect(decoder.pendingBytes).toBe(3 * LARGE_BODY_BYTES);
    expect(() => decoder.end()).toThrow(`stream ended inside a frame (${3 * LARGE_BODY_BYTES} of ${10 * LARGE_BODY_BYTES} body bytes received)`);
  });

  it('decodes many frames delivered in one chunk', () => {
    const frames = Array.from({ length: 1000 }, (_, i) => ({ type: 'chunk', delta: String(i) }));
    expect(decodeAll([Buffer.concat(frames.map((f) => encodeFrame(f)))])).toEqual(frames);
  });

  it('rejects a declared length above the cap as soon as the header arrives', () => {
    const decoder = new FrameDecoder({ maxFrameBytes: 1024 });
    decoder.push(header(1025));
    expect(() => decoder.read()).toThrow(expect.objectContaining({ code: 'FRAME_TOO_LARGE' }));
    // Nothing of the body was ever needed, and the decoder holds nothing.
    expect(decoder.pendingBytes).toBe(0);
  });

  it('rejects a 4 GiB announcement with the default cap without buffering', () => {
    const decoder = new FrameDecoder();
    decoder.push(Buffer.from([0xff, 0xff, 0xff, 0xff, 0x7b]));
    const err = (() => {
      try {
        decoder.read();
      } catch (e) {
        return e as ProtocolError;
      }
      return undefined;
    })();
    expect(err?.code).toBe('FRAME_TOO_LARGE');
    expect(err?.message).toContain(String(DEFAULT_MAX_FRAME_BYTES));
  });

  it('accepts a frame exactly at the cap', () => {
    const body = Buffer.from(JSON.stringify({ s: 'x'.repeat(1024 - 8) }));
    expect(body.length).toBe(1024);
    expect(decodeAll([rawFrame(body)], 1024)).toEqual([{ s: 'x'.repeat(1016) }]);
  });

  it('stays failed after a protocol error', () => {
    const decoder = new FrameDecoder({ maxFrameBytes: 10 });
    decoder.push(header(11));
    expect(() => decoder.read()).toThrow(ProtocolError);
    expect(() => decoder.push(encodeFrame({ a: 1 }))).toThrow(ProtocolError);
  });

  it.each([
    ['a truncated body', Buffer.concat([header(10), Buffer.from('{"a"')]), /4 of 10 body bytes/],
    ['a truncated header', Buffer.from([0, 0]), /2 of 4 header bytes/],
  ])('reports %s at end of stream', (_name, bytes, message) => {
    const decoder = new FrameDecoder();
    expect(decoder.pushAndReadAll(bytes)).toEqual([]);
    expect(() => decoder.end()).toThrow(message);
  });

  it.each([
    ['invalid UTF-8', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]), /not valid UTF-8/],
    ['an overlong UTF-8 encoding', Buffer.from([0x22, 0xc0, 0xaf, 0x22]), /not valid UTF-8/],
    ['invalid JSON', Buffer.from('{"type": '), /not valid JSON/],
    ['a JSON array', Buffer.from('[1,2]'), /not a JSON object \(got an array\)/],
    ['a JSON string', Buffer.from('"ping"'), /not a JSON object \(got string\)/],
    ['JSON null', Buffer.from('null'), /not a JSON object \(got null\)/],
    ['a JSON number', Buffer.from('42'), /not a JSON object \(got number\)/],
    ['a zero-length frame', Buffer.alloc(0), /empty frame/],
  ])('reports %s as INVALID_FRAME', (_name, body, message) => {
    const decoder = new FrameDecoder();
    decoder.push(rawFrame(body));
    let caught: unknown;
    try {
      decoder.read();
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ProtocolError);
    expect((caught as ProtocolError).code).toBe('INVALID_FRAME');
    expect((caught as Error).message).toMatch(message);
  });
});
