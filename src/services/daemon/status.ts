/**
 * `{"type":"status"}`: every service's reachability and ping latency, rtr's
 * capabilities with the LLM endpoint checked now (`probe`), the version.
 */
import { Endpoint, SERVICE_NAMES, ZinoError, clientOptions, ping, type HandlerContext, type ResolvedConfig } from '../../runtime/index.js';
import type { ServiceStatus, StatusReply } from '../../protocol/daemon.js';
import { RTR } from '../../protocol/rtr.js';
import { VERSION } from '../../version.js';

/** How long the daemon waits for rtr's check of the LLM endpoint, in milliseconds. */
const PROBE_WAIT_MS = 7000;

/** Pings the six other services concurrently (the daemon answers for itself). */
export async function status(config: Readonly<ResolvedConfig>, ctx: HandlerContext): Promise<StatusReply> {
  const options = { signal: ctx.signal, timeoutMs: 1000 };
  const entries = await Promise.all(
    SERVICE_NAMES.map(async (name): Promise<[string, ServiceStatus]> => {
      const socket = config[name].socket;
      if (name === 'daemon') return [name, { reachable: true, latency_ms: 0, socket }];
      try {
        const ms = await ping(socket, clientOptions(config, name, options));
        return [name, { reachable: true, latency_ms: Math.round(ms * 100) / 100, socket }];
      } catch (err) {
        const errno = err instanceof ZinoError ? err.detail.errno : undefined;
        return [name, { reachable: false, error: (err as Error).message, ...(errno ? { errno } : {}), socket }];
      }
    }),
  );
  const reply: StatusReply = { type: 'status', version: VERSION, services: Object.fromEntries(entries) };
  try {
    // rtr checks the endpoint within 5 s; give it that and a margin.
    const rtr = new Endpoint(RTR, config.rtr.socket, clientOptions(config, 'rtr', { signal: ctx.signal, timeoutMs: PROBE_WAIT_MS }));
    reply.rtr = await rtr.request('capabilities', { probe: true, request_id: ctx.requestId });
  } catch {
    // rtr's row already says why.
  }
  return reply;
}
