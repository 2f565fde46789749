/** Wire types of zino-exc, the code execution service. */
import { message } from '../runtime/index.js';

/** `{"type":"execute","executor","code"}`: run code. */
export interface ExecuteRequest {
  type: 'execute';
  /** Executor name from tools/ (`bash`, `python3`). */
  executor: string;
  code: string;
  request_id?: string | undefined;
}

/** The outcome of `execute`. */
export interface ExecuteResult {
  type: 'result';
  /** The program's exit status; 128+N when killed by signal N; 124 on timeout; 127 for an unknown executor. */
  exit_code: number;
  stdout: string;
  stderr: string;
  /** ZINO extra: the time limit stopped the program. */
  timed_out?: boolean;
  /** ZINO extra: stdout or stderr exceeded `[exc] max_output_bytes`; the program was stopped. */
  truncated?: boolean;
  /** ZINO extra: what static analysis said, when it found problems (it never blocks execution). */
  validation?: { ok: false; errors: string };
  /** ZINO extra: wall time in milliseconds. */
  duration_ms?: number;
  /** ZINO extra: whether the code ran in the bubblewrap sandbox. */
  sandboxed?: boolean;
}

/** `{"type":"validate","executor","code"}`: static analysis only. */
export interface ValidateRequest {
  type: 'validate';
  executor: string;
  code: string;
  request_id?: string | undefined;
}

/** The outcome of `validate`: ok when it passes or no validator is configured or installed. */
export interface ValidationReply {
  type: 'validation';
  ok: boolean;
  errors: string;
}

/** One executor in `capabilities`. */
export interface ExecutorInfo {
  command: string[];
  file_extension: string;
  static_analysis: string[] | null;
  validator_available: boolean;
  /** ZINO extra: the tool function name the model calls. */
  tool: string;
}

/** `{"type":"capabilities"}` reply. */
export interface ExcCapabilities {
  type: 'capabilities';
  executors: Record<string, ExecutorInfo>;
  /** Execution timeout in seconds. */
  timeout: number;
  /** ZINO extra: the configured mode, whether bubblewrap is used, and why not. */
  sandbox: { mode: 'auto' | 'bwrap' | 'none'; active: boolean; reason: string };
  /** ZINO extra. */
  max_output_bytes: number;
}

/** `{"type":"capabilities"}`. */
export interface ExcCapabilitiesRequest {
  type: 'capabilities';
  request_id?: string | undefined;
}

/** zino-exc's messages. */
export const EXC = {
  execute: message<ExecuteRequest, ExecuteResult>('execute', { result: true }),
  validate: message<ValidateRequest, ValidationReply>('validate', { validation: true }),
  capabilities: message<ExcCapabilitiesRequest, ExcCapabilities>('capabilities', { capabilities: true }),
} as const;
