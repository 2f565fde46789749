/**
 * The catalog: tool definitions from `[tools] dir/*.json` and skill definitions
 * from `[skills] dir/*.json`, shared by sys, exc, agr and ctx. A malformed file is
 * reported (logged and listed in `problems`) and skipped, never a crash.
 *
 * Tool file: `{ "description", "parameters"?, "meta": { "executor", "command"?,
 * "file_extension"?, "static_analysis"? } }` (an OpenAI-style `{"type":"function",
 * "function":{…}}` wrapper is accepted too). Its function name is `execute_<executor>`.
 *
 * Skill file: `{ "name"?, "description", "meta": { "executor" }, "interpreter": [messages],
 * "fabricator": [messages] }`.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from './log.js';
import { parseMessages, type ChatMessage } from './messages.js';
import { textOf } from './validate.js';

/** A tool the model can call: one executor of exc. */
export interface ToolDef {
  /** Function name the model calls: `execute_<executor>`. */
  name: string;
  description: string;
  /** JSON Schema of the function's arguments. */
  parameters: Record<string, unknown>;
  /** Executor name used by exc (`bash`, `python3`). */
  executor: string;
  /** Command that runs a code file; the file's path is appended. */
  command: string[];
  /** Extension of the temporary code file, with its dot (`.sh`). */
  fileExtension: string;
  /** Static analysis command (the file's path is appended), or `null`. */
  staticAnalysis: string[] | null;
  /** File it was loaded from. */
  file: string;
}

/** A skill: a two-step pipeline (interpreter, fabricator) that ends in code run by an executor. */
export interface SkillDef {
  name: string;
  description: string;
  executor: string;
  /** Prompt of the interpreter step; the request is appended as a user message. */
  interpreter: ChatMessage[];
  /** Prompt of the fabricator step, with example pairs; `"<request> [KCR] <interpretation>"` is appended. */
  fabricator: ChatMessage[];
  file: string;
}

/** What was loaded and what was skipped. */
export interface Catalog {
  tools: ToolDef[];
  skills: SkillDef[];
  /** One line per skipped file or ignored field, also logged. */
  problems: string[];
}

const NAME = /^[A-Za-z0-9_.+-]{1,64}$/;

const DEFAULT_PARAMETERS = {
  type: 'object',
  properties: { code: { type: 'string', description: 'The complete program to run.' } },
  required: ['code'],
};

/** Loads both directories. Missing directories give empty lists and a problem line. */
export async function loadCatalog(dirs: { tools: string; skills: string }, log?: Logger): Promise<Catalog> {
  const problems: string[] = [];
  const tools: ToolDef[] = [];
  const skills: SkillDef[] = [];
  for (const { file, data } of await readJsonFiles(dirs.tools, problems)) {
    const tool = parseTool(data, file, problems);
    if (!tool) continue;
    if (tools.some((t) => t.executor === tool.executor)) problems.push(`${file}: executor "${tool.executor}" is already defined; file skipped`);
    else tools.push(tool);
  }
  for (const { file, data } of await readJsonFiles(dirs.skills, problems)) {
    const skill = parseSkill(data, file, problems);
    if (!skill) continue;
    if (skills.some((s) => s.name === skill.name)) problems.push(`${file}: skill "${skill.name}" is already defined; file skipped`);
    else skills.push(skill);
  }
  for (const problem of problems) log?.warn({ problem }, 'catalog problem');
  return { tools, skills, problems };
}

async function readJsonFiles(dir: string, problems: string[]): Promise<{ file: string; data: unknown }[]> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => n.endsWith('.json')).sort();
  } catch (err) {
    problems.push(`${dir}: cannot read the directory (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    return [];
  }
  const out: { file: string; data: unknown }[] = [];
  for (const name of names) {
    const file = path.join(dir, name);
    try {
      out.push({ file, data: JSON.parse(await readFile(file, 'utf8')) });
    } catch (err) {
      problems.push(`${file}: not readable JSON (${(err as Error).message}); file skipped`);
    }
  }
  return out;
}

function asObject(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function argv(value: unknown): string[] | undefined {
  if (typeof value === 'string' && value.trim() !== '') return value.trim().split(/\s+/);
  if (Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === 'string' && v !== '')) return value as string[];
  return undefined;
}

/** Parses one tool file's JSON; returns `undefined` (and records why) when it is unusable. */
export function parseTool(data: unknown, file: string, problems: string[]): ToolDef | undefined {
  const root = asObject(data);
  if (!root) return skip(problems, file, 'a tool file must hold a JSON object');
  const fn = asObject(root.function) ?? root;
  const meta = asObject(root.meta);
  if (!meta) return skip(problems, file, 'missing "meta" object');
  const executor = meta.executor;
  if (typeof executor !== 'string' || !NAME.test(executor)) return skip(problems, file, 'meta.executor must be a name of letters, digits, _ . + -');
  const name = `execute_${executor}`;
  if (fn.name !== undefined && fn.name !== name) problems.push(`${file}: name "${textOf(fn.name)}" ignored; tool functions are named ${name}`);
  const command = meta.command === undefined ? [executor] : argv(meta.command);
  if (!command) return skip(problems, file, 'meta.command must be a command string or a list of strings');
  const ext = meta.file_extension ?? '';
  if (typeof ext !== 'string' || !/^(\.[A-Za-z0-9]{1,16})?$/.test(ext)) return skip(problems, file, 'meta.file_extension must look like ".sh"');
  let staticAnalysis: string[] | null = null;
  if (meta.static_analysis !== undefined && meta.static_analysis !== null && meta.static_analysis !== '') {
    staticAnalysis = argv(meta.static_analysis) ?? null;
    if (!staticAnalysis) return skip(problems, file, 'meta.static_analysis must be a command string or a list of strings');
  }
  const parameters = fn.parameters === undefined ? DEFAULT_PARAMETERS : asObject(fn.parameters);
  if (!parameters) return skip(problems, file, '"parameters" must be a JSON Schema object');
  const description = typeof fn.description === 'string' ? fn.description : `Run ${executor} code and return its output.`;
  return { name, description, parameters, executor, command, fileExtension: ext, staticAnalysis, file };
}

/** Parses one skill file's JSON; returns `undefined` (and records why) when it is unusable. */
export function parseSkill(data: unknown, file: string, problems: string[]): SkillDef | undefined {
  const root = asObject(data);
  if (!root) return skip(problems, file, 'a skill file must hold a JSON object');
  const name = root.name ?? path.basename(file, '.json');
  if (typeof name !== 'string' || !NAME.test(name)) return skip(problems, file, 'name must be letters, digits, _ . + -');
  const executor = asObject(root.meta)?.executor ?? root.executor;
  if (typeof executor !== 'string' || !NAME.test(executor)) return skip(problems, file, 'meta.executor must name an executor');
  let interpreter: ChatMessage[];
  let fabricator: ChatMessage[];
  try {
    interpreter = parseMessages(root.interpreter ?? [], 'interpreter');
    fabricator = parseMessages(root.fabricator ?? [], 'fabricator');
  } catch (err) {
    return skip(problems, file, (err as Error).message);
  }
  const description = typeof root.description === 'string' ? root.description : `Write and run ${executor} code for a request.`;
  return { name, description, executor, interpreter, fabricator, file };
}

function skip(problems: string[], file: string, why: string): undefined {
  problems.push(`${file}: ${why}; file skipped`);
  return undefined;
}

/** The user/assistant example pairs of a fabricator prompt (what ctx puts in the context). */
export function fabricatorExamples(skill: SkillDef): ChatMessage[] {
  const out: ChatMessage[] = [];
  const list = skill.fabricator;
  for (let i = 0; i + 1 < list.length; i++) {
    const user = list[i] as ChatMessage;
    const assistant = list[i + 1] as ChatMessage;
    if (user.role === 'user' && assistant.role === 'assistant') {
      out.push(user, assistant);
      i++;
    }
  }
  return out;
}
