/**
 * The tools `zino mcp` offers an MCP host, each a call of the ZINO client library:
 * `ask` (the daemon), `search_memory`, `remember` and `history` (mem). Their
 * descriptions are what a host's model reads to choose them, so they say what ZINO
 * is and when each helps. Failures are tool errors (`isError`) whose text starts with
 * the ZINO error code, which `structuredContent.code` also carries.
 */
import type { ZinoClient } from '../../client/index.js';
import { InvalidRequestError, ZinoError } from '../../runtime/index.js';
import { ALL_TAGS, StreamParser } from '../../protocol/stream-parser.js';

/** A tool as MCP lists it. */
export interface ToolDefinition {
  name: string;
  title: string;
  description: string;
  inputSchema: { type: 'object'; properties: Record<string, object>; required?: string[]; additionalProperties?: boolean };
  annotations: { readOnlyHint: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
}

/** An MCP tool result. */
export interface ToolResult {
  [key: string]: unknown;
  content: { type: 'text'; text: string }[];
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
}

/** What a tool call gets besides its arguments. */
export interface ToolContext {
  /** Aborted when the host cancels the call (or goes away): the ZINO request is cancelled all the way down. */
  signal: AbortSignal;
  /** Sends a piece of the answer as a progress notification (when the host asked for progress). */
  progress(text: string): Promise<void>;
}

/** The tools, in the order they are listed. */
export const TOOLS: readonly ToolDefinition[] = [
  {
    name: 'ask',
    title: 'Ask ZINO',
    description:
      'Ask ZINO, an AI agent that lives on a Linux host, to answer a question or do a task there. ZINO can run shell and Python code ' +
      '(in a sandbox) and its own tools on that host, so use it for anything about that machine: disk space, services, logs, files, ' +
      'processes, installed software, or changes to make there. Write the message as you would to a capable administrator of the host. ' +
      'The answer comes back as text; while ZINO works, its text arrives as progress notifications. ' +
      'Give a channel to hold a conversation: the messages of a channel are remembered and fed back on the next ask on it.',
    inputSchema: {
      type: 'object',
      properties: {
        message: { type: 'string', description: 'The question or task, in plain words.' },
        channel: {
          type: 'string',
          description: 'Conversation to continue and store the exchange in (any name, e.g. "ops"). Leave out for a one-off question.',
        },
      },
      required: ['message'],
      additionalProperties: false,
    },
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
  },
  {
    name: 'search_memory',
    title: 'Search ZINO memory',
    description:
      "Search ZINO's long-term memory (notes stored with remember, and facts ZINO was told to keep) for the entries most similar to " +
      'a query, best first, each with a similarity score between 0 and 1. Use it to look up names, settings or decisions about the host ' +
      'before asking, or to check what ZINO already knows.',
    inputSchema: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'Words to look for, e.g. "backup server name".' },
        top_k: { type: 'integer', minimum: 1, maximum: 100, description: 'How many entries to return (default 3).' },
      },
      required: ['query'],
      additionalProperties: false,
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  {
    name: 'remember',
    title: 'Remember in ZINO',
    description:
      "Store a note in ZINO's long-term memory, for ZINO and for later searches: a fact about the host or its users worth keeping " +
      '(e.g. "The backup server is called vault."). ZINO finds it by similarity when a later question is about the same thing. ' +
      'Returns the id of the stored entry.',
    inputSchema: {
      type: 'object',
      properties: {
        text: { type: 'string', description: 'The note, as a complete sentence.' },
        tag: { type: 'string', description: 'A few words that help finding it (optional).' },
      },
      required: ['text'],
      additionalProperties: false,
    },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  },
  {
    name: 'history',
    title: 'ZINO conversation history',
    description:
      'Read the stored messages of one ZINO conversation channel (what was asked on it and what ZINO answered), oldest first. ' +
      'Use it to see what was already said on a channel before continuing it with ask.',
    inputSchema: {
      type: 'object',
      properties: {
        channel: { type: 'string', description: 'The channel name.' },
        limit: { type: 'integer', minimum: 0, description: 'Only the last N messages (0 or absent: all).' },
      },
      required: ['channel'],
      additionalProperties: false,
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
];

/** Runs tool `name`. Throws InvalidRequestError for bad arguments (the caller turns every failure into a tool error). */
export async function runTool(client: ZinoClient, name: string, args: Record<string, unknown>, ctx: ToolContext): Promise<ToolResult> {
  switch (name) {
    case 'ask':
      return ask(client, args, ctx);
    case 'search_memory': {
      const query = text(args, 'query');
      const topK = integer(args, 'top_k', 1, 100);
      const results = await client.mem.searchHard(query, { signal: ctx.signal, ...(topK === undefined ? {} : { topK }) });
      if (results.length === 0) return ok('(nothing found)', { results: [] });
      // The id is a ZINO extra: a mem written from the contract alone sends none, and then none is shown.
      const lines = results.map(
        (r, i) => `${i + 1}. [${r.score.toFixed(4)}] ${typeof r.id === 'number' ? `#${r.id} ` : ''}${r.messages.map((m) => m.content).join(' / ')}`,
      );
      return ok(lines.join('\n'), { results });
    }
    case 'remember': {
      const note = text(args, 'text');
      const tag = optionalText(args, 'tag');
      const id = await client.mem.storeHard([{ role: 'user', content: note }], { signal: ctx.signal, ...(tag === undefined ? {} : { tag }) });
      return ok(`remembered as #${id}`, { id });
    }
    case 'history': {
      const channel = text(args, 'channel');
      const limit = integer(args, 'limit', 0, Number.MAX_SAFE_INTEGER) ?? 0;
      const { messages, omitted } = await client.mem.getHistoryPage(channel, { limit, signal: ctx.signal });
      if (messages.length === 0) return ok(`(no history on "${channel}")`, { messages: [] });
      const note = omitted > 0 ? `(${omitted} older messages left out)\n\n` : '';
      return ok(`${note}${messages.map((m) => `${m.role}: ${m.content}`).join('\n\n')}`, { messages, omitted });
    }
    default:
      throw new InvalidRequestError(`unknown tool "${name.slice(0, 64)}" (available: ${TOOLS.map((t) => t.name).join(', ')})`);
  }
}

/** The answer, streamed as progress, without the `<tool_call>`/`<task>` blocks and their responses (as `zino ask` shows it). */
async function ask(client: ZinoClient, args: Record<string, unknown>, ctx: ToolContext): Promise<ToolResult> {
  const message = text(args, 'message');
  const channel = optionalText(args, 'channel');
  const parser = new StreamParser(Number.MAX_SAFE_INTEGER, ALL_TAGS);
  let answer = '';
  const show = async (events: ReturnType<StreamParser['push']>): Promise<void> => {
    for (const event of events) {
      if (event.kind !== 'text') continue;
      answer += event.text;
      await ctx.progress(event.text);
    }
  };
  for await (const frame of client.askStream(message, { signal: ctx.signal, ...(channel === undefined ? {} : { channelId: channel }) })) {
    if (frame.type === 'chunk') await show(parser.push(frame.delta));
    else if (frame.type === 'response') await show(parser.push(frame.content));
  }
  await show(parser.end());
  return ok(answer.trim() === '' ? '(ZINO gave no answer)' : answer.trim(), {});
}

/** A failure as an MCP tool error: the ZINO code first, then the message. */
export function toolError(err: unknown): ToolResult {
  const zino = err instanceof ZinoError ? err : new ZinoError('INTERNAL', 'internal error (see the zino mcp log)');
  return { content: [{ type: 'text', text: `${zino.code}: ${zino.message}` }], isError: true, structuredContent: { code: zino.code, message: zino.message } };
}

function ok(body: string, structured: Record<string, unknown>): ToolResult {
  return { content: [{ type: 'text', text: body }], ...(Object.keys(structured).length > 0 ? { structuredContent: structured } : {}) };
}

function text(args: Record<string, unknown>, key: string): string {
  const value = args[key];
  if (typeof value !== 'string' || value.trim() === '') throw new InvalidRequestError(`"${key}" must be a non-empty string`);
  return value;
}

function optionalText(args: Record<string, unknown>, key: string): string | undefined {
  const value = args[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new InvalidRequestError(`"${key}" must be a string`);
  return value;
}

function integer(args: Record<string, unknown>, key: string, min: number, max: number): number | undefined {
  const value = args[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidRequestError(`"${key}" must be a whole number from ${min}${max === Number.MAX_SAFE_INTEGER ? ' up' : ` to ${max}`}`);
  }
  return value;
}
