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
import { runProgram } from './run.js';
import { sandboxArgv, type SandboxState } from './sandbox.js';
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
export async function execute(deps: ExecuteDeps, executor: Executor, code: string, signal: AbortSignal, onHost = false): Promise<ExecuteOutcome> {
  const started = performance.now();
  const fileName = codeFileName(executor);
  const sandboxed = !onHost && deps.sandbox.active && deps.sandbox.bwrap !== undefined;
  // As root, the sandboxed program (and its static analysis) runs as `nobody`, which must own its working directory.
  const runAs = sandboxed ? deps.sandbox.runAs : undefined;
  const workdir = await createWorkdir(fileName, code, runAs);
  try {
    const validation = executor.validator ? await analyse(executor.validator, fileName, workdir, signal, runAs) : undefined;
    const marker = randomUUID();
    const argv = [...executor.tool.command, fileName];
    const maxDisk = deps.config.exc.max_disk_bytes;
    const result = await runProgram({
      argv: sandboxed ? sandboxArgv(deps.sandbox.bwrap as string, workdir, argv, deps.hidden(), maxDisk) : argv,
      cwd: workdir,
      env: programEnv(workdir, marker, runAs),
      ...(runAs ? { runAs } : {}),
      timeoutMs: deps.config.exc.timeout * 1000,
      maxOutputBytes: deps.config.exc.max_output_bytes,
      signal,
      marker,
      disk: { dir: workdir, bytes: maxDisk, prlimit: deps.prlimit },
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
    const { ok, errors } = await analyse(executor.validator, fileName, workdir, signal, runAs);
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
  runAs?: { uid: number; gid: number },
): Promise<{ ok: boolean; errors: string }> {
  const marker = randomUUID();
  const result = await runProgram({
    argv: [...validator, fileName],
    cwd: workdir,
    env: programEnv(workdir, marker, runAs),
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
 * just what programs need, plus the run's marker.
 */
function programEnv(workdir: string, marker: string, runAs?: { uid: number; gid: number }): Record<string, string> {
  const user = runAs ? 'nobody' : safeUserName();
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
