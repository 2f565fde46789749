/**
 * `zino status`: asks the daemon for every service's state; when the daemon
 * itself is down, pings each service directly. Exit 0 when all seven answer.
 */
import { SERVICE_NAMES, ping, request, textOf, type Frame } from '../../runtime/index.js';
import type { ServiceStatus } from '../../protocol/daemon.js';
import { VERSION } from '../../version.js';
import { cliConfig, type ConfigOptions } from '../config.js';
import { EXIT } from '../exit.js';

/** Runs `zino status`. */
export async function statusCommand(options: ConfigOptions & { json?: boolean }): Promise<void> {
  const config = cliConfig(options);
  let reply: Frame;
  try {
    reply = await request(config.daemon.socket, { type: 'status' }, { name: 'the daemon', timeoutMs: 5000 });
  } catch (err) {
    const services: Record<string, ServiceStatus> = {};
    await Promise.all(
      SERVICE_NAMES.map(async (name) => {
        const socket = config[name].socket;
        try {
          services[name] = { reachable: true, latency_ms: Math.round((await ping(socket, { timeoutMs: 1000 })) * 100) / 100, socket };
        } catch (e) {
          services[name] = { reachable: false, error: name === 'daemon' ? (err as Error).message : (e as Error).message, socket };
        }
      }),
    );
    reply = { type: 'status', version: VERSION, services };
  }
  const services = reply.services as Record<string, ServiceStatus>;
  const allUp = SERVICE_NAMES.every((name) => services[name]?.reachable);
  if (options.json) process.stdout.write(`${JSON.stringify(reply)}\n`);
  else process.stdout.write(render(reply, services));
  process.exit(allUp ? EXIT.OK : EXIT.FAILURE);
}

function render(reply: Frame, services: Record<string, ServiceStatus>): string {
  const lines = [`ZINO ${String(reply.version)}`, ''];
  for (const name of SERVICE_NAMES) {
    const s = services[name];
    const state = s?.reachable ? `up    ${String(s.latency_ms ?? 0).padStart(7)} ms` : 'DOWN            ';
    lines.push(`  ${name.padEnd(7)} ${state}  ${s?.socket ?? ''}${s?.reachable ? '' : `\n            ${s?.error ?? ''}`}`);
  }
  const rtr = reply.rtr as Frame | undefined;
  if (rtr) {
    const model = textOf(rtr.model || '(not set)');
    const backend = rtr.configured === false ? 'NOT CONFIGURED (see the rtr log)' : `${textOf(rtr.backend ?? 'openai')} backend`;
    lines.push('', `  LLM: model ${model}, ${backend}, streaming ${rtr.streaming ? 'on' : 'off'}`);
  }
  return `${lines.join('\n')}\n`;
}
