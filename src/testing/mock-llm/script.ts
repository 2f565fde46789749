/**
 * What the mock LLM answers: an ordered list of rules, the first one whose `match`
 * fits the request's last message wins. A script is a plain object (tests) or a JSON
 * file (`zino mock-llm --script FILE`).
 */

/** One scripted behaviour. */
export interface MockRule {
  /**
   * Substring that the last message's content must contain. A string of the form
   * "/regex/flags" is a regular expression. Absent: matches every request.
   */
  match?: string;
  /** Role the last message must have. */
  role?: string;
  /** The reply text. @default "" */
  reply?: string;
  /** Explicit chunks of a streamed reply (overrides `reply` and `chunkSize`). */
  chunks?: string[];
  /** Stream this chunk `repeatCount` times (generated as it goes, for replies of many MB). */
  repeatChunk?: string;
  /** How many times `repeatChunk` is streamed. */
  repeatCount?: number;
  /** Characters per streamed chunk when `chunks` is not given. @default 4 */
  chunkSize?: number;
  /** Delay before each streamed chunk (and before a collected reply), in ms. @default 0 */
  delayMs?: number;
  /** Answer with this HTTP status (an OpenAI-style error body) for the first `failTimes` matching calls. */
  status?: number;
  /** How many matching calls get `status` before the rule succeeds. @default every call */
  failTimes?: number;
  /** Error message in the error body. @default "mock error <status>" */
  errorMessage?: string;
  /** Value of the `retry-after` header sent with an error. */
  retryAfter?: string;
  /** Never answer: hold the request open until the client disconnects. */
  hang?: boolean;
  /**
   * Hold the reply (before its first byte) until the test opens this gate
   * (`mock.release(name)`, or `POST /_mock/release {"gate": name}`): silence for as
   * long as a test needs, without guessing a duration.
   */
  gate?: string;
  /** Stream this many chunks, then hold the stream open until the client disconnects. */
  hangAfterChunks?: number;
  /** End the stream (with `[DONE]`) without the chunk that carries `finish_reason`. */
  noFinish?: boolean;
  /** Stream this many chunks, then drop the connection (a stream that breaks mid-reply). */
  dropAfterChunks?: number;
  /** Use the rule at most this many times, then fall through to later rules. */
  times?: number;
  /** Token usage to report. @default estimated from the characters */
  usage?: { prompt_tokens: number; completion_tokens: number };
}

/** A whole script: rules tried in order, then the fallback. */
export interface MockScript {
  rules?: MockRule[];
  /** Used when no rule matches. @default reply "mock reply" */
  fallback?: MockRule;
  /** Model name reported by `/v1/models` and in replies. @default "mock-model" */
  model?: string;
  /** The models `/v1/models` lists (overrides `model` there). An empty list lists none. */
  models?: string[];
  /** Answer 404 ("model not found", as Ollama does) to a chat request for a model not listed. */
  strictModels?: boolean;
  /** Answer `/v1/models` with this HTTP status (e.g. 404: a server without a model list). */
  modelsStatus?: number;
  /** When set, requests must carry `Authorization: Bearer <apiKey>` (else 401). */
  apiKey?: string;
}

/** True when `rule` applies to a request whose last message is `last`. */
export function ruleMatches(rule: MockRule, last: { role?: unknown; content?: unknown } | undefined): boolean {
  if (rule.role !== undefined && last?.role !== rule.role) return false;
  if (rule.match === undefined) return true;
  const content = typeof last?.content === 'string' ? last.content : '';
  const regex = /^\/(.*)\/([a-z]*)$/s.exec(rule.match);
  if (regex) return new RegExp(regex[1] ?? '', regex[2]).test(content);
  return content.includes(rule.match);
}

/** The chunks a rule streams (lazily, so a reply of many MB is never held whole). */
export function* chunksOf(rule: MockRule): Generator<string> {
  if (rule.repeatChunk !== undefined) {
    for (let i = 0; i < (rule.repeatCount ?? 1); i++) yield rule.repeatChunk;
    return;
  }
  if (rule.chunks) {
    yield* rule.chunks;
    return;
  }
  const text = rule.reply ?? '';
  const size = Math.max(1, rule.chunkSize ?? 4);
  const chars = [...text];
  for (let i = 0; i < chars.length; i += size) yield chars.slice(i, i + size).join('');
}

/** The whole reply text of a rule (for collected replies and usage). */
export function replyText(rule: MockRule): string {
  if (rule.repeatChunk !== undefined) return rule.repeatChunk.repeat(rule.repeatCount ?? 1);
  return [...chunksOf(rule)].join('');
}

/** Checks that a parsed JSON file is a usable script; throws with the reason. */
export function parseScript(value: unknown): MockScript {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('a mock script must be a JSON object');
  const script = value as MockScript;
  if (script.rules !== undefined && !Array.isArray(script.rules)) throw new Error('"rules" must be a list');
  for (const [i, rule] of (script.rules ?? []).entries()) {
    if (rule === null || typeof rule !== 'object') throw new Error(`rules[${i}] must be an object`);
  }
  return script;
}
