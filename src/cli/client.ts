/**
 * The client of the suite a client command talks to. Apart from config.ts, so that `zino up`,
 * which reads the configuration before it spawns the services, loads the client library only
 * afterwards, for its banner.
 */
import { ZinoClient } from '../client/index.js';
import { cliConfig, type ConfigOptions } from './config.js';

/** A client of the suite the options point at, or exit 78 with the config's message. */
export function cliClient(options: ConfigOptions): ZinoClient {
  return new ZinoClient({ config: cliConfig(options) });
}
