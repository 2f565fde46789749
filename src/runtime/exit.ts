/**
 * Exit statuses of the `zino` command: one table for every command, following
 * sysexits(3) where one fits. The same cause gives the same status whichever
 * command meets it: a daemon (or mem, or the LLM behind rtr) that cannot be reached
 * is 69 for `ask`, `chat`, `status` and `mem` alike. docs/operations.md prints this
 * table; {@link exitStatusFor} is how a command turns an error into one.
 */
import { ZinoError, type ErrorCode } from './errors.js';

/** The exit statuses. */
export const EXIT = {
  /** It worked; `status`: every service answers and the LLM is usable. */
  OK: 0,
  /** The request failed: the suite answered with an error (bad input, the LLM refused, …). */
  FAILURE: 1,
  /** Bad command-line usage. */
  USAGE: 2,
  /** An answer came back, but cut short: the iteration limit stopped it, or its tools could not run. */
  INCOMPLETE: 3,
  /** Something needed cannot be reached (EX_UNAVAILABLE): the daemon, another service, or the LLM. */
  UNAVAILABLE: 69,
  /** Another server already listens on the socket (EX_CANTCREAT): restarting cannot help. */
  IN_USE: 73,
  /** Invalid or missing configuration (EX_CONFIG), e.g. no LLM configured: systemd should not restart in a loop on it. */
  CONFIG: 78,
  /** Interrupted by Ctrl-C (128 + SIGINT). */
  INTERRUPTED: 130,
} as const;

/** One of {@link EXIT}'s values. */
export type ExitStatus = (typeof EXIT)[keyof typeof EXIT];

/** The table as documented: status, name, meaning. */
export const EXIT_TABLE: readonly { status: ExitStatus; name: keyof typeof EXIT; meaning: string }[] = [
  { status: EXIT.OK, name: 'OK', meaning: 'success; for `status`: all seven services answer and the LLM is usable' },
  { status: EXIT.FAILURE, name: 'FAILURE', meaning: 'the request failed: the suite answered with an error (bad input, the LLM refused it, …)' },
  { status: EXIT.USAGE, name: 'USAGE', meaning: 'bad command line (unknown option, missing argument, empty message)' },
  { status: EXIT.INCOMPLETE, name: 'INCOMPLETE', meaning: 'an answer came back cut short: stopped by `[agr] max_iterations`, or its tool calls could not run' },
  {
    status: EXIT.UNAVAILABLE,
    name: 'UNAVAILABLE',
    meaning: 'something needed cannot be reached: the daemon, another service, or the LLM (including `[rtr] timeout`)',
  },
  { status: EXIT.IN_USE, name: 'IN_USE', meaning: 'another suite already listens on these sockets (`up`, `serve`)' },
  { status: EXIT.CONFIG, name: 'CONFIG', meaning: 'invalid configuration, or no LLM configured (`NOT_CONFIGURED`)' },
  { status: EXIT.INTERRUPTED, name: 'INTERRUPTED', meaning: 'cancelled with Ctrl-C' },
];

/**
 * The exit status for an error a command ends on, by its code (never its message):
 * unreachable or too slow → 69, configuration → 78, cancelled → 130, else 1.
 */
export function exitStatusFor(err: unknown): ExitStatus {
  if (!(err instanceof ZinoError)) return EXIT.FAILURE;
  return STATUS_OF_CODE[err.code];
}

/** Every error code's exit status: a new code must be placed here (the compiler asks for it). */
const STATUS_OF_CODE: Readonly<Record<ErrorCode, ExitStatus>> = {
  UPSTREAM_UNAVAILABLE: EXIT.UNAVAILABLE,
  CONNECTION_CLOSED: EXIT.UNAVAILABLE,
  TIMEOUT: EXIT.UNAVAILABLE,
  SHUTTING_DOWN: EXIT.UNAVAILABLE,
  OVERLOADED: EXIT.UNAVAILABLE,
  CONFIG: EXIT.CONFIG,
  NOT_CONFIGURED: EXIT.CONFIG,
  ADDRESS_IN_USE: EXIT.IN_USE,
  CANCELLED: EXIT.INTERRUPTED,
  FRAME_TOO_LARGE: EXIT.FAILURE,
  INVALID_FRAME: EXIT.FAILURE,
  INVALID_REQUEST: EXIT.FAILURE,
  UNKNOWN_TYPE: EXIT.FAILURE,
  UPSTREAM_ERROR: EXIT.FAILURE,
  INTERNAL: EXIT.FAILURE,
  // An approval answered wrongly (`zino approve`: unknown, expired, already settled) or a host run refused: an error answer.
  APPROVAL_DENIED: EXIT.FAILURE,
  APPROVAL_UNKNOWN: EXIT.FAILURE,
  APPROVAL_EXPIRED: EXIT.FAILURE,
  APPROVAL_SETTLED: EXIT.FAILURE,
  AUDIT_UNAVAILABLE: EXIT.FAILURE,
  RUN_NOT_RECORDED: EXIT.FAILURE,
};
