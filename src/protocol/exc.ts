/** Wire types of zino-exc, the code execution service. */
import { message } from '../runtime/index.js';

/** `{"type":"execute","executor","code"}`: run code. */
export interface ExecuteRequest {
  type: 'execute';
  /** Executor name from tools/ (`bash`, `python3`). */
  executor: string;
  code: string;
  request_id?: string | undefined;
  /**
   * ZINO extra: run on the host, outside the sandbox, subject to `[approval]`. Absent or
   * false: sandboxed (when no sandbox can be used, every run is a host run anyway).
   */
  host?: boolean | undefined;
  /** ZINO extra: why the host is needed, shown to whoever approves (at most {@link MAX_REASON_CHARS} characters). */
  reason?: string | undefined;
  /**
   * ZINO extra: the caller passes `approval_required` frames on to someone who can
   * answer them. Without it a host run that needs a person gets `[approval] unattended`.
   */
  approvals?: boolean | undefined;
  /** ZINO extra: the daemon channel the run belongs to, for the audit log. */
  channel_id?: string | undefined;
}

/** Longest `reason` accepted, in characters; a longer one is cut (the approver sees the code itself). */
export const MAX_REASON_CHARS = 2000;

/** Longest approval `note`, in characters. */
export const MAX_NOTE_CHARS = 2000;

/** What an approval is about when it is a call of an MCP tool rather than a program. */
export interface McpCallAsked {
  /** The `[mcp.servers.<server>]`. */
  server: string;
  /** The tool's name on that server. */
  tool: string;
}

/**
 * Progress frame of `execute` and `call_tool` (sent only to a caller that set
 * `approvals`): a host run, or a call of an MCP tool that needs approval, waits for a
 * person. Answer it with `approve` on a new connection (to the daemon, which passes
 * it on, or to exc) before `expires_at`.
 */
export interface ApprovalRequired {
  type: 'approval_required';
  /** What `approve` names; unique among the pending and recently settled approvals. */
  id: string;
  /** The executor; for an MCP call the tool's function name as the model called it (`files__write_file`). */
  executor: string;
  /** The whole program that would run; for an MCP call its arguments as indented JSON. */
  code: string;
  /** The model's reason ("" when it gave none; an MCP call has none). */
  reason: string;
  /** When an unanswered approval becomes a denial (ISO 8601, UTC). */
  expires_at: string;
  /** ZINO extra: the request the run belongs to. */
  request_id?: string;
  /** ZINO extra: true when the run is on the host because no sandbox can be used here (not because the model asked). */
  no_sandbox?: boolean;
  /** ZINO extra: present when this is a call of an MCP tool (`code` then holds its arguments). */
  mcp?: McpCallAsked;
}

/** One pending approval in an `approvals` reply. */
export interface PendingApproval {
  id: string;
  executor: string;
  /** The program, cut at {@link LISTED_CODE_CHARS} characters unless one approval was asked for by `id`. */
  code: string;
  /** The program's full length, in UTF-8 bytes. */
  code_bytes: number;
  /** True when `code` is cut. */
  code_truncated?: boolean;
  reason: string;
  expires_at: string;
  /** When it was asked (ISO 8601, UTC). */
  asked_at: string;
  request_id: string;
  channel_id?: string;
  no_sandbox?: boolean;
  mcp?: McpCallAsked;
}

/** Characters of each program an `approvals` listing shows (ask for one `id` to see it whole). */
export const LISTED_CODE_CHARS = 4096;

/** `{"type":"approve","id","decision","note"?}`: answer a pending approval. */
export interface ApproveRequest {
  type: 'approve';
  id: string;
  decision: 'allow' | 'deny';
  /** Told to the model with a denial ("the operator denied this: <note>") and kept in the audit log. */
  note?: string | undefined;
  request_id?: string | undefined;
}

/** `{"type":"ok"}`: the answer was taken. */
export interface ApproveReply {
  type: 'ok';
}

/** `{"type":"approvals","id"?}`: the pending approvals (one, whole, when `id` is given). */
export interface ApprovalsRequest {
  type: 'approvals';
  id?: string | undefined;
  request_id?: string | undefined;
}

/** The pending approvals, oldest first. */
export interface ApprovalsReply {
  type: 'approvals';
  pending: PendingApproval[];
  /** How many pending approvals did not fit in the reply (0 or absent: none). */
  omitted?: number;
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
  /** ZINO extra: whether the code ran in the sandbox (bubblewrap or the Landlock launcher). */
  sandboxed?: boolean;
  /** ZINO extra: how the run was allowed, as in the audit log (`sandboxed`, `approved`, `policy:allow`, `rule:2`, …). */
  decision?: string;
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
  /** ZINO extra: the configured mode, whether runs are sandboxed, in which view of the host (when active), and why. */
  sandbox: { mode: 'auto' | 'bwrap' | 'landlock' | 'none'; active: boolean; view?: 'host' | 'private' | 'landlock'; reason: string };
  /** ZINO extra. */
  max_output_bytes: number;
  /**
   * ZINO extra: the `[approval]` policy of host runs, and how many approvals are pending; `host_user` and `runner`
   * (its socket) when host runs go to the privileged runner to act as that account.
   */
  approval?: {
    mode: 'ask' | 'allow' | 'deny';
    unattended: 'deny' | 'allow';
    timeout_s: number;
    rules: number;
    pending: number;
    host_user?: string;
    runner?: string;
  };
  /** ZINO extra: the audit log, and why it cannot be written when it cannot. */
  audit?: { file: string; ok: boolean; problem?: string };
}

/** `{"type":"capabilities"}`. */
export interface ExcCapabilitiesRequest {
  type: 'capabilities';
  request_id?: string | undefined;
}

/** The hints an MCP server gives about a tool (MCP `ToolAnnotations`); none is a promise. */
export interface McpToolAnnotations {
  title?: string;
  /** The tool does not change its environment. A call skips the host-run approval policy. */
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** One MCP tool in `list_tools`. */
export interface McpTool {
  /**
   * The function name the model calls: `<server>__<tool>`, made of `[A-Za-z0-9_-]`, at
   * most 64 characters (a longer or unusual tool name is shortened and made unique).
   */
  name: string;
  /** The `[mcp.servers.<server>]` it comes from. */
  server: string;
  /** Its name on the MCP server (what `call_tool` takes). */
  tool: string;
  title?: string;
  description: string;
  /** The JSON Schema of its arguments (an object schema). */
  input_schema: Record<string, unknown>;
  annotations?: McpToolAnnotations;
  /**
   * Whether a call skips `[approval]`: the server is `trusted`, or the tool is annotated
   * `readOnlyHint`. Otherwise each call is decided like a host run (asked, allowed or refused).
   */
  runs_without_approval: boolean;
}

/** How one configured MCP server is doing. */
export interface McpServerStatus {
  name: string;
  transport: 'stdio' | 'http';
  /** `connecting` (first start or a restart), `up`, `down` (waiting to retry), `disabled` (`enabled = false`). */
  state: 'connecting' | 'up' | 'down' | 'disabled';
  /** Why it is down (or why the last attempt failed). */
  error?: string;
  /** Tools it offers the model (after `tools`, the allow list). */
  tools: number;
  trusted: boolean;
  /** `[mcp.servers.<name>] timeout_s`: the bound on each call. */
  timeout_s: number;
  /** Connections after the first (restarts and reconnections). */
  restarts: number;
  /** When down: milliseconds until the next attempt. */
  retry_in_ms?: number;
  /** A stdio server's process id while it runs. */
  pid?: number;
}

/** `{"type":"list_tools"}` (ZINO): the MCP tools exc can call, and the state of every server. */
export interface ListToolsRequest {
  type: 'list_tools';
  request_id?: string | undefined;
}

/** The reply to `list_tools`. */
export interface ToolsReply {
  type: 'tools';
  /** The tools of every server that is up, in configuration order. */
  tools: McpTool[];
  servers: McpServerStatus[];
}

/**
 * One block of an MCP tool result, as MCP defines it: `text`, `image`, `audio`
 * (base64 `data`), `resource_link`, or `resource` (embedded, with `text` or base64 `blob`).
 * Binary data over `[exc] max_output_bytes` is left out (`omitted_bytes` says how much).
 */
export interface McpContent {
  type: string;
  text?: string;
  data?: string;
  mimeType?: string;
  uri?: string;
  name?: string;
  description?: string;
  resource?: { uri?: string; mimeType?: string; text?: string; blob?: string };
  /** ZINO: the size of binary data left out of this block, in bytes (base64 characters). */
  omitted_bytes?: number;
}

/** `{"type":"call_tool","server","tool","arguments"}` (ZINO): call an MCP tool. */
export interface CallToolRequest {
  type: 'call_tool';
  server: string;
  /** The tool's name on the server (`McpTool.tool`). */
  tool: string;
  /** Checked against the tool's input schema before the call. @default {} */
  arguments?: Record<string, unknown> | undefined;
  request_id?: string | undefined;
  /**
   * ZINO extra: the caller passes `approval_required` frames on to someone who can
   * answer them. Without it a call that needs a person gets `[approval] unattended`.
   */
  approvals?: boolean | undefined;
  /** ZINO extra: the daemon channel the call belongs to, for the audit log. */
  channel_id?: string | undefined;
}

/** The outcome of `call_tool`. A tool that failed is a result with `is_error`, not an error frame. */
export interface CallToolResult {
  type: 'tool_result';
  content: McpContent[];
  /** The tool reported a failure, or the call was refused (`approval` says so). */
  is_error: boolean;
  /**
   * Why it ran or was refused: `trusted` server, `read_only` tool, `approved` (allowed
   * under `[approval]`: by a person, the mode or `unattended`), or `refused` (by the
   * policy or a person; nothing was sent to the server).
   */
  approval: 'trusted' | 'read_only' | 'approved' | 'refused';
  /** ZINO extra: for `approved` and `refused`, how it was decided, as in the audit log (`approved`, `policy:allow`, `denied`, `timeout`, `unattended:deny`, …). */
  decision?: string;
  /** The text was cut at `[exc] max_output_bytes`. */
  truncated?: boolean;
  duration_ms?: number;
}

/** zino-exc's messages. */
export const EXC = {
  execute: message<ExecuteRequest, ExecuteResult, ApprovalRequired>('execute', { result: true }),
  approve: message<ApproveRequest, ApproveReply>('approve', { ok: true }),
  approvals: message<ApprovalsRequest, ApprovalsReply>('approvals', { approvals: true }),
  validate: message<ValidateRequest, ValidationReply>('validate', { validation: true }),
  capabilities: message<ExcCapabilitiesRequest, ExcCapabilities>('capabilities', { capabilities: true }),
  list_tools: message<ListToolsRequest, ToolsReply>('list_tools', { tools: true }),
  call_tool: message<CallToolRequest, CallToolResult, ApprovalRequired>('call_tool', { tool_result: true }),
} as const;
