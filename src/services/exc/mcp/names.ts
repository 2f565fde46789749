/**
 * The function names the model calls MCP tools by: `<server>__<tool>`. A server name
 * has no `__` (the config checks it), so the prefix is unambiguous; the tool part is
 * made to fit OpenAI's function name rule (`^[A-Za-z0-9_-]{1,64}$`), which models
 * trained on function definitions expect.
 */
import { createHash } from 'node:crypto';

/** OpenAI's limit on a function name. */
export const MAX_FUNCTION_NAME = 64;

/**
 * The function name of `tool` on `server`, not yet in `taken` (which it is added to).
 * Characters outside `[A-Za-z0-9_-]` become `_`; a name over 64 characters keeps its
 * start and ends with a hash of the full tool name; a clash gets `_2`, `_3`, ….
 */
export function functionName(server: string, tool: string, taken: Set<string>): string {
  let base = `${server}__${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  if (base.length > MAX_FUNCTION_NAME) base = `${base.slice(0, MAX_FUNCTION_NAME - 9)}_${createHash('sha256').update(tool).digest('hex').slice(0, 8)}`;
  let name = base;
  for (let n = 2; taken.has(name); n++) name = `${base.slice(0, MAX_FUNCTION_NAME - String(n).length - 1)}_${n}`;
  taken.add(name);
  return name;
}
