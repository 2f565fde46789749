/**
 * `zino serve <service>`: runs one service in the foreground. This is what
 * systemd runs; logs are JSON lines on stderr. Run bundled, `zino serve NAME` for
 * one of the seven loads that service's own file of the bundle instead (main.ts);
 * both run it through serve-run.ts.
 */
import { SERVICE_NAMES } from '../../runtime/index.js';
import { isServiceName, loadServiceDefinition } from '../../services/index.js';
import type { ConfigOptions } from '../config.js';
import { EXIT } from '../../runtime/exit.js';
import { runServe, serveDefinition } from '../serve-run.js';

/** Runs `name` until SIGTERM/SIGINT. Exits with 78 on a configuration error, 1 when it cannot start. */
export async function serveCommand(name: string, options: ConfigOptions): Promise<void> {
  if (isServiceName(name)) return serveDefinition(name, () => loadServiceDefinition(name), options);
  if (name === 'http') {
    // The OpenAI-compatible front end: an HTTP server, a client of the daemon.
    return runServe(name, options, async (config, log) => {
      const { runHttp } = await import('../../frontends/http/main.js');
      await runHttp(config, log);
    });
  }
  if (name === 'runner') {
    // exc's privileged runner of approved host runs (systemd's zino-runner.service).
    // With no [approval] host_user there is nothing for it to do: exit 0 (the unit stays inactive, not failed).
    return runServe(name, options, async (config, log) => (await import('../../services/exc/runner/main.js')).runRunner(config, log));
  }
  process.stderr.write(`zino serve: unknown service "${name}" (one of: ${SERVICE_NAMES.join(', ')}, http, runner)\n`);
  process.exit(EXIT.USAGE);
}
