/**
 * `GET /healthz`, for load balancers and `zino status`, without a token: whether
 * the suite can answer, and nothing else (no versions, sockets, model or errors).
 * `ok` (200): every service answers; `degraded` (200): the daemon and rtr answer but
 * another service does not (answers still come, with less: no tools, no memory);
 * `unavailable` (503): the daemon or rtr does not answer. The daemon is asked at
 * most once a second, however often this is called.
 */
import { Endpoint, clientOptions, type ResolvedConfig } from '../../runtime/index.js';
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
    try {
      const { services } = await daemon.request('status', {});
      const reachable = (name: string): boolean => services[name]?.reachable === true;
      if (!reachable('rtr')) return 'unavailable';
      return Object.keys(services).every(reachable) ? 'ok' : 'degraded';
    } catch {
      return 'unavailable';
    }
  }
}
