/**
 * docs/configuration.md, generated from {@link SCHEMA}: every key with its type,
 * default, allowed values and meaning. `npm run docs:config` rewrites the file;
 * test/runtime/config-reference.test.ts fails when it is out of date, so a key
 * cannot be added, renamed or given a new default without the page following.
 *
 * Run as a script (`node dist/src/runtime/config/reference.js`) it writes the page.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { packageRoot } from '../package-root.js';
import { SCHEMA, type AnyKeySpec, type ScalarKeySpec } from './schema.js';

/** Where the page lives, relative to the package root. */
export const CONFIG_REFERENCE_PATH = 'docs/configuration.md';

/**
 * The keys of the contract (the ZINO service reference): their names and defaults
 * are stable. Every other key is ZINO's own addition (marked "ZINO:" in ZINO.toml).
 */
export const CONTRACT_KEYS: ReadonlySet<string> = new Set([
  'daemon.socket',
  'agent.temperature',
  'agent.top_p',
  'agent.max_iterations',
  'rtr.socket',
  'rtr.streaming',
  'api.base_url',
  'api.key',
  'service.model',
  'agr.socket',
  'agr.max_iterations',
  'exc.socket',
  'exc.timeout',
  'tools.dir',
  'skills.dir',
  'sys.socket',
  'sys.template',
  'sys.personality',
  'sys.soft_memory',
  'mem.socket',
  'mem.data_dir',
  'ctx.socket',
  'ctx.history_limit',
  'ctx.hard_memory_top_k',
  'logging.level',
]);

/** More than the schema's one line, where a key needs it ("section.key" → Markdown). */
export const KEY_NOTES: Readonly<Record<string, string>> = {
  'daemon.socket': 'Replaced by `DIR/run/daemon.sock` under `--dir DIR` / `$ZINO_DIR` (as every `socket` key is, with its service name).',
  'api.base_url':
    'Empty: rtr answers every `infer` with a `NOT_CONFIGURED` error saying what to set. `"demo"` selects the built-in demo model; the shipped ZINO.toml sets it so that a fresh checkout answers. The contract leaves it unset.',
  'api.key':
    'Read by rtr, so it must reach the process that runs rtr: prefer `key_file`, or `LLM_API_KEY` in the environment of `npm start` / `zino up` / the zino-rtr unit (an `EnvironmentFile=`); exporting it in the shell of `zino ask` does nothing. A server on localhost or a loopback address needs none. The contract leaves it unset.',
  'api.key_file':
    'Used when `[api] key` is empty, before `LLM_API_KEY`. Only rtr reads it, at start and on SIGHUP; it refuses a file that group or others may read (`chmod 600 FILE`). Put it in the local configuration (`zino init`), e.g. `key_file = "llm.key"` beside it.',
  'service.model': 'Empty: rtr asks the endpoint for its models and uses the only one it serves (else `NOT_CONFIGURED`). The contract leaves it unset.',
  'rtr.max_retries': 'A reply that has started streaming is never retried.',
  'rtr.timeout':
    'One bound for the whole call: a request that fails and is retried, or whose model must first be detected, still ends by then, with `TIMEOUT` saying how many attempts were made.',
  'rtr.max_prompt_bytes':
    "Through the daemon a prompt is at most `[daemon] max_message_bytes` for the message, a quarter of `[limits] max_frame_bytes` for the context, and the system prompt; this bounds what reaches the LLM whoever asks (agr's loop, which grows the prompt with each tool result, and programs calling rtr or agr directly).",
  'limits.request_read_timeout_ms':
    'A deadline, not an idle timeout: bytes arriving do not extend it, so a client trickling its request a byte at a time is answered `TIMEOUT` and closed when it runs out.',
  'limits.max_connections':
    'A new connection past it closes the oldest one whose request has not arrived in full (one that has sent nothing first; a partly sent one gets `OVERLOADED`), so idle or trickling connections cannot lock out ping. Only when every connection is being answered is the new one refused with `OVERLOADED`.',
  'exc.sandbox':
    '`"auto"`: the truthful view this machine can give (exc as root: bubblewrap\'s host view; not root, or no host view: the Landlock view), else bubblewrap\'s private view, else directly; `"bwrap"`: in bubblewrap (host view as root, else private view), refusing to run code without it; `"landlock"`: the Landlock view (Linux 6.12+, python3; no bubblewrap needed; as root each run gets a uid of its own), refusing to run code without it; `"none"`: directly. `capabilities` says which view and why: see [security.md](security.md#the-exc-sandbox).',
  'exc.audit_log':
    'One JSON object a line for every run, sandboxed or on the host, and every host-run decision, written (and fsynced) before the run: see [operations.md](operations.md#audit-log). Created 0600 in a 0700 directory when missing; hidden from sandboxed code. Replaced by `DIR/data/audit.jsonl` under `--dir DIR` / `$ZINO_DIR`. `zino audit` prints it.',
  'exc.audit_max_bytes': 'One rotated file is kept, so the log takes at most about twice this on disk.',
  'approval.mode':
    'A host run is one the model asks for (`"host": true`), or any run when no sandbox can be used (`[exc] sandbox = "none"`, or `"auto"` where no view can be set up). Sandboxed runs never need approval. A call of an MCP tool not annotated read-only, on a server that is not `trusted`, is decided the same way. See [security.md](security.md).',
  'approval.unattended':
    'A caller that did not send `"approvals": true` (every client of the original protocol, `zino ask` without a terminal) cannot answer an approval.',
  'approval.allow_rules':
    'Checked after `mode = "deny"` and before asking. A rule only ever matches a command on one line made of plain words (letters, digits and `_ . / : = @ % + , -`), so no `;`, `&`, `|`, quotes, `$`, redirections or globs: an executable rule (`"uptime"`, `"/usr/bin/systemctl"`) matches when the first word is exactly it, whatever the arguments; a `/regex/` rule when it matches the whole command. A rule on text is not a sandbox: allowing `systemctl` allows `systemctl poweroff`; write the narrowest regex that does the job. Audited as `rule:<n>` (1-based).',
  'approval.host_user':
    "Empty: exc runs an allowed host run itself, as its own user (under `zino up`, the user who started it). Set: exc hands every allowed host run to the privileged runner (`zino serve runner`, `zino-runner.service`) at `[runner] socket`, which checks the run against its decision in the audit log and runs it as this account; with no runner listening, host runs are refused (nothing falls back to exc's own user). exc and the runner check at start that the account exists. See [operations.md](operations.md#host-runs-as-another-account).",
  'runner.socket':
    'Only exc connects to it. Under systemd the directory is 0750 and the socket 0660, both group `zino-runner`, which only zino-exc has (`SupplementaryGroups=`). Not moved by `--dir`: `zino up` starts no runner, so leave `[approval] host_user` empty there.',
  'mem.data_dir': 'Replaced by `DIR/data/mem` under `--dir DIR` / `$ZINO_DIR`. The format is in [storage.md](storage.md).',
  'http.listen':
    'An IPv4 or IPv6 address (`[::1]:8088`) or `localhost`, and a port (0 picks a free one, logged at start). Anything but loopback is refused (exit 78) unless `allow_non_loopback = true`. Under systemd, the unit also allows only loopback IP traffic ([http.md](http.md)).',
  'http.token_file':
    'Under `--dir DIR`: `DIR/data/http.token`. The systemd installation sets `/var/lib/zino-http/http.token`. A token shorter than 16 characters is refused.',
  'http.max_concurrent': 'Counted over `POST /v1/chat/completions`; `GET` requests are cheap and not counted.',
  'logging.level': "One of `trace`, `debug`, `info`, `warn`, `error`, `fatal`; Python's names (`WARNING`, `CRITICAL`, …) also work.",
  'mcp.servers':
    'Each server is one table, `[mcp.servers.NAME]`, with the keys below; its tools reach the model as `NAME__tool`. exc starts them; see [mcp.md](mcp.md).',
  'mcp.servers.NAME.command': 'exc starts it and speaks MCP on its stdin and stdout; its stderr goes to the log.',
  'mcp.servers.NAME.url': 'E.g. `"http://127.0.0.1:9000/mcp"`.',
  'mcp.servers.NAME.tools': 'Absent: every tool the server lists. A tool left out is neither shown to the model nor callable.',
  'mcp.servers.NAME.trusted':
    'false: only tools annotated `readOnlyHint` run without approval; any other call is decided by `[approval]` like a host run (asked, allowed or refused; the allow rules do not apply), see [mcp.md](mcp.md#approval-and-trust). Every call is in the audit log either way.',
};

const KIND_NAMES: Record<AnyKeySpec['kind'], string> = {
  boolean: 'boolean',
  number: 'number',
  integer: 'integer',
  string: 'string',
  path: 'path',
  strings: 'strings',
  env: 'env',
  tables: 'tables',
};

/** The default as it would be written in ZINO.toml (`absent` for a key whose default cannot be written). */
export function tomlLiteral(spec: AnyKeySpec): string {
  const value: unknown = spec.default;
  if (value === null) return 'absent';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') return spec.kind === 'number' && Number.isInteger(value) ? `${value}.0` : String(value);
  if (Array.isArray(value)) return `[${value.map((v) => JSON.stringify(v)).join(', ')}]`;
  if (typeof value === 'object') return Object.keys(value).length === 0 ? '{}' : JSON.stringify(value);
  return typeof value === 'boolean' ? String(value) : JSON.stringify(value);
}

function sizeHint(key: string, value: unknown): string {
  if (!key.endsWith('_bytes') || typeof value !== 'number' || value < 1024 || value % 1024 !== 0) return '';
  return value % (1024 * 1024) === 0 ? ` (${value / (1024 * 1024)} MiB)` : ` (${value / 1024} KiB)`;
}

function allowed(spec: AnyKeySpec): string {
  switch (spec.kind) {
    case 'boolean':
      return '`true`, `false`';
    case 'path':
      if (spec.optional !== true) return 'non-empty; relative to the config file';
      return spec.derived !== undefined ? 'relative to the config file; `""` = the default' : 'relative to the config file';
    case 'strings':
      return spec.maxItems !== undefined ? `list of at most ${spec.maxItems} strings` : 'list of strings';
    case 'env':
      return 'table of strings';
    case 'tables':
      return `one table per NAME: ${spec.name.rule}`;
    case 'string':
      return spec.choices ? spec.choices.map((c) => `\`"${c}"\``).join(', ') : 'any';
    case 'number':
    case 'integer': {
      const whole = spec.kind === 'integer' ? 'integer ' : '';
      if (spec.min !== undefined && spec.max !== undefined) return `${whole}${spec.min} … ${spec.max}`;
      if (spec.min !== undefined) return `${whole}≥ ${spec.min}`;
      if (spec.max !== undefined) return `${whole}≤ ${spec.max}`;
      return spec.kind === 'integer' ? 'integer' : 'any';
    }
  }
}

function defaultCell(key: string, spec: AnyKeySpec): string {
  const none = spec.kind === 'tables' ? ' (none)' : '';
  const literal = `\`${tomlLiteral(spec)}\`${sizeHint(key, spec.default)}${none}`;
  return 'derived' in spec && spec.derived !== undefined ? `${literal}, ${spec.derived}` : literal;
}

function meaning(id: string, spec: AnyKeySpec): string {
  const doc = spec.doc.endsWith('.') ? spec.doc : `${spec.doc}.`;
  const note = KEY_NOTES[id];
  // Tags and placeholders in code spans, so that Markdown shows them as they are.
  const text = doc.replace(/<\/?\w+>(?:\/<\/?\w+>)*|%%\w+%%|\bZINO_\w+|\bLLM_API_KEY\b/g, (m) => `\`${m}\``);
  return (note === undefined ? text : `${text} ${note}`).replace(/\|/g, '\\|');
}

/** The whole page. */
export function renderConfigReference(): string {
  const sections: Readonly<Record<string, Readonly<Record<string, AnyKeySpec>>>> = SCHEMA;
  const out: string[] = [
    '<!-- Generated from src/runtime/config/schema.ts by `npm run docs:config`; do not edit by hand.',
    '     test/runtime/config-reference.test.ts fails when this file is out of date. -->',
    '',
    '# Configuration',
    '',
    'Every ZINO process reads one TOML file. [ZINO.toml](../ZINO.toml) at the top of the',
    'package lists every key below, commented out at its default; uncomment a line to',
    'change it.',
    '',
    '## Which file',
    '',
    '1. `--config FILE` on the command line (what the systemd units pass:',
    '   `/etc/zino/ZINO.toml`);',
    '2. else `$ZINO_CONFIG`;',
    '3. else `./ZINO.toml` in the current directory, when it exists, and on top of it',
    '   the **local configuration** `DIR/ZINO.toml` of the runtime directory (`--dir DIR`,',
    '   else `$ZINO_DIR`; the `zino` command also finds a suite running in `./.zino`),',
    '   when that exists: `zino init` writes it, and so does the first `zino up --dir DIR`',
    '   (`npm start`). A key set there wins over the same key in `./ZINO.toml`; in a',
    '   source checkout this keeps your settings out of the tracked reference file;',
    '4. else no file: every key takes its default.',
    '',
    'A file named by `--config` or `$ZINO_CONFIG` must be readable. Relative paths',
    '(keys of type `path`) are resolved against the directory of the file that sets them;',
    'defaults against that of the first file read, or the current directory when there is',
    'none. An unknown section or key is logged as a',
    'warning (with a "did you mean" for a near miss) and ignored; a value of the wrong',
    'type or out of range stops the process with a message naming the file and the key',
    '(exit status 78, which systemd does not restart on).',
    '',
    'Every number has a maximum, so that no value can turn into its opposite: Node',
    'fires a timer longer than 2^31−1 ms (24.8 days) at once, so durations stop at',
    '2000000000 ms or 2000000 s (23 days, leaving room for the margins services add);',
    'a block or an output stream is held as one string and travels JSON-escaped in one',
    'frame, so those stop at 32 MiB (V8 strings end at 2^29−24 characters).',
    '',
    '`--dir DIR` (else `$ZINO_DIR`) overrides the file for running without root: every',
    'service socket becomes `DIR/run/<service>.sock` and `[mem] data_dir` becomes',
    '`DIR/data/mem`. `zino up --dir .zino` (what `npm start` runs) uses it.',
    '',
    '## Environment variables',
    '',
    '| variable | meaning |',
    '|---|---|',
    '| `ZINO_CONFIG` | the config file, when `--config` is not given |',
    '| `ZINO_DIR` | the runtime directory, when `--dir` is not given (see above) |',
    '| `LLM_API_KEY` | the API key, when `[api] key` and `[api] key_file` are empty; read by rtr, so it belongs in the environment of `npm start` / `zino up` / the zino-rtr unit |',
    '| `ZINO_LOG_LEVEL` | the log level, overriding `[logging] level` |',
    '',
    '## Keys',
    '',
    "The **origin** column says whether a key is the contract's (the ZINO service",
    "reference: its name and default are stable) or ZINO's own addition. Types:",
    '`integer` and `number` (TOML integer or float), `string`, `boolean`, `path` (a',
    'string resolved against the directory of the config file), `strings` (a TOML',
    'array of strings), `env` (a table of strings) and `tables` (one table per NAME).',
  ];
  const header = ['| key | type | default | allowed | origin | meaning |', '|---|---|---|---|---|---|'];
  const row = (id: string, key: string, spec: AnyKeySpec): string =>
    `| \`${key}\` | ${KIND_NAMES[spec.kind]} | ${defaultCell(key, spec)} | ${allowed(spec)} | ${CONTRACT_KEYS.has(id) ? 'contract' : 'ZINO'} | ${meaning(id, spec)} |`;
  for (const [section, keys] of Object.entries(sections)) {
    out.push('', `### \`[${section}]\``, '', ...header);
    const tables: [string, Readonly<Record<string, ScalarKeySpec>>][] = [];
    for (const [key, spec] of Object.entries(keys)) {
      out.push(row(`${section}.${key}`, key, spec));
      if (spec.kind === 'tables') tables.push([`${section}.${key}`, spec.entry]);
    }
    // The keys of each entry of a table of tables, under their own heading.
    for (const [id, entry] of tables) {
      out.push('', `#### \`[${id}.NAME]\``, '', ...header);
      for (const [key, spec] of Object.entries(entry)) out.push(row(`${id}.NAME.${key}`, key, spec));
    }
  }
  out.push('');
  return out.join('\n');
}

/** Writes the page under `root` (the package root by default); returns its path. */
export function writeConfigReference(root = packageRoot()): string {
  const file = path.join(root, CONFIG_REFERENCE_PATH);
  writeFileSync(file, renderConfigReference());
  return file;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.stdout.write(`wrote ${writeConfigReference()}\n`);
}
