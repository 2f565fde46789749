/**
 * `GET /healthz`, for load balancers and `zino status`, without a token: whether
 * the suite can answer, and nothing else (no versions, sockets, model or errors).
 * `ok` (200): every service answers; `degraded` (200): the daemon and rtr answer but
 * another service does not (answers still come, with less: no tools, no memory);
 * `unavailable` (503): the daemon or rtr does not answer. The daemon is asked at
 * most once a second, however often this is called. `status` is a ZINO extra: a
 * daemon written from the contract answers it with an error frame, and then each
 * service is pinged here instead.
 */
import { Endpoint, RemoteError, clientOptions, type ResolvedConfig } from '../../runtime/index.js';
import { ZinoClient } from '../../client/index.js';
import { DAEMON } from '../../protocol/daemon.js';

/** The suite's state as `/healthz` tells it. */
export type Health = 'ok' | 'degraded' | 'unavailable';

/** How long one answer of the daemon is reused, in ms. */
const FRESH_MS = 1000;

/** Asks the daemon's `status`, at most once per {@link FRESH_MS}. */
export class HealthCheck {
  private last: { at: number; health: Promise<Health> } | undefined;

  constructor(private readonly config: Readonly<ResolvedConfig>) {}

  /** The current state. */
  check(): Promise<Health> {
    const now = performance.now();
    if (this.last && now - this.last.at < FRESH_MS) return this.last.health;
    const health = this.ask();
    this.last = { at: now, health };
    return health;
  }

  private async ask(): Promise<Health> {
    const daemon = new Endpoint(DAEMON, this.config.daemon.socket, clientOptions(this.config, 'daemon', { timeoutMs: 3000 }));
    let reachable: Record<string, boolean>;
    try {
      const { services } = await daemon.request('status', {});
      reachable = Object.fromEntries(Object.entries(services).map(([name, s]) => [name, s.reachable]));
    } catch (err) {
      // The daemon answered, but not `status` (a contract daemon does not know it).
      if (!(err instanceof RemoteError)) return 'unavailable';
      reachable = await this.pingAll();
    }
    if (reachable.rtr !== true) return 'unavailable';
    return Object.values(reachable).every(Boolean) ? 'ok' : 'degraded';
  }

  /** Whether each service answers ping. */
  private async pingAll(): Promise<Record<string, boolean>> {
    const pings = await new ZinoClient({ config: this.config }).pingAll({ timeoutMs: 3000 });
    return Object.fromEntries(Object.entries(pings).map(([name, result]) => [name, result.ok]));
  }
}
