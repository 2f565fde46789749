/**
 * `zino status`: asks the daemon for every service's state and the LLM as rtr finds
 * it now (endpoint, reachable, models, the model in use); when the daemon itself is
 * down, pings each service directly and asks rtr itself. Exit status (exit.ts): 0
 * when all seven answer and the LLM is usable, 69 when a service or the LLM cannot
 * be reached, 78 when no LLM is configured. It also asks the HTTP front end's
 * `/healthz`; when the front end is enabled and does not answer, the exit is 69.
 */
import path from 'node:path';
import { SERVICE_NAMES, type RtrCapabilities, type ServiceStatus, type StatusReply, type ZinoClient } from '../../client/index.js';
import { VERSION } from '../../version.js';
import { EXIT } from '../../runtime/exit.js';
import type { ResolvedConfig } from '../../runtime/index.js';
import { cliClient } from '../client.js';
import { howToStart, type ConfigOptions } from '../config.js';
import { describeLlm, llmUsable } from '../llm-line.js';

/** Runs `zino status`. */
export async function statusCommand(options: ConfigOptions & { json?: boolean }): Promise<void> {
  const client = cliClient(options);
  let reply: StatusReply;
  try {
    reply = await client.status({ timeoutMs: 10_000 });
  } catch {
    reply = await withoutDaemon(client);
  }
  const { services } = reply;
  const http = await httpStatus(client.config);
  const allUp = SERVICE_NAMES.every((name) => services[name]?.reachable) && (!http.enabled || http.reachable);
  if (options.json) process.stdout.write(`${JSON.stringify({ ...reply, http })}\n`);
  else process.stdout.write(render(reply, client, http));
  process.exit(exitStatus(allUp, reply.rtr));
}

/** The HTTP front end as `zino status` shows it. */
export interface HttpStatus {
  /** `[http] enabled`. */
  enabled: boolean;
  /** Its base URL, when `[http] listen` names one. */
  url?: string;
  /** It answered `/healthz`. */
  reachable: boolean;
  /** What `/healthz` said (`ok`, `degraded`, `unavailable`). */
  health?: string;
  error?: string;
}

/**
 * Asks the front end's `/healthz` at `[http] listen`, whether or not it is enabled
 * (`zino up --http` runs it without the key). Bounded to one second.
 */
async function httpStatus(config: Readonly<ResolvedConfig>): Promise<HttpStatus> {
  const enabled = config.http.enabled;
  // Loaded here, not at the top: the CLI imports a front end's code only when it is used.
  const { baseUrl, parseListen } = await import('../../frontends/http/listen.js');
  let address;
  try {
    address = parseListen(config.http.listen, config.http.allow_non_loopback);
  } catch (err) {
    return { enabled, reachable: false, error: (err as Error).message };
  }
  if (address.port === 0) return { enabled, reachable: false, error: '[http] listen has port 0: the port is chosen at start (see its log)' };
  const url = baseUrl(address);
  try {
    const res = await fetch(new URL('/healthz', url), { signal: AbortSignal.timeout(1000) });
    const body = (await res.json()) as { status?: unknown };
    return { enabled, url, reachable: true, health: typeof body.status === 'string' ? body.status : 'unknown' };
  } catch (err) {
    const cause = (err as { cause?: { code?: unknown } }).cause?.code;
    return { enabled, url, reachable: false, error: typeof cause === 'string' ? cause : (err as Error).message };
  }
}

/**
 * 0 when all seven answer (and the HTTP front end, when enabled) and the LLM is usable; 69 when a service or the LLM cannot
 * be reached; 78 when no LLM is configured; 1 when the LLM answers with an error (a 401).
 */
function exitStatus(allUp: boolean, rtr: RtrCapabilities | undefined): number {
  if (!allUp) return EXIT.UNAVAILABLE;
  if (rtr?.configured === false) return EXIT.CONFIG;
  if (llmUsable(rtr)) return EXIT.OK;
  return rtr?.llm?.reachable === true ? EXIT.FAILURE : EXIT.UNAVAILABLE;
}

/** The daemon is down: ping each service ourselves, and ask rtr about the LLM when it answers. */
async function withoutDaemon(client: ZinoClient): Promise<StatusReply> {
  const pings = await client.pingAll({ timeoutMs: 1000 });
  const services: Record<string, ServiceStatus> = {};
  for (const name of SERVICE_NAMES) {
    const result = pings[name];
    const socket = client.socket(name);
    if (result.ok) services[name] = { reachable: true, latency_ms: Math.round(result.ms * 100) / 100, socket };
    else services[name] = { reachable: false, error: result.error.message, ...(result.error.detail.errno ? { errno: result.error.detail.errno } : {}), socket };
  }
  const reply: StatusReply = { type: 'status', version: VERSION, services };
  if (pings.rtr.ok) {
    try {
      reply.rtr = await client.rtr.capabilities({ probe: true, timeoutMs: 10_000 });
    } catch {
      // rtr's row says it answered ping; the LLM line stays out.
    }
  }
  return reply;
}

/** What a system error on a service's socket means, without repeating the socket (the row shows it). */
const WHY: Readonly<Record<string, string>> = {
  ENOENT: 'not running (no socket file)',
  ECONNREFUSED: 'not running (its socket file is left, nobody listens)',
  EACCES: 'permission denied on the socket (is this user in its group?)',
};

function reason(s: ServiceStatus): string {
  return (s.errno === undefined ? undefined : WHY[s.errno]) ?? s.error ?? 'no answer';
}

function render(reply: StatusReply, client: ZinoClient, http: HttpStatus): string {
  const { services } = reply;
  const runDir = path.dirname(client.socket('daemon'));
  const lines = [`ZINO ${reply.version}, suite at ${runDir}`, ''];
  for (const name of SERVICE_NAMES) {
    const s = services[name];
    const state = s?.reachable ? `up    ${String(s.latency_ms ?? 0).padStart(7)} ms` : 'DOWN            ';
    lines.push(`  ${name.padEnd(7)} ${state}  ${s?.socket ?? ''}${s && !s.reachable ? `  ${reason(s)}` : ''}`);
  }
  if (reply.rtr) lines.push('', ...llmLines(reply.rtr));
  if (!services.daemon?.reachable) {
    const daemon = services.daemon;
    lines.push('', howToStart(client.socket('daemon'), daemon?.errno ?? 'no answer'));
  }
  lines.push('');
  if (http.reachable)
    lines.push(`  HTTP: ${http.url ?? ''} answers (suite ${http.health ?? 'unknown'})${http.enabled ? '' : ', although [http] enabled = false'}`);
  else if (http.enabled) lines.push(`  HTTP: DOWN ${http.url ?? ''}  ${http.error ?? ''}`);
  else lines.push('  HTTP: off ([http] enabled = false; docs/http.md)');
  return `${lines.join('\n')}\n`;
}

function llmLines(rtr: RtrCapabilities): string[] {
  const lines = [`  LLM:     ${describeLlm(rtr)}`];
  if (rtr.backend === 'openai') lines.push(`  key:     ${rtr.key_source ?? 'unknown'}`, `  stream:  ${rtr.streaming ? 'on' : 'off'}`);
  return lines;
}
