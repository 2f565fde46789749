/**
 * `zino audit [--since DURATION] [--json]`: prints exc's audit log (`[exc] audit_log`,
 * and the rotated `<file>.1` before it), oldest first. It reads the files directly,
 * so it works with the services stopped, for whoever may read them (the log is 0600,
 * owned by the user exc runs as: under systemd, `sudo zino audit`).
 */
import { readFileSync } from 'node:fs';
import { EXIT } from '../../runtime/exit.js';
import { cliConfig, fail, type ConfigOptions } from '../config.js';

/** Options of `zino audit`. */
export interface AuditOptions extends ConfigOptions {
  since?: string;
  json?: boolean;
}

/** Adds `audit` to `program`; `withConfig` adds `--config` and `--dir`. */
/** `30m` → milliseconds; undefined when it is not a duration. */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)\s*(s|m|h|d|w)$/.exec(text.trim());
  if (!match) return undefined;
  const unit = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }[match[2] as 's' | 'm' | 'h' | 'd' | 'w'];
  return Number(match[1]) * unit;
}

export function auditCommand(options: AuditOptions): void {
  const config = cliConfig(options);
  let since = -Infinity;
  if (options.since !== undefined) {
    const ms = parseDuration(options.since);
    if (ms === undefined) fail(`--since takes a duration such as 90s, 30m, 12h or 7d, got ${JSON.stringify(options.since)}`, EXIT.USAGE);
    since = Date.now() - ms;
  }
  const file = config.exc.audit_log;
  const texts: string[] = [];
  for (const name of [`${file}.1`, file]) {
    try {
      texts.push(readFileSync(name, 'utf8'));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') continue;
      const hint = code === 'EACCES' ? ': it is readable only by the user exc runs as (under systemd: sudo zino audit)' : '';
      fail(`cannot read the audit log ${name} (${code ?? (err as Error).message})${hint}`);
    }
  }
  if (texts.length === 0 && !options.json) {
    process.stdout.write(`The audit log ${file} does not exist yet: nothing has run.\n`);
    return;
  }
  let shown = 0;
  for (const line of texts.join('').split('\n')) {
    if (line.trim() === '') continue;
    let record: Record<string, unknown>;
    try {
      record = JSON.parse(line) as Record<string, unknown>;
    } catch {
      // A line cut by a crash mid-write: say so rather than hide it.
      if (!options.json) process.stdout.write(`(unreadable line: ${line.slice(0, 80)})\n`);
      continue;
    }
    if (typeof record.time !== 'string' || Date.parse(record.time) < since) continue;
    shown++;
    process.stdout.write(options.json ? `${line}\n` : `${formatRecord(record)}\n`);
  }
  if (shown === 0 && !options.json) process.stdout.write(options.since ? `Nothing in the last ${options.since}.\n` : 'The audit log is empty.\n');
}

/** One record on one line: time, what, where, how, executor (`mcp`), outcome, request, first line of the program (server/tool and arguments). */
export function formatRecord(record: Record<string, unknown>): string {
  // Control characters out: the log holds model-written text, which must not drive the terminal.
  // eslint-disable-next-line no-control-regex
  const text = (v: unknown): string => (typeof v === 'string' ? v.replace(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g, ' ') : '');
  const time = text(record.time)
    .replace('T', ' ')
    .replace(/\.\d+Z$/, 'Z');
  const decision = text(record.decision);
  // A call of an MCP tool: its server, tool and arguments stand where a program's executor and code do.
  const mcp = record.where === 'mcp';
  const ms = typeof record.duration_ms === 'number' ? ` ${record.duration_ms} ms` : '';
  let outcome: string;
  if (record.event === 'decision') outcome = record.how === 'cancelled' ? 'cancelled' : decision === 'deny' ? 'DENIED' : 'allowed';
  else if (typeof record.error === 'string') outcome = `not run: ${record.error}`;
  else if (mcp) outcome = `${record.is_error === true ? 'tool error' : 'done'}${ms}`;
  else outcome = `exit ${String(record.exit_code)}${record.timed_out === true ? ' (timed out)' : ''}${ms}`;
  const note = typeof record.note === 'string' ? ` note: ${JSON.stringify(text(record.note))}` : '';
  const body = mcp ? `${text(record.server)}/${text(record.tool)} ${text(record.arguments)}` : text(record.code);
  const firstLine = (body.split('\n').find((l) => l.trim() !== '') ?? '').slice(0, 80);
  const more = record.code_truncated === true || record.arguments_truncated === true || body.trim().includes('\n') || (mcp && body.length > 80) ? ' …' : '';
  return [
    time,
    pad(text(record.event), 8),
    pad(text(record.where), 7),
    pad(text(record.how), 16),
    pad(mcp ? 'mcp' : text(record.executor), 7),
    pad(outcome, 18),
    `req=${text(record.request_id).slice(0, 12)}`,
    `${firstLine}${more}${note}`,
  ].join('  ');
}

function pad(text: string, width: number): string {
  return text.length >= width ? text : text + ' '.repeat(width - text.length);
}
