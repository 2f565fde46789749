/**
 * `zino status`: asks the daemon for every service's state and the LLM as rtr finds
 * it now (endpoint, reachable, models, the model in use); when the daemon itself is
 * down, pings each service directly and asks rtr itself. Exit status (exit.ts): 0
 * when all seven answer and the LLM is usable, 69 when a service or the LLM cannot
 * be reached, 78 when no LLM is configured.
 */
import path from 'node:path';
import { SERVICE_NAMES, type RtrCapabilities, type ServiceStatus, type StatusReply, type ZinoClient } from '../../client/index.js';
import { VERSION } from '../../version.js';
import { EXIT } from '../../runtime/exit.js';
import { cliClient, howToStart, type ConfigOptions } from '../config.js';
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
  const allUp = SERVICE_NAMES.every((name) => services[name]?.reachable);
  if (options.json) process.stdout.write(`${JSON.stringify(reply)}\n`);
  else process.stdout.write(render(reply, client));
  process.exit(exitStatus(allUp, reply.rtr));
}

/**
 * 0 when all seven answer and the LLM is usable; 69 when a service or the LLM cannot
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

function render(reply: StatusReply, client: ZinoClient): string {
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
  return `${lines.join('\n')}\n`;
}

function llmLines(rtr: RtrCapabilities): string[] {
  const lines = [`  LLM:     ${describeLlm(rtr)}`];
  if (rtr.backend === 'openai') lines.push(`  key:     ${rtr.key_source ?? 'unknown'}`, `  stream:  ${rtr.streaming ? 'on' : 'off'}`);
  return lines;
}
