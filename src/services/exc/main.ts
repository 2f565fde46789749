/**
 * zino-exc: runs model-written code. Messages: `execute`, `validate`,
 * `capabilities`, `approve`, `approvals`. Executors come from `[tools] dir`; runs are
 * bounded in time (`[exc] timeout`) and output (`[exc] max_output_bytes`), happen in a
 * fresh private working directory, and are sandboxed (bubblewrap, or the Landlock
 * launcher) per `[exc] sandbox`.
 * A run on the host goes through `[approval]` (supervise.ts); every run is in the
 * audit log (`[exc] audit_log`). It also keeps the sessions with the `[mcp.servers]`
 * (`list_tools`, `call_tool`; mcp/).
 */
import { existsSync } from 'node:fs';
import {
  InvalidRequestError,
  ZinoError,
  bindHandlers,
  loadCatalog,
  optionalBoolean,
  optionalString,
  requireString,
  type ResolvedConfig,
  type ServiceContext,
  type ServiceDefinition,
} from '../../runtime/index.js';
import { EXC, MAX_NOTE_CHARS, MAX_REASON_CHARS } from '../../protocol/exc.js';
import { checkChannelId } from '../../protocol/mem.js';
import { ApprovalBook } from './approvals.js';
import { AuditLog } from './audit.js';
import { execute, validate } from './execute.js';
import { buildExecutors, describeExecutor, type Executor } from './executors.js';
import { hostUserId, localHostRunner, runnerHostRunner } from './host.js';
import { listApprovals } from './listing.js';
import { startMcp } from './mcp/index.js';
import { compileRules } from './policy.js';
import { isRunUid, sweepRunUsers } from './run-users.js';
import { SANDBOX_UID, analysisUser, detectSandbox, hiddenPaths, reachableBy } from './sandbox.js';
import { supervise } from './supervise.js';
import { which } from './which.js';
import { sweepStaleWorkdirs } from './workdir.js';

/** How long a run directory can exist beyond `[exc] timeout`: static analysis (10 s), kill grace, removal. */
const RUN_MARGIN_MS = 60_000;

/**
 * What the sandbox hides: hiddenPaths for the most specific config file, plus every
 * other config file read (`./ZINO.toml` under a local one), `[api] key_file` and the
 * HTTP endpoint's bearer token (`[http] token_file`: a run with exc's uid could read it).
 */
function hiddenFiles(
  config: Readonly<ResolvedConfig>,
  context: ServiceContext,
  runAs: { uid: number; gid: number } | undefined,
  sharedTmp: boolean,
): { dirs: string[]; files: string[] } {
  const hidden = hiddenPaths(config, context.configFile, runAs, undefined, undefined, sharedTmp);
  const others = [...(context.configFiles ?? []), ...[config.api.key_file, config.http.token_file].filter((f) => f !== '')];
  for (const file of others) {
    for (const each of hiddenPaths(config, file, runAs, undefined, undefined, sharedTmp).files) if (!hidden.files.includes(each)) hidden.files.push(each);
  }
  return hidden;
}

const exc: ServiceDefinition = {
  name: 'exc',
  async create(config, log, context) {
    const catalog = await loadCatalog({ tools: config.tools.dir, skills: config.skills.dir }, log);
    const executors = buildExecutors(catalog.tools);
    const sandbox = detectSandbox(config.exc.sandbox);
    const audit = new AuditLog(config.exc.audit_log, config.exc.audit_max_bytes);
    // Config files, key file, and the audit log (it holds every program that ran): sandboxed code must not read them.
    const hidden = (): { dirs: string[]; files: string[] } => {
      // The landlock view shares the host's /tmp: what is there must be hidden too.
      const sharedTmp = sandbox.view === 'landlock';
      const paths = hiddenFiles(config, context, sandbox.runAs, sharedTmp);
      const visible = (p: string): boolean =>
        existsSync(p) && (sharedTmp || !p.startsWith('/tmp/')) && (sandbox.runAs === undefined || reachableBy(p, sandbox.runAs));
      return { dirs: paths.dirs, files: [...paths.files, ...[audit.file, audit.previous].filter(visible)] };
    };
    const prlimit = which('prlimit');
    const deps = { config, sandbox, hidden, prlimit };
    if (!prlimit) log.warn({}, 'prlimit not found: a single file a run writes is bounded only by the periodic check of [exc] max_disk_bytes');
    // Run directories of an exc that was SIGKILLed (it cannot clean up) hold model code and its output.
    await sweepStaleWorkdirs({
      // As root, also those of `nobody` and of run uids: a root exc that sandboxed (now or before a config change) chowned them.
      owners: (uid) => uid === process.geteuid?.() || (process.geteuid?.() === 0 && (uid === SANDBOX_UID || isRunUid(uid))),
      startedAt: Date.now() - process.uptime() * 1000,
      maxRunMs: config.exc.timeout * 1000 + RUN_MARGIN_MS,
      log,
    });
    // Host view, landlock view as root: what runs of a killed exc left running under their uids (no PID namespace ended them with it).
    if (sandbox.host || sandbox.landlock?.users) await sweepRunUsers(log);
    if (sandbox.refusal) log.error({ reason: sandbox.refusal }, 'sandbox required but unusable; execute will be refused');
    else
      log.info(
        { sandbox: !sandbox.active ? 'none' : sandbox.bwrap ? 'bwrap' : 'landlock', view: sandbox.view ?? null, reason: sandbox.reason, hidden: hidden() },
        'sandbox decided',
      );
    log.info({ executors: [...executors.values()].map((e) => ({ name: e.name, validator: e.validator?.[0] ?? null })) }, 'executors loaded');

    const approval = config.approval;
    const hostUser = approval.host_user === '' ? undefined : hostUserId(approval.host_user);
    log.info(
      {
        mode: approval.mode,
        unattended: approval.unattended,
        rules: approval.allow_rules.length,
        timeout_s: approval.timeout_s,
        host_uid: process.geteuid?.(),
        host_user: approval.host_user === '' ? undefined : { name: approval.host_user, uid: hostUser, runner: config.runner.socket },
        every_run_on_host: !sandbox.active,
      },
      'host runs: approval policy',
    );
    const problem = await audit.probe();
    if (problem) log.error({ audit_log: audit.file, reason: problem }, 'audit log unusable: host runs are refused until it can be written');
    else log.info({ audit_log: audit.file }, 'audit log open');

    const book = new ApprovalBook({ timeoutMs: approval.timeout_s * 1000 });
    const supervisor = {
      sandboxActive: sandbox.active,
      policy: { mode: approval.mode, unattended: approval.unattended, rules: compileRules(approval.allow_rules) },
      timeoutS: approval.timeout_s,
      book,
      audit,
      runSandboxed: (executor: Executor, code: string, signal: AbortSignal) => execute(deps, executor, code, signal),
      // With [approval] host_user, host runs go to the privileged runner (which acts as that account), never to exc's own user.
      runOnHost: hostUser === undefined ? localHostRunner(deps) : runnerHostRunner(config),
    };
    const names = (): string => [...executors.keys()].join(', ') || 'none';
    const find = (name: string): Executor | undefined => executors.get(name);
    // MCP calls that may change things go through the same policy, approvals and audit log as host runs.
    const mcp = startMcp(config, log, { policy: supervisor.policy, timeoutS: supervisor.timeoutS, book, audit });

    return {
      // eslint-disable-next-line no-restricted-syntax -- made once, at start
      ...bindHandlers(EXC)({
        capabilities: () => ({
          type: 'capabilities',
          executors: Object.fromEntries([...executors.values()].map((e) => [e.name, describeExecutor(e)])),
          timeout: config.exc.timeout,
          sandbox: {
            mode: sandbox.mode,
            active: sandbox.active,
            ...(sandbox.active && sandbox.view ? { view: sandbox.view } : {}),
            reason: sandbox.refusal ?? sandbox.reason,
          },
          max_output_bytes: config.exc.max_output_bytes,
          approval: {
            mode: approval.mode,
            unattended: approval.unattended,
            timeout_s: approval.timeout_s,
            rules: approval.allow_rules.length,
            pending: book.size,
            ...(hostUser === undefined ? {} : { host_user: approval.host_user, runner: config.runner.socket }),
          },
          audit: { file: audit.file, ...(audit.problem === undefined ? { ok: true } : { ok: false, problem: audit.problem }) },
        }),
        execute: async (request, ctx) => {
          const name = requireString(request, 'executor');
          const code = requireString(request, 'code');
          const host = optionalBoolean(request, 'host') ?? false;
          const reason = (optionalString(request, 'reason') ?? '').slice(0, MAX_REASON_CHARS);
          const approvals = optionalBoolean(request, 'approvals') ?? false;
          const channelId = optionalString(request, 'channel_id');
          if (channelId !== undefined) checkChannelId(channelId);
          const executor = find(name);
          if (!executor)
            return { type: 'result', exit_code: 127, stdout: '', stderr: `zino-exc: unknown executor "${name.slice(0, 64)}" (available: ${names()})` };
          // A required sandbox that cannot be used refuses sandboxed runs; a host run is the policy's to decide.
          if (sandbox.refusal && !host) throw new ZinoError('NOT_CONFIGURED', sandbox.refusal);
          return supervise(supervisor, { executor, code, host, reason, approvals, channelId }, ctx);
        },
        validate: async (request, ctx) => {
          const name = requireString(request, 'executor');
          const code = requireString(request, 'code');
          const executor = find(name);
          if (!executor) return { type: 'validation', ok: false, errors: `unknown executor "${name.slice(0, 64)}" (available: ${names()})` };
          return validate(executor, code, ctx.signal, analysisUser(sandbox));
        },
        approve: (request, ctx) => {
          const id = requireString(request, 'id');
          const decision = requireString(request, 'decision');
          if (decision !== 'allow' && decision !== 'deny')
            throw new InvalidRequestError(`field "decision" must be "allow" or "deny", got ${JSON.stringify(decision.slice(0, 32))}`);
          const note = optionalString(request, 'note');
          if (note !== undefined && note.length > MAX_NOTE_CHARS)
            throw new InvalidRequestError(`field "note" must be at most ${MAX_NOTE_CHARS} characters, got ${note.length}`);
          book.answer(id, decision, note);
          ctx.log.info({ approval_id: id, decision }, 'approval answered');
          return { type: 'ok' };
        },
        approvals: (request) => listApprovals(book, optionalString(request, 'id'), config.limits.max_frame_bytes),
        list_tools: (request) => mcp.listTools(request),
        call_tool: (request, ctx) => mcp.callTool(request, ctx),
      }),
      reload: () => mcp.reload(),
      close: async () => {
        await mcp.close();
        await audit.close();
      },
    };
  },
};

export default exc;
