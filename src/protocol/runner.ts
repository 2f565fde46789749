/**
 * Wire types of zino-runner, the privileged runner of approved host runs. Only exc
 * talks to it (its socket is reachable only by exc's group); it runs a program only
 * when the audit log holds the decision that allowed it.
 */
import { message } from '../runtime/index.js';
import type { ExecuteResult } from './exc.js';

/** `{"type":"run","id","executor","code","sha256"}`: run an approved host run as `[approval] host_user`. */
export interface RunRequest {
  type: 'run';
  /** The `id` of the audit log's `decision` line that allowed the run. */
  id: string;
  /** Executor name; the runner resolves it in its own tools directory. */
  executor: string;
  code: string;
  /** SHA-256 of `code` (UTF-8, lowercase hex), as recorded with the decision. */
  sha256: string;
  request_id?: string | undefined;
}

/** The run's result, as `execute` answers it, with the uid the program ran as. */
export interface RunResult extends ExecuteResult {
  uid: number;
}

/** zino-runner's messages. */
export const RUNNER = {
  run: message<RunRequest, RunResult>('run', { result: true }),
} as const;
