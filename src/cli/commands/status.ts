/**
 * `zino status`: asks the daemon for every service's state; when the daemon
 * itself is down, pings each service directly; and the HTTP front end's `/healthz`.
 * Exit 0 when all seven answer (and the front end, when it is enabled).
 */
import { SERVICE_NAMES, type ServiceStatus, type StatusReply } from '../../client/index.js';
import { VERSION } from '../../version.js';
import { EXIT } from '../../runtime/exit.js';
import type { ResolvedConfig } from '../../runtime/index.js';
import { baseUrl, parseListen } from '../../frontends/http/listen.js';
import { cliClient, type ConfigOptions } from '../config.js';

/** Runs `zino status`. */
export async function statusCommand(options: ConfigOptions & { json?: boolean }): Promise<void> {
  const client = cliClient(options);
  let reply: StatusReply;
  try {
    reply = await client.status({ timeoutMs: 5000 });
  } catch (err) {
    // The daemon is down: ask each service ourselves.
    const pings = await client.pingAll({ timeoutMs: 1000 });
    const services: Record<string, ServiceStatus> = {};
    for (const name of SERVICE_NAMES) {
      const result = pings[name];
      const socket = client.socket(name);
      if (result.ok) services[name] = { reachable: true, latency_ms: Math.round(result.ms * 100) / 100, socket };
      else services[name] = { reachable: false, error: name === 'daemon' ? (err as Error).message : result.error.message, socket };
    }
    reply = { type: 'status', version: VERSION, services };
  }
  const { services } = reply;
  const http = await httpStatus(client.config);
  const allUp = SERVICE_NAMES.every((name) => services[name]?.reachable) && (!http.enabled || http.reachable);
  if (options.json) process.stdout.write(`${JSON.stringify({ ...reply, http })}\n`);
  else process.stdout.write(render(reply, services, http));
  process.exit(allUp ? EXIT.OK : EXIT.FAILURE);
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

function render(reply: StatusReply, services: Record<string, ServiceStatus>, http: HttpStatus): string {
  const lines = [`ZINO ${reply.version}`, ''];
  for (const name of SERVICE_NAMES) {
    const s = services[name];
    const state = s?.reachable ? `up    ${String(s.latency_ms ?? 0).padStart(7)} ms` : 'DOWN            ';
    lines.push(`  ${name.padEnd(7)} ${state}  ${s?.socket ?? ''}${s?.reachable ? '' : `\n            ${s?.error ?? ''}`}`);
  }
  const { rtr } = reply;
  if (rtr) {
    const model = rtr.model || '(not set)';
    const backend = rtr.configured === false ? 'NOT CONFIGURED (see the rtr log)' : `${rtr.backend ?? 'openai'} backend`;
    lines.push('', `  LLM: model ${model}, ${backend}, streaming ${rtr.streaming ? 'on' : 'off'}`);
  }
  if (!rtr) lines.push('');
  if (http.reachable)
    lines.push(`  HTTP: ${http.url ?? ''} answers (suite ${http.health ?? 'unknown'})${http.enabled ? '' : ', although [http] enabled = false'}`);
  else if (http.enabled) lines.push(`  HTTP: DOWN ${http.url ?? ''}\n            ${http.error ?? ''}`);
  else lines.push('  HTTP: off ([http] enabled = false; docs/http.md)');
  return `${lines.join('\n')}\n`;
}
