/** Wire types of zino-agr, the agentic loop. */
import { message, type ChatMessage } from '../runtime/index.js';
import type { ApprovalRequired } from './exc.js';
import type { ChunkFrame, Usage } from './rtr.js';

/** `{"type":"run"}`: run the loop over an assembled prompt. */
export interface RunRequest {
  type: 'run';
  messages: ChatMessage[];
  temperature: number;
  top_p: number;
  /** Overrides `[agr] max_iterations`. */
  max_iterations?: number | undefined;
  /** Stream chunks in real time. Default false. */
  stream?: boolean | undefined;
  /** ZINO extra: also send iteration / tool_call / tool_result / usage frames. */
  events?: boolean | undefined;
  /**
   * ZINO extra: pass exc's `approval_required` frames on (the caller relays them to
   * someone who can answer). Without it a host run that needs a person gets
   * `[approval] unattended`.
   */
  approvals?: boolean | undefined;
  /** ZINO extra: the daemon channel of the request, for exc's audit log. */
  channel_id?: string | undefined;
  request_id?: string | undefined;
}

/** Collected answer. */
export interface RunResult {
  type: 'result';
  content: string;
  iterations: number;
  /** ZINO extra: total token usage of the run, when rtr reported it. */
  usage?: Usage;
  /** ZINO extra: true when `max_iterations` stopped the loop while the last reply still called tools (the answer is cut short). */
  limit_reached?: true;
}

/** End of a streamed answer. */
export interface RunDone {
  type: 'done';
  full_text: string;
  iterations: number;
  usage?: Usage;
  /** ZINO extra: as on {@link RunResult}. */
  limit_reached?: true;
}

/** Opt-in event: an iteration starts. */
export interface IterationEvent {
  type: 'iteration';
  n: number;
}

/** Opt-in event: a block is about to run (`mcp`: a tool of an MCP server, by its function name). `host` and `reason` are there when the model asked for the host. */
export type ToolCallEvent =
  | { type: 'tool_call'; kind: 'tool'; name: string; code: string; host?: true; reason?: string }
  | { type: 'tool_call'; kind: 'mcp'; name: string; arguments: Record<string, unknown> }
  | { type: 'tool_call'; kind: 'task'; skill: string; request: string; host?: true; reason?: string }
  | { type: 'tool_call'; kind: 'invalid'; error: string };

/** Opt-in event: a block has run. */
export interface ToolResultEvent {
  type: 'tool_result';
  /** The program's exit code; for an MCP tool 0 (done) or 1 (the tool failed); -1 when nothing ran. */
  exit_code: number;
  /** The text injected into the reply (inside the response block). */
  output: string;
}

/** Opt-in event: token usage of one LLM call. */
export interface UsageEvent extends Usage {
  type: 'usage';
}

/** The opt-in event frames of a run (`"events": true`). */
export type AgrEvent = IterationEvent | ToolCallEvent | ToolResultEvent | UsageEvent;

/** An approval exc asks for, passed on as it came (`"approvals": true`). */
export type { ApprovalRequired } from './exc.js';

/** zino-agr's messages. */
export const AGR = {
  run: message<RunRequest, RunResult | RunDone, ChunkFrame | AgrEvent | ApprovalRequired>('run', { result: true, done: true }),
} as const;
