/** The pure parts of exc's MCP client: function names, the approval gate, bounding results. */
import { describe, expect, it } from 'vitest';
import { boundContent, cutUtf8 } from '../../src/services/exc/mcp/content.js';
import { gateMcpCall } from '../../src/services/exc/mcp/gate.js';
import { functionName } from '../../src/services/exc/mcp/names.js';

describe('MCP function names', () => {
  it('are server__tool, made to fit [A-Za-z0-9_-]{1,64}, and unique', () => {
    const taken = new Set<string>();
    expect(functionName('files', 'read_text_file', taken)).toBe('files__read_text_file');
    expect(functionName('files', 'get.weather/now', taken)).toBe('files__get_weather_now');
    expect(functionName('files', 'get_weather_now', taken)).toBe('files__get_weather_now_2');
    const long = functionName('files', 'x'.repeat(100), taken);
    expect(long).toMatch(/^files__x{48}_[0-9a-f]{8}$/);
    expect(long).toHaveLength(64);
    expect(functionName('files', `${'x'.repeat(100)}y`, taken)).not.toBe(long);
    for (const name of taken) expect(name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
  });
});

describe('gateMcpCall', () => {
  it('lets a trusted server and a read-only tool through, and refuses anything else with a reason the model reads', () => {
    expect(gateMcpCall('files', 'write_file', true, undefined)).toEqual({ approval: 'trusted' });
    expect(gateMcpCall('files', 'read_file', false, { readOnlyHint: true })).toEqual({ approval: 'read_only' });
    for (const annotations of [undefined, {}, { readOnlyHint: false }, { destructiveHint: false }]) {
      const decision = gateMcpCall('files', 'write_file', false, annotations);
      expect(decision.approval).toBe('refused');
      expect(decision.message).toMatch(/^needs host approval: the tool "write_file" of the MCP server "files" .* trusted = true in \[mcp\.servers\.files\]/);
    }
  });
});

describe('bounding an MCP result', () => {
  it('keeps what fits, cuts text on a character boundary and says so', () => {
    expect(boundContent([{ type: 'text', text: 'hello', annotations: { x: 1 } }], undefined, 100)).toEqual({
      content: [{ type: 'text', text: 'hello' }],
      truncated: false,
    });
    const cut = boundContent(
      [
        { type: 'text', text: 'aé'.repeat(10) },
        { type: 'text', text: 'never' },
      ],
      undefined,
      8,
    );
    expect(cut.truncated).toBe(true);
    expect(cut.content).toEqual([
      { type: 'text', text: 'aéaé' + 'a' },
      { type: 'text', text: '\n[zino-exc: MCP result truncated at 8 bytes]' },
    ]);
    expect(cutUtf8('é', 1)).toBe('');
  });

  it('leaves out binary data that does not fit, keeping its size', () => {
    const { content } = boundContent(
      [
        { type: 'image', mimeType: 'image/png', data: 'A'.repeat(50) },
        { type: 'resource', resource: { uri: 'file:///x', blob: 'B'.repeat(80) } },
      ],
      undefined,
      100,
    );
    expect(content).toEqual([
      { type: 'image', mimeType: 'image/png', data: 'A'.repeat(50) },
      { type: 'resource', resource: { uri: 'file:///x' }, omitted_bytes: 80 },
    ]);
  });

  it('shows structured content as JSON text when there is no content', () => {
    expect(boundContent([], { temperature: 21 }, 100).content).toEqual([{ type: 'text', text: '{"temperature":21}' }]);
  });
});
