/**
 * The token budget of a context (`[ctx] max_context_tokens`, 0 = off). Estimated
 * tokens = ceil(characters / 4) over the content of every returned message
 * (characters as UTF-16 code units, JavaScript's `length`). Over budget, drop the
 * oldest history message first, then the lowest-scored hard memory (a whole entry;
 * among equal scores the later one), until it fits. Skill examples always stay,
 * even when they alone exceed the budget.
 *
 * Whatever the token budget, the context's encoded messages are then bounded to a
 * quarter of `[limits] max_frame_bytes` ({@link fitBytes}, same order), so that the
 * prompt (system prompt + context + message, each at most a quarter) fits in a frame.
 */
import { contentChars as chars, messageBytes, type ChatMessage } from '../../runtime/index.js';

/** A hard memory as ctx uses it. */
export interface ScoredMemory {
  messages: ChatMessage[];
  score: number;
}

/** The three parts of a context, in the order they are returned. */
export interface ContextParts {
  /** The skill examples: in ctx the same list for every request until a reload, never changed (see {@link fitBytes}). */
  examples: readonly ChatMessage[];
  /** Best first. */
  hard: ScoredMemory[];
  /** Oldest first. */
  history: ChatMessage[];
}

/** What the budget removed. */
export interface Trimmed {
  parts: ContextParts;
  droppedHistory: number;
  droppedHard: number;
  /** Estimated tokens of what is left. */
  tokens: number;
}

/** The last `limit` messages (all when 0), as mem's `get_history` counts them. */
export function lastMessages(messages: ChatMessage[], limit: number): ChatMessage[] {
  return limit > 0 && messages.length > limit ? messages.slice(-limit) : messages;
}

/** Estimated tokens of `characters`. */
export function estimateTokens(characters: number): number {
  return Math.ceil(characters / 4);
}

/** Applies the budget; `maxTokens` 0 returns `parts` unchanged. */
export function fitBudget(parts: ContextParts, maxTokens: number): Trimmed {
  let total = chars(parts.examples) + parts.hard.reduce((n, h) => n + chars(h.messages), 0) + chars(parts.history);
  if (maxTokens <= 0 || estimateTokens(total) <= maxTokens) return { parts, droppedHistory: 0, droppedHard: 0, tokens: estimateTokens(total) };
  let from = 0;
  while (from < parts.history.length && estimateTokens(total) > maxTokens) total -= (parts.history[from++] as ChatMessage).content.length;
  const hard = [...parts.hard];
  let droppedHard = 0;
  while (hard.length > 0 && estimateTokens(total) > maxTokens) {
    let worst = 0;
    for (let i = 1; i < hard.length; i++) if ((hard[i] as ScoredMemory).score <= (hard[worst] as ScoredMemory).score) worst = i;
    total -= chars((hard[worst] as ScoredMemory).messages);
    hard.splice(worst, 1);
    droppedHard++;
  }
  return {
    parts: { examples: parts.examples, hard, history: parts.history.slice(from) },
    droppedHistory: from,
    droppedHard,
    tokens: estimateTokens(total),
  };
}

function bytesOf(messages: readonly ChatMessage[]): number {
  let n = 0;
  for (const m of messages) n += messageBytes(m);
  return n;
}

/** Sizes of example lists already measured: ctx passes the same list with every request until a reload makes a new one. */
const examplesSized = new WeakMap<readonly ChatMessage[], number>();

/**
 * {@link bytesOf} the skill examples, measured once per list: they are code, full of the newlines and quotes
 * that send {@link messageBytes} the slow way, and sizing them again for every request was 3.5-6 % of ctx's CPU.
 * A list is never changed once made (a reload loads a new one).
 */
function examplesBytes(examples: readonly ChatMessage[]): number {
  let n = examplesSized.get(examples);
  if (n === undefined) examplesSized.set(examples, (n = bytesOf(examples)));
  return n;
}

/**
 * Bounds the encoded size of the context's messages to `maxBytes` (so that the
 * reply, and the prompt built around it, fit in a frame), in the budget's order:
 * oldest history message first, then the lowest-scored hard memory. Examples stay.
 * `examples: 'once'` (ctx's, whose list is never changed once made) sizes the examples once
 * per list; `'anew'`, the default, sizes them every call (a list made for one call, or one
 * that may change, is not to be remembered).
 */
export function fitBytes(trimmed: Trimmed, maxBytes: number, examples: 'once' | 'anew' = 'anew'): Trimmed {
  const { parts } = trimmed;
  let total =
    (examples === 'once' ? examplesBytes(parts.examples) : bytesOf(parts.examples)) +
    parts.hard.reduce((n, h) => n + bytesOf(h.messages), 0) +
    bytesOf(parts.history);
  if (total <= maxBytes) return trimmed;
  let from = 0;
  while (from < parts.history.length && total > maxBytes) total -= messageBytes(parts.history[from++] as ChatMessage);
  const hard = [...parts.hard];
  let droppedHard = 0;
  while (hard.length > 0 && total > maxBytes) {
    let worst = 0;
    for (let i = 1; i < hard.length; i++) if ((hard[i] as ScoredMemory).score <= (hard[worst] as ScoredMemory).score) worst = i;
    total -= bytesOf((hard[worst] as ScoredMemory).messages);
    hard.splice(worst, 1);
    droppedHard++;
  }
  const history = parts.history.slice(from);
  return {
    parts: { examples: parts.examples, hard, history },
    droppedHistory: trimmed.droppedHistory + from,
    droppedHard: trimmed.droppedHard + droppedHard,
    tokens: estimateTokens(chars(parts.examples) + hard.reduce((n, h) => n + chars(h.messages), 0) + chars(history)),
  };
}

/** The context messages: examples, then hard memories' messages, then history. */
export function flatten(parts: ContextParts): ChatMessage[] {
  return [...parts.examples, ...parts.hard.flatMap((h) => h.messages), ...parts.history];
}
