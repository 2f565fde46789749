/**
 * The skill pipeline of a `<task>`: the interpreter turns the request into a plan,
 * the fabricator turns "<request> [KCR] <plan>" into one program, exc runs it with
 * the skill's executor.
 */
import type { SkillDef } from '../../runtime/index.js';
import type { Usage } from '../../protocol/rtr.js';
import { inferText, type RtrTarget, type Sampling } from './llm.js';

/** Separator between the request and the interpreter's plan in the fabricator prompt. */
export const KCR = ' [KCR] ';

/** What the pipeline produced before execution. */
export interface Fabrication {
  interpretation: string;
  code: string;
}

/** Runs the interpreter and fabricator steps; execution is the caller's. */
export async function fabricate(
  target: RtrTarget,
  skill: SkillDef,
  request: string,
  sampling: Sampling,
  options: { signal: AbortSignal; requestId: string; onUsage: (u: Usage) => void },
): Promise<Fabrication> {
  const interpretation = (await inferText(target, [...skill.interpreter, { role: 'user', content: request }], sampling, options)).trim();
  const reply = await inferText(target, [...skill.fabricator, { role: 'user', content: `${request}${KCR}${interpretation}` }], sampling, options);
  return { interpretation, code: extractCode(reply) };
}

/** The program in a fabricator reply: the first fenced code block if there is one, else the whole reply. */
export function extractCode(reply: string): string {
  const fenced = /```[\w+-]*[^\S\n]*\n([\s\S]*?)\n?```/.exec(reply);
  return (fenced ? (fenced[1] ?? '') : reply).trim();
}
