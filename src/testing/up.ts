/** Starting the whole suite with `zino up` for end-to-end tests and benchmarks. */
import { CLI_PATH } from './paths.js';
import { startProcess, type RunningProcess } from './process.js';

/** A running `zino up`. */
export interface RunningSuite extends RunningProcess {
  /** Stops it with SIGINT (as Ctrl-C would) and returns how it exited. */
  interrupt(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `zino up --config FILE` and resolves once it says every service answers. */
export function startSuite(configFile: string, options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<RunningSuite> {
  return startSuiteWith(['--config', configFile], options);
}

/** Starts `zino up ...args` (in `cwd`) and resolves once it says every service answers. */
export async function startSuiteWith(args: string[], options: { env?: NodeJS.ProcessEnv; timeoutMs?: number; cwd?: string } = {}): Promise<RunningSuite> {
  const proc = startProcess(CLI_PATH, ['up', ...args], { env: { ...process.env, ...options.env }, ...(options.cwd === undefined ? {} : { cwd: options.cwd }) });
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  let exited = false;
  // exited only ever resolves.
  void proc.exited.then(() => (exited = true));
  while (!proc.stdout().includes('ZINO is up')) {
    if (exited || Date.now() > deadline) {
      await proc.stop('SIGKILL');
      const tail = proc.logs
        .slice(-8)
        .map((l) => JSON.stringify(l))
        .join('\n');
      throw new Error(`zino up did not come up${exited ? ' (it exited)' : ''}:\n${tail}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  return Object.assign(proc, { interrupt: () => proc.stop('SIGINT') });
}
