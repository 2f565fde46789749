/**
 * `zino status`: asks the daemon for every service's state; when the daemon
 * itself is down, pings each service directly. Exit 0 when all seven answer.
 */
import { SERVICE_NAMES, type ServiceStatus, type StatusReply } from '../../client/index.js';
import { VERSION } from '../../version.js';
import { EXIT } from '../../runtime/exit.js';
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
  const allUp = SERVICE_NAMES.every((name) => services[name]?.reachable);
  if (options.json) process.stdout.write(`${JSON.stringify(reply)}\n`);
  else process.stdout.write(render(reply, services));
  process.exit(allUp ? EXIT.OK : EXIT.FAILURE);
}

function render(reply: StatusReply, services: Record<string, ServiceStatus>): string {
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
  return `${lines.join('\n')}\n`;
}
