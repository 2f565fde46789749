/**
 * zino-runner (`zino serve runner`): the privileged runner of approved host runs.
 * Message: `run`. Only exc connects (under systemd its socket is reachable only by
 * exc's group). Before running anything it re-reads the audit log: the run needs a
 * `decision` line for its id that allowed a host run of exactly this code (by
 * SHA-256) and executor, recent, not run before (record.ts). It then runs the
 * program as `[approval] host_user` (it must be root to switch to another account),
 * with exc's bounds: `[exc] timeout`, `[exc] max_output_bytes`, `[exc]
 * max_disk_bytes`; the connection closing kills the run's process group.
 */
import { createHash } from 'node:crypto';
import { RUNNER } from '../../../protocol/runner.js';
import {
  ConfigError,
  ZinoError,
  bindHandlers,
  loadCatalog,
  requireString,
  runService,
  optionalString,
  type Logger,
  type ResolvedConfig,
} from '../../../runtime/index.js';
import { execute } from '../execute.js';
import { buildExecutors } from '../executors.js';
import { hostAccount } from '../host.js';
import { detectSandbox } from '../sandbox.js';
import { which } from '../which.js';
import { checkRecord } from './record.js';

/** Ids the runner remembers having run (refused a second time); the oldest are forgotten past this many. */
const REMEMBERED_IDS = 100_000;

/**
 * Starts the runner on `[runner] socket` and resolves with true; with `[approval] host_user` empty it logs that
 * there is nothing to do and resolves with false (the caller exits 0: under systemd the unit stays inactive).
 * Throws ConfigError when it cannot act as `[approval] host_user`.
 */
export async function runRunner(config: Readonly<ResolvedConfig>, log: Logger): Promise<boolean> {
  if (config.approval.host_user === '') {
    log.info({}, 'no [approval] host_user: exc runs host runs as its own user and never calls the runner; exiting');
    return false;
  }
  const account = hostAccount(config.approval.host_user);
  const euid = process.geteuid?.();
  if (euid !== 0 && euid !== account.uid)
    throw new ConfigError(`the runner runs as uid ${String(euid)}: only root can run host runs as ${account.name} (uid ${account.uid}, [approval] host_user)`);
  const catalog = await loadCatalog({ tools: config.tools.dir, skills: config.skills.dir }, log);
  const executors = buildExecutors(catalog.tools);
  const deps = { config, sandbox: detectSandbox('none'), hidden: () => ({ dirs: [], files: [] }), prlimit: which('prlimit') };
  const ran = new Set<string>();
  log.info({ host_user: account, audit_log: config.exc.audit_log, executors: [...executors.keys()] }, 'runner ready: host runs act as host_user');

  const handlers = bindHandlers(RUNNER)({
    run: async (request, ctx) => {
      const id = requireString(request, 'id');
      const name = requireString(request, 'executor');
      const code = requireString(request, 'code', { allowEmpty: true });
      const claimed = requireString(request, 'sha256');
      const requestId = optionalString(request, 'request_id');
      const sha256 = createHash('sha256').update(code, 'utf8').digest('hex');
      const refuse = (why: string): never => {
        log.warn({ id: id.slice(0, 100), request_id: requestId, reason: why }, 'run refused');
        throw new ZinoError('RUN_NOT_RECORDED', `zino-runner refused the run: ${why}`);
      };
      if (claimed !== sha256) refuse('sha256 is not the SHA-256 of code');
      const executor = executors.get(name) ?? refuse(`unknown executor ${JSON.stringify(name.slice(0, 64))}`);
      if (ran.has(id)) refuse(`decision ${id} has already been run`);
      const problem = await checkRecord({ id, executor: name, sha256 }, { auditFile: config.exc.audit_log });
      if (problem !== undefined) refuse(problem);
      // Claimed before running: a second request for the same id, even a concurrent one, is refused.
      if (ran.has(id)) refuse(`decision ${id} has already been run`);
      ran.add(id);
      if (ran.size > REMEMBERED_IDS) ran.delete(ran.values().next().value ?? id);
      log.info({ id, request_id: requestId, executor: name, uid: account.uid }, 'run started');
      const { reply } = await execute(deps, executor, code, ctx.signal, true, account);
      log.info({ id, request_id: requestId, exit_code: reply.exit_code, timed_out: reply.timed_out ?? false, duration_ms: reply.duration_ms }, 'run finished');
      return Object.assign({}, reply, { uid: account.uid });
    },
  });
  await runService({ socketPath: config.runner.socket, config, log, instance: { ...handlers } });
  return true;
}
