/**
 * Rendering SYSTEM.md: each placeholder is replaced in a single pass, so text
 * that a value brings in (a soft memory mentioning "%%TOOL_LIST%%") is never
 * expanded again.
 */
import type { SkillDef, ToolDef } from '../../runtime/index.js';
import type { McpTool } from '../../protocol/exc.js';

/** Everything a rendered prompt is made of. */
export interface PromptParts {
  template: string;
  personality: string;
  tools: readonly ToolDef[];
  /** The MCP tools exc can call (listed after the executors). @default none */
  mcpTools?: readonly McpTool[];
  skills: readonly SkillDef[];
  maxIterations: number;
  softMemory: string;
}

/** The placeholders of the contract. */
export const PLACEHOLDERS = ['PERSONALITY', 'TOOL_LIST', 'SKILL_LINES', 'MAX_ITERATIONS', 'SOFT_MEMORIES'] as const;

const PATTERN = new RegExp(`%%(${PLACEHOLDERS.join('|')})%%`, 'g');

/** Renders the template; blank runs left by empty values collapse to one empty line. */
export function renderPrompt(parts: PromptParts): string {
  const values: Record<(typeof PLACEHOLDERS)[number], string> = {
    PERSONALITY: parts.personality.trim(),
    TOOL_LIST: toolList(parts.tools, parts.mcpTools),
    SKILL_LINES: skillLines(parts.skills),
    MAX_ITERATIONS: String(parts.maxIterations),
    SOFT_MEMORIES: parts.softMemory.trim(),
  };
  const text = parts.template.replace(PATTERN, (_match, name: (typeof PLACEHOLDERS)[number]) => values[name]);
  return text.replace(/\n[ \t]*\n(?:[ \t]*\n)+/g, '\n\n').trim();
}

/**
 * One OpenAI function definition per line, as JSON: the format that open models
 * trained on `<tool_call>` blocks (Hermes, Qwen) expect in their system prompt. The
 * executors come first, then the MCP tools under the names exc gives them
 * (`files__read_text_file`), with their input schema as `parameters`.
 */
export function toolList(tools: readonly ToolDef[], mcpTools: readonly McpTool[] = []): string {
  const definitions = [
    ...tools.map((tool) => ({ name: tool.name, description: tool.description, parameters: tool.parameters })),
    ...mcpTools.map((tool) => ({ name: tool.name, description: tool.description, parameters: withoutDialect(tool.input_schema) })),
  ];
  return definitions.map((fn) => JSON.stringify({ type: 'function', function: fn })).join('\n');
}

/** A schema without its `$schema` (noise for the model, a dozen times over). */
function withoutDialect(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

/** One line per skill: `- name: description (writes <executor> code)`. */
export function skillLines(skills: readonly SkillDef[]): string {
  return skills.map((skill) => `- ${skill.name}: ${skill.description} (writes ${skill.executor} code)`).join('\n');
}
