/**
 * An MCP tool result as exc passes it on: the content blocks with only the fields
 * ZINO reads, and bounded like program output. Text past `[exc] max_output_bytes`
 * (all blocks together) is cut, on a character boundary, with a note saying so;
 * binary data (images, audio, blobs) that does not fit the same budget is left out,
 * its size kept in `omitted_bytes`.
 */
import type { McpContent } from '../../../protocol/exc.js';

/** Bounded content, and whether anything was cut. */
export interface BoundedContent {
  content: McpContent[];
  truncated: boolean;
}

/** Bounds `blocks` (a tool result's `content`, plus its `structuredContent` when there is no content). */
export function boundContent(blocks: readonly unknown[], structured: unknown, maxBytes: number): BoundedContent {
  const source = blocks.length === 0 && structured !== undefined ? [{ type: 'text', text: JSON.stringify(structured) }] : blocks;
  let budget = maxBytes;
  let truncated = false;
  const content: McpContent[] = [];
  for (const raw of source) {
    const block = pick(raw);
    // Text (of the block or of its embedded resource) is cut at the budget; binary data
    // that does not fit is left out whole (half an image is no image).
    for (const holder of [block, block.resource]) {
      if (holder?.text === undefined) continue;
      if (Buffer.byteLength(holder.text) > budget) {
        holder.text = cutUtf8(holder.text, budget);
        truncated = true;
      }
      budget -= Buffer.byteLength(holder.text);
    }
    if (block.data !== undefined) {
      if (block.data.length > budget) {
        block.omitted_bytes = block.data.length;
        delete block.data;
      } else budget -= block.data.length;
    }
    if (block.resource?.blob !== undefined) {
      if (block.resource.blob.length > budget) {
        block.omitted_bytes = block.resource.blob.length;
        delete block.resource.blob;
      } else budget -= block.resource.blob.length;
    }
    content.push(block);
    if (truncated) break;
  }
  if (truncated) content.push({ type: 'text', text: `\n[zino-exc: MCP result truncated at ${maxBytes} bytes]` });
  return { content, truncated };
}

/** The fields of a content block ZINO knows, each only when it has the right type. */
function pick(raw: unknown): McpContent {
  const value = (raw !== null && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const block: McpContent = { type: typeof value.type === 'string' ? value.type : 'unknown' };
  for (const key of ['text', 'data', 'mimeType', 'uri', 'name', 'description'] as const) {
    const field = value[key];
    if (typeof field === 'string') block[key] = field;
  }
  const resource = value.resource;
  if (resource !== null && typeof resource === 'object') {
    const r = resource as Record<string, unknown>;
    block.resource = {};
    for (const key of ['uri', 'mimeType', 'text', 'blob'] as const) {
      const field = r[key];
      if (typeof field === 'string') block.resource[key] = field;
    }
  }
  return block;
}

/** The longest prefix of `text` of at most `maxBytes` UTF-8 bytes that ends on a character boundary. */
export function cutUtf8(text: string, maxBytes: number): string {
  const buffer = Buffer.from(text);
  if (buffer.length <= maxBytes) return text;
  let end = Math.max(0, maxBytes);
  // A continuation byte (10xxxxxx) cannot start a character: back up to the start of the one it belongs to.
  while (end > 0 && ((buffer[end] ?? 0) & 0xc0) === 0x80) end--;
  return buffer.subarray(0, end).toString('utf8');
}
