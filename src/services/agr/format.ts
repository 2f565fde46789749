/** How results are written back into the model's text. */
import type { BlockTag } from '../../protocol/stream-parser.js';

/** The fields of an exc result agr uses. */
export interface ExecResult {
  exit_code: number;
  stdout: string;
  stderr: string;
  validation?: { ok: boolean; errors: string } | undefined;
}

/**
 * stdout, then a `[stderr]` section, then `[exit code: N]` when non-zero, and
 * `(no output)` when there is nothing at all. Static analysis findings are shown
 * only when the program failed, where they may explain why.
 */
export function formatResult(result: ExecResult): string {
  const parts: string[] = [];
  if (result.stdout !== '') parts.push(result.stdout.replace(/\n$/, ''));
  if (result.stderr !== '') parts.push(`[stderr]\n${result.stderr.replace(/\n$/, '')}`);
  if (result.exit_code !== 0) {
    if (result.validation && !result.validation.ok && result.validation.errors) parts.push(`[static analysis]\n${result.validation.errors}`);
    parts.push(`[exit code: ${result.exit_code}]`);
  }
  return parts.length > 0 ? parts.join('\n') : '(no output)';
}

/**
 * The block injected right after a `<tool_call>` or `<task>` block. The body is
 * {@link neutraliseMarkup}d: a response block ends only where agr ends it.
 */
export function responseBlock(tag: BlockTag, body: string): string {
  const name = tag === 'task' ? 'task_response' : 'tool_response';
  return `\n<${name}>\n${neutraliseMarkup(body)}\n</${name}>\n`;
}

/**
 * A `<` that begins one of ZINO's tags, opening or closing, in any case and with
 * any whitespace a lenient reader (or a model) might accept: `<tool_call>`,
 * `</ Tool_Response >`, `<task attr>`. The parser itself recognises only the exact
 * lowercase forms; this is deliberately wider.
 */
const MARKUP = /<(?=\s*\/?\s*(?:tool_call|task|tool_response|task_response)(?!\w))/gi;

/**
 * Makes text that did not come from the model (program output, error messages,
 * later MCP and HTTP content) unable to open or close a block: the `<` of every
 * ZINO tag becomes `&lt;`, so `</tool_response>` reads `&lt;/tool_response>`.
 * Everything else is left exactly as it was.
 */
export function neutraliseMarkup(text: string): string {
  return text.replace(MARKUP, '&lt;');
}

/** The body of a response block for a block that could not run. */
export function errorBody(message: string): string {
  return `error: ${message}`;
}
