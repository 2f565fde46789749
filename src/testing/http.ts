/** Starting `zino serve http` for tests and benchmarks, and learning its URL and token. */
import { readFileSync } from 'node:fs';
import { loadConfig } from '../runtime/index.js';
import { CLI_PATH } from './paths.js';
import { startProcess, type RunningProcess } from './process.js';

/** A running HTTP front end. */
export interface StartedHttp extends RunningProcess {
  /** The API's base URL, e.g. `http://127.0.0.1:41234/v1`. */
  readonly baseUrl: string;
  readonly port: number;
  /** The bearer token (read from `[http] token_file`). */
  readonly token: string;
}

/**
 * Starts `zino serve http --config FILE` and resolves once it logs that it listens
 * (with `[http] listen` on port 0, the log says which port it got).
 */
export async function startHttpFrontEnd(configFile: string, options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<StartedHttp> {
  const env = { ...process.env, ZINO_LOG_LEVEL: process.env.ZINO_LOG_LEVEL ?? 'debug', ...options.env };
  const proc = startProcess(CLI_PATH, ['serve', 'http', '--config', configFile], { env });
  const deadline = Date.now() + (options.timeoutMs ?? 15_000);
  let exited = false;
  // exited only ever resolves.
  void proc.exited.then(() => (exited = true));
  for (;;) {
    const line = proc.logs.find((l) => l.msg === 'listening' && typeof l.url === 'string');
    if (line) {
      const { config } = loadConfig({ path: configFile, env: {} });
      const token = readFileSync(config.http.token_file, 'utf8').trim();
      return Object.assign(proc, { baseUrl: String(line.url), port: Number(line.port), token });
    }
    if (exited || Date.now() > deadline) {
      await proc.stop('SIGKILL');
      const tail = proc.logs
        .slice(-5)
        .map((l) => JSON.stringify(l))
        .join('\n');
      throw new Error(`zino serve http did not start${exited ? ' (it exited)' : ''}:\n${tail}`);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}
