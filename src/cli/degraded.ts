/**
 * Telling the user when an answer is not what it looks like: the daemon's
 * `degraded` field (an answer cut short by the iteration limit, made without tools
 * because agr was down, or without the system prompt, the context, the memories or
 * the history) as lines for stderr, and whether the answer counts as cut short
 * (exit status 3, INCOMPLETE).
 */
import type { DoneFrame, ResponseFrame } from '../protocol/daemon.js';

/** What to tell the user about one answer. */
export interface DegradedReport {
  /** Lines for stderr, each a whole sentence. */
  lines: string[];
  /** The answer was cut short: the iteration limit stopped it, or tool calls it made could not run. */
  incomplete: boolean;
}

const WITHOUT: Readonly<Record<string, string>> = {
  system_prompt: 'the system prompt (sys did not answer)',
  context: 'its context: examples, memories and history (ctx did not answer)',
  hard_memories: 'the stored memories (mem did not answer ctx)',
  history: "the channel's history (mem did not answer ctx)",
};

/** The report for a terminal frame; no lines when nothing was missing. */
export function degradedReport(frame: DoneFrame | ResponseFrame, maxIterations?: number): DegradedReport {
  const degraded: unknown = frame.degraded;
  const parts = Array.isArray(degraded) ? degraded.filter((d): d is string => typeof d === 'string') : [];
  const lines: string[] = [];
  let incomplete = false;
  if (parts.includes('max_iterations')) {
    incomplete = true;
    const limit = maxIterations === undefined ? '' : ` (${maxIterations})`;
    lines.push(`the answer was cut short: the model was still calling tools when the iteration limit${limit} was reached ([agr] max_iterations).`);
  }
  if (parts.includes('tools')) {
    const text = frame.type === 'done' ? frame.full_text : frame.content;
    const calledTools = typeof text === 'string' && /<tool_call>|<task>/.test(text);
    incomplete ||= calledTools;
    lines.push(
      calledTools
        ? 'answered without tools: agr could not be reached, so the tool calls in this answer were not run and it is incomplete.'
        : 'answered without tools: agr could not be reached, so the model answered directly and could run nothing.',
    );
  }
  const without = parts.filter((p) => p in WITHOUT).map((p) => WITHOUT[p]);
  if (without.length > 0) lines.push(`answered without ${without.join(', ')}.`);
  return { lines, incomplete };
}
