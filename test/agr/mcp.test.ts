/** How agr reads a `<tool_call>` of an MCP tool and writes its result for the model. */
import { describe, expect, it } from 'vitest';
import { interpretBlock } from '../../src/services/agr/blocks.js';
import { formatMcpResult } from '../../src/services/agr/mcp.js';
import type { Block } from '../../src/protocol/stream-parser.js';

const catalog = { tools: [], skills: [] };
const block = (content: string): Block => ({ tag: 'tool_call', content, raw: `<tool_call>${content}</tool_call>`, bytes: content.length, oversized: false });

describe('a tool call of an MCP tool', () => {
  it('is left to exc when MCP servers are configured, with its arguments as an object', () => {
    expect(interpretBlock(block('{"name":"files__read_text_file","arguments":{"path":"/srv/a"}}'), catalog, 1000, { mcp: true })).toEqual({
      kind: 'mcp',
      name: 'files__read_text_file',
      arguments: { path: '/srv/a' },
    });
    expect(interpretBlock(block('{"name":"every__get-tiny-image"}'), catalog, 1000, { mcp: true })).toEqual({
      kind: 'mcp',
      name: 'every__get-tiny-image',
      arguments: {},
    });
    expect(interpretBlock(block('{"name":"x__y","arguments":"{\\"a\\":1}"}'), catalog, 1000, { mcp: true })).toEqual({
      kind: 'mcp',
      name: 'x__y',
      arguments: { a: 1 },
    });
  });

  it('must have an object for arguments', () => {
    expect(interpretBlock(block('{"name":"x__y","arguments":[1]}'), catalog, 1000, { mcp: true })).toEqual({
      kind: 'invalid',
      error: '"arguments" of x__y must be a JSON object',
    });
    expect(interpretBlock(block('{"name":"x__y","arguments":"nope"}'), catalog, 1000, { mcp: true })).toEqual({
      kind: 'invalid',
      error: '"arguments" of x__y must be a JSON object',
    });
  });

  it('is an unknown tool when no MCP server is configured', () => {
    expect(interpretBlock(block('{"name":"files__read_text_file","arguments":{}}'), catalog, 1000)).toEqual({
      kind: 'invalid',
      error: 'unknown tool "files__read_text_file" (available: none)',
    });
  });
});

describe('an MCP result for the model', () => {
  it('keeps text verbatim and describes every other kind of content', () => {
    const text = formatMcpResult({
      content: [
        { type: 'text', text: 'line one\nline two' },
        { type: 'image', mimeType: 'image/png', data: 'AAAA' },
        { type: 'audio', mimeType: 'audio/wav', omitted_bytes: 4000 },
        { type: 'resource_link', name: 'README', uri: 'file:///srv/README.md', mimeType: 'text/markdown', description: 'the readme' },
        { type: 'resource', resource: { uri: 'file:///a.txt', mimeType: 'text/plain', text: 'embedded text' } },
        { type: 'resource', resource: { uri: 'file:///a.gz', mimeType: 'application/gzip', blob: 'AAAAAAAA' } },
        { type: 'hologram' },
      ],
    });
    expect(text).toBe(
      [
        'line one\nline two',
        '[image: image/png, 3 bytes; not shown]',
        '[audio: audio/wav, 3000 bytes; not shown]',
        '[resource link: README file:///srv/README.md (text/markdown): the readme]',
        '[resource file:///a.txt (text/plain)]\nembedded text',
        '[resource file:///a.gz: application/gzip, 6 bytes; not shown]',
        '[hologram content; not shown]',
      ].join('\n'),
    );
  });

  it('says so when there is nothing', () => {
    expect(formatMcpResult({ content: [] })).toBe('(no output)');
    expect(formatMcpResult({ content: [{ type: 'text', text: '' }] })).toBe('(no output)');
  });
});
