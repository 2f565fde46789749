/**
 * `node wait-ready.js <service> <config>`: returns once the service's socket
 * answers ping. The units run it as `ExecStartPost=`, so a unit becomes active
 * (and the units ordered after it start) only when its socket can be used, and
 * `systemctl start zino.target && zino ask …` works. Exit 0 when ready, 1 when
 * not within the bound, 78 on a configuration error.
 */
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError, SERVICE_NAMES, loadConfig, ping, type ServiceName } from '../runtime/index.js';

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

async function main(argv: string[]): Promise<number> {
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
    return err instanceof ConfigError ? 78 : 1;
  }
  if (await waitReady(socket)) return 0;
  process.stderr.write(`wait-ready: ${service} did not answer ping on ${socket} within ${READY_TIMEOUT_MS / 1000} s\n`);
  return 1;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.slice(2));
}
