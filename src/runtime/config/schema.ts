/**
 * Every configuration key ZINO reads, with its type, default and meaning.
 *
 * `ResolvedConfig` is what services use: every field present and typed. `SCHEMA`
 * describes how each field is read from ZINO.toml; the compiler checks that the two
 * agree (`SchemaOf<ResolvedConfig>`), so a key cannot be added to one and forgotten
 * in the other. The keys of the contract keep the contract's names and defaults;
 * the others are ZINO's additions. docs/configuration.md is generated from this
 * file (`npm run docs:config`; src/runtime/config/reference.ts).
 */

/** Names of the seven services, which are also their config sections for `socket`. */
export const SERVICE_NAMES = ['daemon', 'rtr', 'agr', 'sys', 'exc', 'mem', 'ctx'] as const;
/** One of the seven services. */
export type ServiceName = (typeof SERVICE_NAMES)[number];

/** Where `[exc]` runs code: the best sandbox this machine has, bubblewrap, the Landlock launcher, or directly. */
export type SandboxMode = 'auto' | 'bwrap' | 'landlock' | 'none';

/** What `[approval] mode` does with a host run: ask a person, allow it, or refuse it. */
export type ApprovalMode = 'ask' | 'allow' | 'deny';

/** What `[approval] unattended` gives a host run whose caller cannot answer approvals. */
export type UnattendedPolicy = 'deny' | 'allow';

/**
 * One MCP server exc connects to (`[mcp.servers.<name>]`): a stdio server
 * (`command`, `args`, `env`, `cwd`) or a Streamable HTTP server (`url`), exactly one
 * of the two.
 */
export interface McpServerConfig {
  /** Program of a stdio server, looked up in PATH. @default "" (not a stdio server) */
  command: string;
  /** Its arguments. @default [] */
  args: readonly string[];
  /** Environment variables added to the few exc passes on (HOME, LOGNAME, PATH, SHELL, TERM, USER). @default {} */
  env: Readonly<Record<string, string>>;
  /** Working directory of the server process, relative to the config file. @default "" (exc's own) */
  cwd: string;
  /** URL of a Streamable HTTP server. @default "" (not an HTTP server) */
  url: string;
  /** false: configured but not started. @default true */
  enabled: boolean;
  /** Bound on connecting and on each tool call, in seconds. @default 60 */
  timeout_s: number;
  /** The only tools offered to the model; `null` (absent) offers all of them. @default null */
  tools: readonly string[] | null;
  /** true: the server's tools run without host approval. @default false */
  trusted: boolean;
}

/** The fully resolved configuration: every key present, typed, defaulted. Paths are absolute. */
export interface ResolvedConfig {
  daemon: {
    /** UDS listen path. @default "/run/zino/daemon.sock" */
    socket: string;
    /** Bound on each call to sys, ctx and mem, in milliseconds. @default 5000 */
    dependency_timeout_ms: number;
    /**
     * Largest inbound `message`, in UTF-8 bytes; a bigger one is refused with
     * INVALID_REQUEST. Also at most a quarter of `[limits] max_frame_bytes`. @default 1048576 (1 MiB)
     */
    max_message_bytes: number;
  };
  agent: {
    /** LLM temperature for inference. @default 0.7 */
    temperature: number;
    /** LLM top_p for inference. @default 1.0 */
    top_p: number;
    /** Value of `%%MAX_ITERATIONS%%` in the system prompt. @default the value of `[agr] max_iterations` */
    max_iterations: number;
  };
  rtr: {
    /** UDS listen path. @default "/run/zino/rtr.sock" */
    socket: string;
    /** Enable streaming support. @default true */
    streaming: boolean;
    /** Retries of a connection error, 429 or 5xx before the first token. @default 2 */
    max_retries: number;
    /** Bound on one whole LLM request (model detection, every attempt and the waits between them), in seconds. @default 600 */
    timeout: number;
    /**
     * Largest prompt sent to the LLM: the UTF-8 bytes of all message contents; a bigger
     * one is refused with INVALID_REQUEST before any HTTP request. @default 8388608 (8 MiB)
     */
    max_prompt_bytes: number;
  };
  api: {
    /** OpenAI-compatible API endpoint; `"demo"` selects the built-in demo model. @default "" (not configured) */
    base_url: string;
    /** API key; falls back to `key_file`, then to the `LLM_API_KEY` environment variable. @default "" */
    key: string;
    /** File holding the API key (read by rtr only; must not be readable by group or others). @default "" (none) */
    key_file: string;
  };
  service: {
    /** Model identifier. @default "" */
    model: string;
  };
  agr: {
    /** UDS listen path. @default "/run/zino/agr.sock" */
    socket: string;
    /** Default maximum of agentic loop iterations. @default 5 */
    max_iterations: number;
    /** Largest `<tool_call>`/`<task>` block executed, in bytes. @default 262144 (256 KiB) */
    max_block_bytes: number;
  };
  exc: {
    /** UDS listen path. @default "/run/zino/exc.sock" */
    socket: string;
    /** Execution timeout, in seconds. @default 30 */
    timeout: number;
    /** Cap on each of stdout and stderr, in bytes. @default 1048576 (1 MiB) */
    max_output_bytes: number;
    /** Bound on what one run may write: its working directory, and in the sandbox each of /tmp and /dev/shm, in bytes. @default 268435456 (256 MiB) */
    max_disk_bytes: number;
    /** `"auto"` (bubblewrap when installed), `"bwrap"` (required) or `"none"`. @default "auto" */
    sandbox: SandboxMode;
    /** JSON Lines file recording every run and every host-run decision. @default beside `[mem] data_dir`: `<its parent>/audit.jsonl` */
    audit_log: string;
    /** Size at which the audit log is rotated to `<audit_log>.1` (replacing the previous one), in bytes. @default 67108864 (64 MiB) */
    audit_max_bytes: number;
  };
  approval: {
    /** Host runs: `"ask"` a person, `"allow"` them (trusted automation) or `"deny"` them. @default "ask" */
    mode: ApprovalMode;
    /** Time a person has to answer an approval; unanswered, it is a denial. In seconds. @default 300 */
    timeout_s: number;
    /** What a host run gets under `mode = "ask"` when its caller cannot answer approvals. @default "deny" */
    unattended: UnattendedPolicy;
    /** Host runs allowed without asking: an executable name, or `/regex/` on the whole one-line command. @default [] */
    allow_rules: readonly string[];
    /** The account host runs act as (used by the privileged runner); empty: exc's own. @default "" */
    host_user: string;
  };
  runner: {
    /** UDS listen path of the privileged runner (`zino serve runner`), which exc uses when `[approval] host_user` is set. @default "/run/zino-runner/runner.sock" */
    socket: string;
  };
  tools: {
    /** Directory of tool definitions (`*.json`). @default "tools" */
    dir: string;
  };
  skills: {
    /** Directory of skill definitions (`*.json`). @default "skills" */
    dir: string;
  };
  sys: {
    /** UDS listen path. @default "/run/zino/sys.sock" */
    socket: string;
    /** Path of the system prompt template. @default "SYSTEM.md" */
    template: string;
    /** Text for `%%PERSONALITY%%`. @default "" */
    personality: string;
    /** Initial soft memory content. @default "" */
    soft_memory: string;
  };
  mem: {
    /** UDS listen path. @default "/run/zino/mem.sock" */
    socket: string;
    /** Directory for persistent storage. @default "data/mem" */
    data_dir: string;
  };
  ctx: {
    /** UDS listen path. @default "/run/zino/ctx.sock" */
    socket: string;
    /** Max chat history messages to include. @default 50 */
    history_limit: number;
    /** Number of hard memory results per search. @default 3 */
    hard_memory_top_k: number;
    /** Budget of estimated tokens (characters / 4) for the context; 0 turns it off. @default 0 */
    max_context_tokens: number;
  };
  logging: {
    /** Log level (trace, debug, info, warn, error, fatal; Python names accepted). @default "info" */
    level: string;
  };
  http: {
    /** Run the OpenAI-compatible HTTP front end (`zino up` starts it; `zino install-systemd` installs its unit). @default false */
    enabled: boolean;
    /** `host:port` to listen on; a loopback address unless `allow_non_loopback`. @default "127.0.0.1:8088" */
    listen: string;
    /** Allow `listen` on an address other than loopback. @default false */
    allow_non_loopback: boolean;
    /** File holding the bearer token (created 0640 with a random one when missing). @default "<data dir>/http.token" */
    token_file: string;
    /** Largest request body, in bytes; bigger gets 413. @default 4194304 (4 MiB) */
    max_body_bytes: number;
    /** Chat completions served at once; more get 429. @default 64 */
    max_concurrent: number;
  };
  mcp: {
    /** The MCP servers whose tools the agent may call, by name (`[mcp.servers.<name>]`). @default {} (none) */
    servers: Readonly<Record<string, McpServerConfig>>;
  };
  limits: {
    /** Largest frame body accepted or sent, in bytes. @default 16777216 (16 MiB) */
    max_frame_bytes: number;
    /** Bound on connecting to another service's socket, in milliseconds. @default 2000 */
    connect_timeout_ms: number;
    /** Time a client has to send its request frame after connecting, in milliseconds. @default 30000 */
    request_read_timeout_ms: number;
    /** Time in-flight requests get to finish on SIGTERM, in milliseconds. @default 10000 */
    shutdown_grace_ms: number;
    /** Connections a service serves at once; more get an OVERLOADED error. @default 1024 */
    max_connections: number;
    /** Bytes of partly received requests a service holds at once (at least max_frame_bytes). @default 64 MiB */
    max_receive_bytes: number;
    /** How long a connection between ZINO services is kept open for the next request, in milliseconds; 0: one request per connection. @default 2000 */
    keep_alive_ms: number;
  };
}

/**
 * How one key is read: its kind, default, bounds and one line of documentation.
 * `derived` says how a default that depends on other keys is computed; `check`
 * returns what is wrong with a string (or each string of a list), or undefined.
 */
export type KeySpec<T> = [T] extends [boolean]
  ? { kind: 'boolean'; default: T; doc: string }
  : [T] extends [number]
    ? { kind: 'number' | 'integer'; default: T; min?: number; max?: number; doc: string; derived?: string }
    : [T] extends [string]
      ? // `derived`: how the default follows from other keys, for the docs. `optional`: a path key whose default "" means "not set" (it is resolved only when given).
        {
          kind: 'string' | 'path';
          default: T;
          doc: string;
          choices?: readonly string[];
          derived?: string;
          optional?: boolean;
          check?: (value: string) => string | undefined;
        }
      : [T] extends [readonly string[] | null]
        ? { kind: 'strings'; default: T; doc: string; maxItems?: number; check?: (value: string) => string | undefined }
        : [T] extends [Readonly<Record<string, string>>]
          ? { kind: 'env'; default: T; doc: string }
          : [T] extends [Readonly<Record<string, infer E>>]
            ? TablesSpec<E>
            : never;

/**
 * A table of tables (`[mcp.servers.<name>]`): any number of entries, each named by
 * the operator and read with `entry`. Entry names must match `name`.
 */
export interface TablesSpec<E> {
  kind: 'tables';
  default: Readonly<Record<string, E>>;
  doc: string;
  /** The keys of one entry. */
  entry: { [K in keyof E]-?: KeySpec<E[K]> };
  /** What an entry name may be, and the same in words for messages. */
  name: { pattern: RegExp; rule: string };
  /** What is wrong with a whole entry (keys that only make sense together), or `undefined`. */
  // A method, not a function property: entries are checked as plain records by the loader.
  check?(entry: Readonly<E>): string | undefined;
}

/** A key holding one value (not a table of tables). */
export type ScalarKeySpec =
  KeySpec<boolean> | KeySpec<number> | KeySpec<string> | KeySpec<readonly string[] | null> | KeySpec<Readonly<Record<string, string>>>;

/** Any key's spec. */
export type AnyKeySpec = ScalarKeySpec | AnyTablesSpec;

/** A table-of-tables spec, whatever its entry type. */
export interface AnyTablesSpec {
  kind: 'tables';
  default: Readonly<Record<string, unknown>>;
  doc: string;
  entry: Readonly<Record<string, ScalarKeySpec>>;
  name: { pattern: RegExp; rule: string };
  check?(entry: Readonly<Record<string, unknown>>): string | undefined;
}

/** The schema type: one {@link KeySpec} per key of {@link ResolvedConfig}. */
export type SchemaOf<C> = { [S in keyof C]: { [K in keyof C[S]]: KeySpec<C[S][K]> } };

const MiB = 1024 * 1024;

/**
 * The largest duration any key may name, in milliseconds: Node's timers hold at
 * most 2^31−1 ms (about 24.8 days) and fire at once, after 1 ms, beyond it. The
 * bound is a round 2·10^9 ms (23 days) so that the margins services add to a
 * configured duration (agr waits for exc 15 s longer than `[exc] timeout`, `zino up`
 * 2 s longer than `[limits] shutdown_grace_ms`) stay under the limit too.
 */
export const MAX_DURATION_MS = 2_000_000_000;
/** The same bound for keys in seconds. */
export const MAX_DURATION_S = MAX_DURATION_MS / 1000;
/**
 * The largest text a key may let one process hold in one string, in bytes: a block
 * or an output stream travels JSON-escaped (up to 6 characters a byte) in one frame
 * and V8 strings end at 2^29−24 characters; 32 MiB × 2 streams × 6 stays under that.
 */
export const MAX_TEXT_BYTES = 32 * MiB;

const socket = (name: string): KeySpec<string> => ({ kind: 'path', default: `/run/zino/${name}.sock`, doc: 'UDS listen path' });

/**
 * The keys of one `[mcp.servers.<name>]` table. The name prefixes the server's tools
 * (`files__read_file`), so it is what an OpenAI function name may hold, without `__`.
 */
const MCP_SERVER: TablesSpec<McpServerConfig> = {
  kind: 'tables',
  default: {},
  doc: 'MCP servers whose tools the agent may call, one table [mcp.servers.NAME] each',
  name: { pattern: /^(?=.{1,32}$)[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*$/, rule: '1-32 letters, digits, - and single _ (not at either end)' },
  entry: {
    command: { kind: 'string', default: '', doc: 'Program of a stdio server (looked up in PATH); give command or url' },
    args: { kind: 'strings', default: [], doc: 'Arguments of command' },
    env: { kind: 'env', default: {}, doc: 'Environment variables for command, added to HOME, LOGNAME, PATH, SHELL, TERM and USER' },
    cwd: { kind: 'path', default: '', optional: true, doc: "Working directory of command (default: exc's own)" },
    url: { kind: 'string', default: '', doc: 'URL of a Streamable HTTP server; give command or url' },
    enabled: { kind: 'boolean', default: true, doc: 'false: configured but not started' },
    timeout_s: { kind: 'integer', default: 60, min: 1, max: MAX_DURATION_S, doc: 'Bound on connecting and on each tool call (seconds)' },
    tools: { kind: 'strings', default: null, doc: 'The only tools offered to the model (default: all)' },
    trusted: { kind: 'boolean', default: false, doc: 'true: its tools run without host approval' },
  },
  check(server) {
    if ((server.command === '') === (server.url === '')) return 'needs either command (a stdio server) or url (a Streamable HTTP server), not both';
    if (server.url !== '' && !/^https?:\/\/[^/\s]/.test(server.url)) return `url must be an http:// or https:// URL, got "${server.url}"`;
    return undefined;
  },
};

/** Every key, in the order ZINO.toml documents them. */
export const SCHEMA: SchemaOf<ResolvedConfig> = {
  daemon: {
    socket: socket('daemon'),
    dependency_timeout_ms: { kind: 'integer', default: 5000, min: 1, max: MAX_DURATION_MS, doc: 'Bound on each call to sys, ctx and mem (ms)' },
    max_message_bytes: {
      kind: 'integer',
      default: MiB,
      min: 1,
      max: 1024 * MiB,
      doc: 'Largest inbound message (UTF-8 bytes); bigger is refused. Also at most 1/4 of [limits] max_frame_bytes',
    },
  },
  agent: {
    temperature: { kind: 'number', default: 0.7, min: 0, max: 2, doc: 'LLM temperature for inference' },
    top_p: { kind: 'number', default: 1.0, min: 0, max: 1, doc: 'LLM top_p for inference' },
    max_iterations: {
      kind: 'integer',
      default: 5,
      min: 1,
      max: 100,
      doc: 'Value of %%MAX_ITERATIONS%% in the system prompt',
      derived: 'defaults to [agr] max_iterations',
    },
  },
  rtr: {
    socket: socket('rtr'),
    streaming: { kind: 'boolean', default: true, doc: 'Enable streaming support' },
    max_retries: { kind: 'integer', default: 2, min: 0, max: 10, doc: 'Retries of connection errors, 429 and 5xx before the first token' },
    timeout: {
      kind: 'number',
      default: 600,
      min: 1,
      max: MAX_DURATION_S,
      doc: 'Bound on one whole LLM request, retries and the waits between them included (seconds)',
    },
    max_prompt_bytes: {
      kind: 'integer',
      default: 8 * MiB,
      min: 1024,
      max: 1024 * MiB,
      doc: 'Largest prompt sent to the LLM (UTF-8 bytes of all message contents); bigger is refused before sending',
    },
  },
  api: {
    base_url: { kind: 'string', default: '', doc: 'OpenAI-compatible API endpoint ("demo" = built-in demo model)' },
    key: { kind: 'string', default: '', doc: 'API key (falls back to key_file, then to the LLM_API_KEY environment variable)' },
    key_file: { kind: 'path', default: '', optional: true, doc: 'File holding the API key, read by rtr only; it must be mode 0600 or stricter' },
  },
  service: {
    model: { kind: 'string', default: '', doc: 'Model identifier' },
  },
  agr: {
    socket: socket('agr'),
    max_iterations: { kind: 'integer', default: 5, min: 1, max: 100, doc: 'Default max agentic loop iterations' },
    max_block_bytes: { kind: 'integer', default: 256 * 1024, min: 64, max: MAX_TEXT_BYTES, doc: 'Largest <tool_call>/<task> block executed (bytes)' },
  },
  exc: {
    socket: socket('exc'),
    timeout: { kind: 'integer', default: 30, min: 1, max: MAX_DURATION_S, doc: 'Execution timeout (seconds)' },
    max_output_bytes: { kind: 'integer', default: MiB, min: 1024, max: MAX_TEXT_BYTES, doc: 'Cap on each of stdout and stderr (bytes)' },
    max_disk_bytes: {
      kind: 'integer',
      default: 256 * MiB,
      min: MiB,
      max: 1024 * 1024 * MiB,
      doc: 'Bound on what one run may write: working dir, and sandboxed /tmp and /dev/shm each (bytes)',
    },
    sandbox: { kind: 'string', default: 'auto', choices: ['auto', 'bwrap', 'landlock', 'none'], doc: 'Sandbox: "auto", "bwrap", "landlock" or "none"' },
    audit_log: {
      kind: 'path',
      default: '',
      optional: true,
      derived: 'beside [mem] data_dir: `<its parent>/audit.jsonl`',
      doc: 'JSON Lines audit log of every run and host-run decision (0600, append-only, fsynced)',
    },
    audit_max_bytes: {
      kind: 'integer',
      default: 64 * MiB,
      min: 64 * 1024,
      max: 1024 * 1024 * MiB,
      doc: 'Size at which the audit log is rotated to <audit_log>.1, replacing the previous one (bytes)',
    },
  },
  approval: {
    mode: { kind: 'string', default: 'ask', choices: ['ask', 'allow', 'deny'], doc: 'Host runs: "ask" a person, "allow" them, or "deny" them' },
    timeout_s: { kind: 'integer', default: 300, min: 1, max: 7 * 24 * 3600, doc: 'Time a person has to answer an approval; unanswered is denied (seconds)' },
    unattended: {
      kind: 'string',
      default: 'deny',
      choices: ['deny', 'allow'],
      doc: 'What a host run gets under mode "ask" when its caller cannot answer approvals',
    },
    allow_rules: {
      kind: 'strings',
      default: [],
      maxItems: 1000,
      check: checkAllowRule,
      doc: 'Host runs allowed without asking: an executable, or /regex/ matching the whole one-line command',
    },
    host_user: { kind: 'string', default: '', check: checkUserName, doc: "Account host runs act as (the privileged runner); empty = exc's own" },
  },
  runner: {
    socket: { kind: 'path', default: '/run/zino-runner/runner.sock', doc: 'UDS listen path of the privileged runner (used when [approval] host_user is set)' },
  },
  tools: {
    dir: { kind: 'path', default: 'tools', doc: 'Directory containing tool definitions' },
  },
  skills: {
    dir: { kind: 'path', default: 'skills', doc: 'Directory containing skill definitions' },
  },
  sys: {
    socket: socket('sys'),
    template: { kind: 'path', default: 'SYSTEM.md', doc: 'Path to the system prompt template' },
    personality: { kind: 'string', default: '', doc: 'Personality text for %%PERSONALITY%%' },
    soft_memory: { kind: 'string', default: '', doc: 'Initial soft memory content' },
  },
  mem: {
    socket: socket('mem'),
    data_dir: { kind: 'path', default: 'data/mem', doc: 'Directory for persistent storage' },
  },
  ctx: {
    socket: socket('ctx'),
    history_limit: { kind: 'integer', default: 50, min: 0, max: 100_000, doc: 'Max chat history messages to include' },
    hard_memory_top_k: { kind: 'integer', default: 3, min: 0, max: 1000, doc: 'Number of hard memory results per search' },
    max_context_tokens: { kind: 'integer', default: 0, min: 0, max: 100_000_000, doc: 'Token budget of the context (chars/4); 0 = off' },
  },
  logging: {
    level: { kind: 'string', default: 'info', doc: 'Log level (ZINO_LOG_LEVEL overrides)' },
  },
  http: {
    enabled: { kind: 'boolean', default: false, doc: 'Run the OpenAI-compatible HTTP front end (zino serve http)' },
    listen: { kind: 'string', default: '127.0.0.1:8088', doc: 'host:port to listen on (loopback unless allow_non_loopback)' },
    allow_non_loopback: { kind: 'boolean', default: false, doc: 'Allow listen on an address other than loopback' },
    token_file: {
      kind: 'path',
      default: 'data/http.token',
      doc: 'File holding the bearer token; created 0640 with a random token when missing',
      derived: 'defaults to http.token beside [mem] data_dir',
    },
    max_body_bytes: { kind: 'integer', default: 4 * MiB, min: 1024, max: 1024 * MiB, doc: 'Largest request body (bytes); bigger gets 413' },
    max_concurrent: { kind: 'integer', default: 64, min: 1, max: 65_536, doc: 'Chat completions served at once; more get 429' },
  },
  mcp: {
    servers: MCP_SERVER,
  },
  limits: {
    max_frame_bytes: { kind: 'integer', default: 16 * MiB, min: 1024, max: 0xffff_ffff, doc: 'Largest frame accepted or sent (bytes)' },
    connect_timeout_ms: { kind: 'integer', default: 2000, min: 1, max: MAX_DURATION_MS, doc: 'Bound on connecting to a service socket (ms)' },
    request_read_timeout_ms: {
      kind: 'integer',
      default: 30000,
      min: 1,
      max: MAX_DURATION_MS,
      doc: 'Time a client has, from connecting, to send its whole request (ms)',
    },
    shutdown_grace_ms: { kind: 'integer', default: 10000, min: 0, max: MAX_DURATION_MS, doc: 'Time in-flight requests get on SIGTERM (ms)' },
    max_connections: { kind: 'integer', default: 1024, min: 1, max: 65_536, doc: 'Connections a service serves at once' },
    max_receive_bytes: {
      kind: 'integer',
      default: 64 * MiB,
      min: MiB,
      max: 0xffff_ffff,
      doc: 'Bytes of partly received large requests a service holds at once; at least max_frame_bytes (more get OVERLOADED)',
    },
    keep_alive_ms: {
      kind: 'integer',
      default: 2000,
      min: 0,
      max: 600_000,
      doc: 'How long a connection between ZINO services waits open for its next request (ms); 0: one request per connection, and a service closes every connection after its reply',
    },
  },
};

/** A user name as useradd(8) accepts it, or a numeric uid. */
const USER_NAME = /^(?:[a-z_][a-z0-9_-]{0,31}\$?|\d{1,10})$/;

function checkUserName(value: string): string | undefined {
  if (value === '' || USER_NAME.test(value)) return undefined;
  return `must be a user name (lowercase letters, digits, "_" and "-", at most 32) or a numeric uid, got ${JSON.stringify(value)}`;
}

/** An allow rule: an executable (a name or an absolute path, no blanks) or `/regex/` that compiles. */
function checkAllowRule(value: string): string | undefined {
  if (value.length >= 2 && value.startsWith('/') && value.endsWith('/')) {
    try {
      new RegExp(value.slice(1, -1), 'u');
      return undefined;
    } catch (err) {
      return `holds an invalid regular expression ${JSON.stringify(value)}: ${(err as Error).message}`;
    }
  }
  if (/^[\w.+@:/-]{1,255}$/u.test(value) && !value.endsWith('/')) return undefined;
  return `holds ${JSON.stringify(value)}, which is neither an executable (a name or path without blanks or shell characters) nor a /regular expression/`;
}
