/**
 * `execute` and `validate`: write the code into a fresh working directory,
 * run static analysis (a warning only), run the code (sandboxed when possible),
 * remove the directory.
 */
import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import type { ExecuteResult, ValidationReply } from '../../protocol/exc.js';
import type { ResolvedConfig } from '../../runtime/index.js';
import { codeFileName, type Executor } from './executors.js';
import { MARKER_VARIABLE } from './kill.js';
import { killUser } from './run-users.js';
import { runProgram } from './run.js';
import { WORKDIR_GROUP, sandboxArgv, type SandboxState } from './sandbox.js';
import { createWorkdir, removeWorkdir } from './workdir.js';

/** Bound on static analysis, in milliseconds. */
const VALIDATION_TIMEOUT_MS = 10_000;
/** Bound on static analysis output, in bytes. */
const VALIDATION_OUTPUT_BYTES = 64 * 1024;

/** What every run needs. */
export interface ExecuteDeps {
  config: Readonly<ResolvedConfig>;
  sandbox: SandboxState;
  /** The paths to hide, looked up per run: a socket directory may appear after exc starts. */
  hidden: () => { dirs: string[]; files: string[] };
  /** Absolute path of prlimit(1), which bounds each file a run writes; undefined when not installed. */
  prlimit?: string | undefined;
}

/** What one run produced: the reply, and how many escaped leftover processes were killed (for the log). */
export interface ExecuteOutcome {
  reply: ExecuteResult;
  leftovers: number;
}

/**
 * Runs `code` with `executor`, in the sandbox when one is active, or directly when
 * `onHost` (a host run: exc has already recorded the decision that allows it).
 */
export async function execute(
  deps: ExecuteDeps,
  executor: Executor,
  code: string,
  signal: AbortSignal,
  onHost = false,
  /** A host run's account when it is not this process's own (the privileged runner, as root, runs as `[approval] host_user`). */
  hostAs?: { uid: number; gid: number; name: string },
): Promise<ExecuteOutcome> {
  const started = performance.now();
  const fileName = codeFileName(executor);
  const sandboxed = !onHost && deps.sandbox.active;
  // The sandboxed program (and its static analysis) runs, in the host view and the landlock view of a root exc, as a uid of
  // the run's own (run-users.ts); in the private view under a root exc as `nobody`. That user owns its working directory.
  // A host run, and a landlock-view run of an exc that is not root, runs as exc's own user.
  const users = deps.sandbox.host?.users ?? deps.sandbox.landlock?.users;
  const runUser = sandboxed && users ? await users.acquire(signal) : undefined;
  const account = onHost && !sandboxed ? hostAs : undefined;
  const runAs = runUser
    ? { uid: runUser.uid, gid: runUser.gid }
    : sandboxed
      ? deps.sandbox.runAs
      : account
        ? { uid: account.uid, gid: account.gid }
        : undefined;
  const user = runUser ? undefined : account ? account.name : runAs ? 'nobody' : safeUserName();
  const workdir = await createWorkdir(fileName, code, runAs, runUser ? WORKDIR_GROUP : undefined).catch((err: unknown) => {
    runUser?.release();
    throw err;
  });
  try {
    const validation = executor.validator ? await analyse(executor.validator, fileName, workdir, signal, runAs, user) : undefined;
    const marker = randomUUID();
    const argv = [...executor.tool.command, fileName];
    const maxDisk = deps.config.exc.max_disk_bytes;
    const result = await runProgram({
      argv: sandboxed ? sandboxArgv(deps.sandbox, { workdir, argv, hidden: deps.hidden(), maxDiskBytes: maxDisk, user: runAs }) : argv,
      cwd: workdir,
      env: programEnv(workdir, marker, user),
      // In the host view bwrap runs as root and setpriv switches the program to the run's user; in the landlock view the launcher does.
      ...(runAs && !runUser ? { runAs } : {}),
      timeoutMs: deps.config.exc.timeout * 1000,
      maxOutputBytes: deps.config.exc.max_output_bytes,
      signal,
      marker,
      disk: { dir: workdir, bytes: maxDisk, prlimit: deps.prlimit },
      // The seccomp filter for bwrap's (or the launcher's) --seccomp, and, with a run uid, the end of everything it still runs.
      fd3: sandboxed ? deps.sandbox.seccomp : undefined,
      killRest: runUser ? () => killUser(runUser) : undefined,
    });
    const limit = deps.config.exc.max_output_bytes;
    let { stdout, stderr } = result;
    const note = `[zino-exc: output truncated at ${limit} bytes; the program was stopped]`;
    if (result.truncated.stdout) stdout = appendLine(stdout, note);
    if (result.truncated.stderr) stderr = appendLine(stderr, note);
    const truncated = result.truncated.stdout || result.truncated.stderr;
    if (result.diskExceeded)
      stderr = appendLine(
        stderr,
        `[zino-exc: the run reached its disk bound of ${maxDisk} bytes ([exc] max_disk_bytes); writing past it failed or the program was stopped]`,
      );
    if (result.timedOut) stderr = appendLine(stderr, `[zino-exc: timed out after ${deps.config.exc.timeout} s; the program was stopped]`);
    const reply: ExecuteResult = { type: 'result', exit_code: result.exitCode, stdout, stderr };
    if (result.timedOut) reply.timed_out = true;
    if (truncated) reply.truncated = true;
    if (validation && !validation.ok) reply.validation = { ok: false, errors: validation.errors };
    reply.duration_ms = Math.round(performance.now() - started);
    reply.sandboxed = sandboxed;
    return { reply, leftovers: result.leftovers };
  } finally {
    await removeWorkdir(workdir);
    runUser?.release();
  }
}

/** Appends `line` on a line of its own. */
function appendLine(text: string, line: string): string {
  return text === '' || text.endsWith('\n') ? `${text}${line}` : `${text}\n${line}`;
}

/** Runs only static analysis, as `runAs` when given (exc is root and sandboxes: analysis is not root either). */
export async function validate(executor: Executor, code: string, signal: AbortSignal, runAs?: { uid: number; gid: number }): Promise<ValidationReply> {
  if (!executor.validator) return { type: 'validation', ok: true, errors: '' };
  const fileName = codeFileName(executor);
  const workdir = await createWorkdir(fileName, code, runAs);
  try {
    const { ok, errors } = await analyse(executor.validator, fileName, workdir, signal, runAs, runAs ? 'nobody' : safeUserName());
    return { type: 'validation', ok, errors };
  } finally {
    await removeWorkdir(workdir);
  }
}

async function analyse(
  validator: string[],
  fileName: string,
  workdir: string,
  signal: AbortSignal,
  runAs: { uid: number; gid: number } | undefined,
  user: string | undefined,
): Promise<{ ok: boolean; errors: string }> {
  const marker = randomUUID();
  const result = await runProgram({
    argv: [...validator, fileName],
    cwd: workdir,
    env: programEnv(workdir, marker, user),
    ...(runAs ? { runAs } : {}),
    timeoutMs: VALIDATION_TIMEOUT_MS,
    maxOutputBytes: VALIDATION_OUTPUT_BYTES,
    signal,
    marker,
  });
  const errors = [result.stdout, result.stderr]
    .map((s) => s.trim())
    .filter(Boolean)
    .join('\n');
  if (result.timedOut) return { ok: false, errors: `static analysis timed out after ${VALIDATION_TIMEOUT_MS / 1000} s` };
  return { ok: result.exitCode === 0, errors };
}

/**
 * The program's environment: nothing of exc's own (no API key, no config paths),
 * just what programs need, plus the run's marker. `USER` and `LOGNAME` are `user`
 * when it has a name (a host-view run's uid has none).
 */
function programEnv(workdir: string, marker: string, user: string | undefined): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    HOME: workdir,
    TMPDIR: workdir,
    LANG: process.env.LANG ?? 'C.UTF-8',
    TERM: 'dumb',
    PYTHONUNBUFFERED: '1',
    PYTHONDONTWRITEBYTECODE: '1',
    ...(user ? { USER: user, LOGNAME: user } : {}),
    [MARKER_VARIABLE]: marker,
  };
}

function safeUserName(): string | undefined {
  try {
    return userInfo().username;
  } catch {
    return undefined;
  }
}
