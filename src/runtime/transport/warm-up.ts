/**
 * A short self-exercise of the transport once a service listens: a few pings to its own
 * socket, on a kept connection when the suite keeps them. Every request of every service
 * goes through the same code (the client's connect and exchange, the server's accept, the
 * frame reader and writer, the dispatch, the kept connection's reuse), and V8 compiles it
 * on first use: without this, the first requests after a start pay for that on every hop.
 * Ten pings took about 6 ms off the first request after a cold start (a fifth of it) in
 * cold starts in turns, for about 70 ms more CPU over the seven services during their start
 * and some 30 ms on the start itself (docs/benchmarks.md, round 18). It never throws, and
 * logs at debug only.
 */
import { castToError } from '../errors.js';
import type { Logger } from '../log.js';
import { ping } from './client.js';

/** Pings sent: enough for V8 to have compiled the request path and moved its hottest functions to baseline code. */
export const WARM_UP_PINGS = 10;

/** Options of {@link warmUpTransport}. */
export interface WarmUpOptions {
  log: Logger;
  /** `[limits] keep_alive_ms`: the pings go as the service's callers' requests do (0: a connection each). */
  keepAliveMs: number;
  /** True once the service is stopping: no ping is sent after that. */
  stopping: () => boolean;
  /** @default WARM_UP_PINGS */
  pings?: number;
}

/** Pings the service at `socketPath` (our own) up to `pings` times; resolves with how many it answered. */
export async function warmUpTransport(socketPath: string, options: WarmUpOptions): Promise<number> {
  const { log } = options;
  const pings = options.pings ?? WARM_UP_PINGS;
  const started = performance.now();
  let answered = 0;
  try {
    while (answered < pings && !options.stopping()) {
      await ping(socketPath, { keepAliveMs: options.keepAliveMs > 0 ? options.keepAliveMs : undefined, name: 'itself' });
      answered++;
    }
    log.debug({ pings: answered, ms: Math.round(performance.now() - started) }, 'transport warmed up');
  } catch (err) {
    log.debug({ err: castToError(err), pings: answered }, 'warm-up of the transport stopped (the first requests compile it instead)');
  }
  return answered;
}
