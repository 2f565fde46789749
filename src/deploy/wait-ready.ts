/**
 * `node wait-ready.js <service> <config>`: returns once the service's socket
 * answers ping. The units run it as `ExecStartPost=`, so a unit becomes active
 * (and the units ordered after it start) only when its socket can be used, and
 * `systemctl start zino.target && zino ask …` works. Exit 0 when ready, 1 when
 * not within the bound.
 *
 * On a configuration error it waits instead of failing: the service fails on the
 * same file with exit status 78, and systemd then judges the unit by that status
 * (RestartPreventExitStatus=78: no restart). Failing first would make the unit
 * fail on this control process instead, and be restarted once.
 */
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError, EXIT, SERVICE_NAMES, loadConfig, ping, type ServiceName } from '../runtime/index.js';

/** How long a service gets to answer after it was started. @default 60 s (below systemd's 90 s start timeout) */
export const READY_TIMEOUT_MS = 60_000;

/** Polls `socket` with ping until it answers; false when `timeoutMs` passes first. */
export async function waitReady(socket: string, timeoutMs = READY_TIMEOUT_MS, intervalMs = 50): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await ping(socket, { timeoutMs: 1000, connectTimeoutMs: 1000 });
      return true;
    } catch {
      // Not listening yet (no socket, or a stale one from a killed process).
    }
    if (Date.now() >= deadline) return false;
    await sleep(intervalMs);
  }
}

/** The command: returns the exit status. `timeoutMs` bounds every wait. */
export async function main(argv: string[], timeoutMs = READY_TIMEOUT_MS): Promise<number> {
  const [service, config] = argv;
  if (!SERVICE_NAMES.includes(service as ServiceName) || config === undefined) {
    process.stderr.write(`usage: wait-ready.js <${SERVICE_NAMES.join('|')}> <config file>\n`);
    return 2;
  }
  let socket: string;
  try {
    socket = loadConfig({ path: config, env: {} }).config[service as ServiceName].socket;
  } catch (err) {
    process.stderr.write(`wait-ready: ${(err as Error).message}\n`);
    if (!(err instanceof ConfigError)) return 1;
    await sleep(timeoutMs);
    return EXIT.CONFIG;
  }
  if (await waitReady(socket, timeoutMs)) return 0;
  process.stderr.write(`wait-ready: ${service} did not answer ping on ${socket} within ${timeoutMs / 1000} s\n`);
  return 1;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.slice(2));
}
