/**
 * What a block asks for: a tool call (executor + code), a call of an MCP tool (its
 * function name + arguments, resolved by exc), a task (skill + request), or nothing
 * runnable, with the reason the model will be told.
 */
import type { SkillDef, ToolDef } from '../../runtime/index.js';
import type { Block } from '../../protocol/stream-parser.js';

/** Where a block asks to run: `host` true (outside the sandbox, needs approval) with the model's reason. */
export interface Placement {
  host: boolean;
  reason: string;
}

/** A runnable block, or why it is not. */
export type Action =
  | ({ kind: 'tool'; name: string; executor: string; code: string } & Placement)
  | { kind: 'mcp'; name: string; arguments: Record<string, unknown> }
  | ({ kind: 'task'; skill: SkillDef; request: string } & Placement)
  | { kind: 'invalid'; error: string };

/** The catalog entries agr needs. */
export interface AgrCatalog {
  tools: readonly ToolDef[];
  skills: readonly SkillDef[];
}

/** How blocks are read besides the catalog. */
export interface InterpretOptions {
  /** MCP servers are configured: a tool name the catalog does not have may be an MCP tool (exc decides). */
  mcp?: boolean;
}

/** Interprets one block against the catalog. */
export function interpretBlock(block: Block, catalog: AgrCatalog, maxBlockBytes: number, options: InterpretOptions = {}): Action {
  // Named without angle brackets: a response block never holds a tag but its own (format.ts).
  const tag = block.tag;
  if (block.oversized) {
    return invalid(
      `the ${tag} block is ${block.bytes} bytes, more than the limit of ${maxBlockBytes} bytes ([agr] max_block_bytes); it was not executed. Send a shorter program.`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(block.content);
  } catch (err) {
    return invalid(
      `the ${tag} block is not valid JSON (${(err as Error).message}). Write exactly one JSON object; inside a string, write its closing tag with the slash escaped, as "<\\/${block.tag}>".`,
    );
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return invalid(`the ${tag} block must hold one JSON object`);
  const object = value as Record<string, unknown>;
  return block.tag === 'tool_call' ? toolCall(object, catalog.tools, options.mcp === true) : task(object, catalog.skills);
}

function toolCall(object: Record<string, unknown>, tools: readonly ToolDef[], mcp: boolean): Action {
  const { name } = object;
  if (typeof name !== 'string' || name === '') return invalid('the tool call needs a "name" (one of: ' + names(tools.map((t) => t.name)) + ')');
  const tool = tools.find((t) => t.name === name);
  if (!tool && !mcp) return invalid(`unknown tool "${name.slice(0, 64)}" (available: ${names(tools.map((t) => t.name))})`);
  let args = object.arguments;
  // Some models encode arguments as a JSON string, as OpenAI's native tool calls do.
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch {
      return invalid(tool ? '"arguments" must be an object like {"code": "..."}' : `"arguments" of ${name.slice(0, 64)} must be a JSON object`);
    }
  }
  if (!tool) {
    // An MCP tool takes any object, checked by exc against its schema; no arguments at all is an empty object.
    if (args === undefined) return { kind: 'mcp', name, arguments: {} };
    if (args === null || typeof args !== 'object' || Array.isArray(args)) return invalid(`"arguments" of ${name.slice(0, 64)} must be a JSON object`);
    return { kind: 'mcp', name, arguments: args as Record<string, unknown> };
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return invalid('"arguments" must be an object like {"code": "..."}');
  const code = (args as Record<string, unknown>).code;
  if (typeof code !== 'string') return invalid(`the call to ${name} needs "arguments": {"code": "..."} with the program as a string`);
  if (code.trim() === '') return invalid(`the call to ${name} has empty code; nothing was run`);
  const placement = placementOf(args as Record<string, unknown>, `the call to ${name}`);
  if (typeof placement === 'string') return invalid(placement);
  return { kind: 'tool', name, executor: tool.executor, code, ...placement };
}

/** `host` (a boolean) and `reason` (a string), both optional; a message when either has the wrong type. */
function placementOf(object: Record<string, unknown>, what: string): Placement | string {
  const { host, reason } = object;
  if (host !== undefined && host !== null && typeof host !== 'boolean') return `${what} has "host": ${JSON.stringify(host)}; it must be true or false`;
  if (reason !== undefined && reason !== null && typeof reason !== 'string') return `${what} has a "reason" that is not a string`;
  return { host: host === true, reason: typeof reason === 'string' ? reason.trim() : '' };
}

function task(object: Record<string, unknown>, skills: readonly SkillDef[]): Action {
  const { skill: name, request } = object;
  if (typeof name !== 'string' || name === '') return invalid('the task needs a "skill" (one of: ' + names(skills.map((s) => s.name)) + ')');
  const skill = skills.find((s) => s.name === name);
  if (!skill) return invalid(`unknown skill "${name.slice(0, 64)}" (available: ${names(skills.map((s) => s.name))})`);
  if (typeof request !== 'string' || request.trim() === '') return invalid(`the task for ${name} needs a "request" saying what to do`);
  const placement = placementOf(object, `the task for ${name}`);
  if (typeof placement === 'string') return invalid(placement);
  return { kind: 'task', skill, request, ...placement };
}

function invalid(error: string): Action {
  return { kind: 'invalid', error };
}

function names(list: string[]): string {
  return list.length > 0 ? list.join(', ') : 'none';
}
