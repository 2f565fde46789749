/** `{"type":"status"}`: every service's reachability and ping latency, rtr's capabilities, the version. */
import { SERVICE_NAMES, ping, request, type Frame, type HandlerContext, type ResolvedConfig } from '../../runtime/index.js';
import type { ServiceStatus, StatusReply } from '../../protocol/daemon.js';
import { VERSION } from '../../version.js';

/** Pings the six other services concurrently (the daemon answers for itself). */
export async function status(config: Readonly<ResolvedConfig>, ctx: HandlerContext): Promise<Frame> {
  const options = { signal: ctx.signal, connectTimeoutMs: config.limits.connect_timeout_ms, timeoutMs: 1000 };
  const entries = await Promise.all(
    SERVICE_NAMES.map(async (name): Promise<[string, ServiceStatus]> => {
      const socket = config[name].socket;
      if (name === 'daemon') return [name, { reachable: true, latency_ms: 0, socket }];
      try {
        const ms = await ping(socket, { ...options, name });
        return [name, { reachable: true, latency_ms: Math.round(ms * 100) / 100, socket }];
      } catch (err) {
        return [name, { reachable: false, error: (err as Error).message, socket }];
      }
    }),
  );
  const reply: StatusReply = { type: 'status', version: VERSION, services: Object.fromEntries(entries) };
  try {
    reply.rtr = await request(config.rtr.socket, { type: 'capabilities', request_id: ctx.requestId }, { ...options, name: 'rtr' });
  } catch {
    // rtr's row already says why.
  }
  return reply as unknown as Frame;
}
