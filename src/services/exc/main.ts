/**
 * zino-exc: runs model-written code. Messages: `execute`, `validate`,
 * `capabilities`. Executors come from `[tools] dir`; runs are bounded in time
 * (`[exc] timeout`) and output (`[exc] max_output_bytes`), happen in a fresh private
 * working directory, and are sandboxed by bubblewrap per `[exc] sandbox`.
 * It also keeps the sessions with the `[mcp.servers]` (`list_tools`, `call_tool`; mcp/).
 */
import { ZinoError, bindHandlers, loadCatalog, requireString, type ResolvedConfig, type ServiceContext, type ServiceDefinition } from '../../runtime/index.js';
import { EXC } from '../../protocol/exc.js';
import { execute, validate } from './execute.js';
import { buildExecutors, describeExecutor, type Executor } from './executors.js';
import { startMcp } from './mcp/index.js';
import { isRunUid, sweepRunUsers } from './run-users.js';
import { SANDBOX_UID, analysisUser, detectSandbox, hiddenPaths } from './sandbox.js';
import { which } from './which.js';
import { sweepStaleWorkdirs } from './workdir.js';

/** How long a run directory can exist beyond `[exc] timeout`: static analysis (10 s), kill grace, removal. */
const RUN_MARGIN_MS = 60_000;

/**
 * What the sandbox hides: hiddenPaths for the most specific config file, plus every
 * other config file read (`./ZINO.toml` under a local one) and `[api] key_file`.
 */
function hiddenFiles(config: Readonly<ResolvedConfig>, context: ServiceContext, runAs?: { uid: number; gid: number }): { dirs: string[]; files: string[] } {
  const hidden = hiddenPaths(config, context.configFile, runAs);
  const others = [...(context.configFiles ?? []), ...(config.api.key_file === '' ? [] : [config.api.key_file])];
  for (const file of others) {
    for (const each of hiddenPaths(config, file, runAs).files) if (!hidden.files.includes(each)) hidden.files.push(each);
  }
  return hidden;
}

const exc: ServiceDefinition = {
  name: 'exc',
  async create(config, log, context) {
    const catalog = await loadCatalog({ tools: config.tools.dir, skills: config.skills.dir }, log);
    const executors = buildExecutors(catalog.tools);
    const sandbox = detectSandbox(config.exc.sandbox);
    const hide = (): { dirs: string[]; files: string[] } => hiddenFiles(config, context, sandbox.runAs);
    const hidden = hide();
    const prlimit = which('prlimit');
    const deps = { config, sandbox, hidden: hide, prlimit };
    if (!prlimit) log.warn({}, 'prlimit not found: a single file a run writes is bounded only by the periodic check of [exc] max_disk_bytes');
    // Run directories of an exc that was SIGKILLed (it cannot clean up) hold model code and its output.
    await sweepStaleWorkdirs({
      // As root, also those of `nobody` and of run uids: a root exc that sandboxed (now or before a config change) chowned them.
      owners: (uid) => uid === process.geteuid?.() || (process.geteuid?.() === 0 && (uid === SANDBOX_UID || isRunUid(uid))),
      startedAt: Date.now() - process.uptime() * 1000,
      maxRunMs: config.exc.timeout * 1000 + RUN_MARGIN_MS,
      log,
    });
    // Host view: what runs of a killed exc left running under their uids (no PID namespace ended them with it).
    if (sandbox.host) await sweepRunUsers(log);
    if (sandbox.refusal) log.error({ reason: sandbox.refusal }, 'sandbox required but unusable; execute will be refused');
    else log.info({ sandbox: sandbox.active ? 'bwrap' : 'none', view: sandbox.view ?? null, reason: sandbox.reason, hidden }, 'sandbox decided');
    log.info({ executors: [...executors.values()].map((e) => ({ name: e.name, validator: e.validator?.[0] ?? null })) }, 'executors loaded');

    const names = (): string => [...executors.keys()].join(', ') || 'none';
    const find = (name: string): Executor | undefined => executors.get(name);
    const mcp = startMcp(config, log);

    return {
      ...bindHandlers(EXC)({
        capabilities: () => ({
          type: 'capabilities',
          executors: Object.fromEntries([...executors.values()].map((e) => [e.name, describeExecutor(e)])),
          timeout: config.exc.timeout,
          sandbox: { mode: sandbox.mode, active: sandbox.active, reason: sandbox.refusal ?? sandbox.reason },
          max_output_bytes: config.exc.max_output_bytes,
        }),
        execute: async (request, ctx) => {
          const name = requireString(request, 'executor');
          const code = requireString(request, 'code');
          const executor = find(name);
          if (!executor)
            return { type: 'result', exit_code: 127, stdout: '', stderr: `zino-exc: unknown executor "${name.slice(0, 64)}" (available: ${names()})` };
          if (sandbox.refusal) throw new ZinoError('NOT_CONFIGURED', sandbox.refusal);
          const { reply: result, leftovers } = await execute(deps, executor, code, ctx.signal);
          ctx.log.info(
            {
              executor: name,
              exit_code: result.exit_code,
              timed_out: result.timed_out ?? false,
              truncated: result.truncated ?? false,
              durationMs: result.duration_ms,
              sandboxed: result.sandboxed,
              leftovers,
            },
            'code executed',
          );
          return result;
        },
        validate: async (request, ctx) => {
          const name = requireString(request, 'executor');
          const code = requireString(request, 'code');
          const executor = find(name);
          if (!executor) return { type: 'validation', ok: false, errors: `unknown executor "${name.slice(0, 64)}" (available: ${names()})` };
          return validate(executor, code, ctx.signal, analysisUser(sandbox));
        },
        list_tools: (request) => mcp.listTools(request),
        call_tool: (request, ctx) => mcp.callTool(request, ctx),
      }),
      reload: () => mcp.reload(),
      close: () => mcp.close(),
    };
  },
};

export default exc;
