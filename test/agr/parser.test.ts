import { describe, expect, it } from 'vitest';
import { StreamParser, parseAll, type ParseEvent } from '../../src/protocol/stream-parser.js';
import { rng } from '../helpers/random.js';

/** Parses `pieces` in order and normalises: text concatenated between blocks. */
function parsePieces(pieces: string[], max = 1024): ParseEvent[] {
  const parser = new StreamParser(max);
  const events: ParseEvent[] = [];
  for (const piece of pieces) events.push(...parser.push(piece));
  events.push(...parser.end());
  return normalise(events);
}

function normalise(events: ParseEvent[]): ParseEvent[] {
  const out: ParseEvent[] = [];
  for (const e of events) {
    const last = out[out.length - 1];
    if (e.kind === 'text' && last?.kind === 'text') last.text += e.text;
    else out.push(e.kind === 'text' ? { kind: 'text', text: e.text } : e);
  }
  return out;
}

const call = (json: string) => `<tool_call>${json}</tool_call>`;

describe('StreamParser semantics', () => {
  it('forwards plain text and captures a tool call', () => {
    expect(parseAll(`Checking.\n${call('{"name":"execute_bash","arguments":{"code":"ls"}}')}\nDone.`, 1024)).toEqual([
      { kind: 'text', text: 'Checking.\n' },
      {
        kind: 'block',
        block: {
          tag: 'tool_call',
          content: '{"name":"execute_bash","arguments":{"code":"ls"}}',
          raw: call('{"name":"execute_bash","arguments":{"code":"ls"}}'),
          bytes: 49,
          oversized: false,
        },
      },
      { kind: 'text', text: '\nDone.' },
    ]);
  });

  it('captures a task block and two blocks in one reply', () => {
    const events = parseAll(`a<task>{"skill":"bash","request":"x"}</task>b${call('{}')}c`, 1024);
    expect(events.map((e) => (e.kind === 'text' ? e.text : `[${e.block.tag}:${e.block.content}]`))).toEqual([
      'a',
      '[task:{"skill":"bash","request":"x"}]',
      'b',
      '[tool_call:{}]',
      'c',
    ]);
  });

  it('passes through a < that is not a tag, and near-tags', () => {
    const text = 'if a < b and <tool> or <task_response> or <tool_cal> or </tool_call> or << or <t>';
    expect(parseAll(text, 1024)).toEqual([{ kind: 'text', text }]);
  });

  it('keeps a lone high surrogate at the end of the stream (regression: end() dropped it)', () => {
    expect(parsePieces(['abc\uD83D'])).toEqual([{ kind: 'text', text: 'abc\uD83D' }]);
    expect(parseAll('x\uD83D', 1024)).toEqual([{ kind: 'text', text: 'x\uD83D' }]);
    expect(parsePieces(['a\uD83D', '\uDE00b'])).toEqual([{ kind: 'text', text: 'a\uD83D\uDE00b' }]);
  });

  it('flushes <tool at the end of the stream as text', () => {
    expect(parsePieces(['hello <tool'])).toEqual([{ kind: 'text', text: 'hello <tool' }]);
    expect(parsePieces(['hello <'])).toEqual([{ kind: 'text', text: 'hello <' }]);
  });

  it('flushes an unclosed block at the end as text and does not emit it', () => {
    expect(parsePieces(['x <tool_call>{"name":', '"execute_bash"'])).toEqual([{ kind: 'text', text: 'x <tool_call>{"name":"execute_bash"' }]);
  });

  it('ends a block at the first closing tag, even inside a JSON string', () => {
    const events = parseAll(`${call('{"code":"echo \'</tool_call>\'"}')}`, 1024);
    expect(events[0]).toMatchObject({ kind: 'block', block: { content: '{"code":"echo \'' } });
    // The escaped form stays inside the block and decodes to the same text.
    const escaped = parseAll(call('{"code":"echo \'<\\/tool_call>\'"}'), 1024);
    expect(escaped).toHaveLength(1);
    const block = escaped[0] as Extract<ParseEvent, { kind: 'block' }>;
    expect(JSON.parse(block.block.content)).toEqual({ code: "echo '</tool_call>'" });
  });

  it('treats the other kind of closing tag as content', () => {
    const events = parseAll('<task>{"request":"</tool_call>"}</task>', 1024);
    expect(events).toEqual([
      expect.objectContaining({ kind: 'block', block: expect.objectContaining({ tag: 'task', content: '{"request":"</tool_call>"}' }) }),
    ]);
  });

  it('marks a block larger than the limit as oversized and keeps only its head', () => {
    const big = 'x'.repeat(100);
    const events = parsePieces([`${call(big)}after`], 40);
    expect(events).toEqual([
      {
        kind: 'block',
        block: {
          tag: 'tool_call',
          content: 'x'.repeat(40),
          raw: `<tool_call>${'x'.repeat(40)}\n[... 60 bytes omitted]\n</tool_call>`,
          bytes: 100,
          oversized: true,
        },
      },
      { kind: 'text', text: 'after' },
    ]);
  });

  it('keeps memory bounded for a huge unclosed block', () => {
    const parser = new StreamParser(1000);
    parser.push('<tool_call>');
    for (let i = 0; i < 1000; i++) parser.push('y'.repeat(10_000));
    const [flushed] = parser.end();
    expect(flushed).toEqual({ kind: 'text', text: `<tool_call>${'y'.repeat(1000)}\n[... 9999000 bytes omitted]\n` });
  });
});

const FRAGMENTS = [
  '\uD83D',
  'Hello',
  ' world',
  ' ',
  '\n',
  '<',
  '>',
  '</',
  '<tool',
  '<tool_call>',
  '</tool_call>',
  '<task>',
  '</task>',
  '<tool_cal',
  '<ta',
  '</task',
  '{"name":"execute_bash","arguments":{"code":"ls -la"}}',
  '{"skill":"bash","request":"df"}',
  'é',
  '€',
  '🎉',
  '日本',
  '<tool_response>',
  '<<',
  'a<b',
  '</tool_c',
  'x'.repeat(30),
];

function randomReply(random: () => number): string {
  const n = 1 + Math.floor(random() * 25);
  let out = '';
  for (let i = 0; i < n; i++) out += FRAGMENTS[Math.floor(random() * FRAGMENTS.length)];
  return out;
}

/** Splits `text` at random code-unit positions (surrogate pairs too: the parser must cope). */
function randomChunks(text: string, random: () => number): string[] {
  const pieces: string[] = [];
  for (let at = 0; at < text.length;) {
    const size = 1 + Math.floor(random() * 8);
    pieces.push(text.slice(at, at + size));
    at += size;
  }
  return pieces;
}

describe('StreamParser is exact under any chunking', () => {
  it('gives the same result when a reply is split at every possible position', () => {
    const reply = `Let me see <tool_call>{"name":"execute_bash","arguments":{"code":"echo é🎉"}}</tool_call> then <task>{"skill":"bash","request":"x"}</task> <tool and a < b`;
    const whole = parsePieces([reply]);
    for (let i = 0; i <= reply.length; i++) {
      expect(parsePieces([reply.slice(0, i), reply.slice(i)])).toEqual(whole);
      for (let j = i; j <= reply.length; j += 7) expect(parsePieces([reply.slice(0, i), reply.slice(i, j), reply.slice(j)])).toEqual(whole);
    }
  });

  it('gives the unchunked parse for random chunkings of many random replies, oversized blocks included', () => {
    const random = rng(1234);
    let blocks = 0;
    let oversized = 0;
    for (let n = 0; n < 3000; n++) {
      const reply = randomReply(random);
      const max = [8, 40, 1024][n % 3] as number;
      const whole = parsePieces([reply], max);
      blocks += whole.filter((e) => e.kind === 'block').length;
      oversized += whole.filter((e) => e.kind === 'block' && e.block.oversized).length;
      for (let k = 0; k < 5; k++) expect(parsePieces(randomChunks(reply, random), max)).toEqual(whole);
      // One character at a time, too.
      expect(parsePieces([...reply], max)).toEqual(whole);
    }
    // The generator really exercises blocks and the size limit.
    expect(blocks).toBeGreaterThan(400); // about 480 with the shared PRNG and this seed
    expect(oversized).toBeGreaterThan(100);
  });

  it('loses no text: forwarded text plus raw blocks rebuild every reply without oversized blocks', () => {
    const random = rng(99);
    for (let n = 0; n < 500; n++) {
      const reply = randomReply(random);
      const events = parsePieces(randomChunks(reply, random), 1 << 20);
      expect(events.map((e) => (e.kind === 'text' ? e.text : e.block.raw)).join('')).toBe(reply);
    }
  });
});
