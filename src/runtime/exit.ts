/** Exit statuses of the `zino` command, following sysexits(3) where one fits. */
export const EXIT = {
  OK: 0,
  /** Something failed: an error answer, an unreachable daemon. */
  FAILURE: 1,
  /** Bad command-line usage. */
  USAGE: 2,
  /** The service could not reach what it needs (EX_UNAVAILABLE). */
  UNAVAILABLE: 69,
  /** Another server already listens on the socket (EX_CANTCREAT): restarting cannot help. */
  IN_USE: 73,
  /** Invalid configuration (EX_CONFIG): systemd should not restart in a loop on it. */
  CONFIG: 78,
  /** Interrupted by Ctrl-C (128 + SIGINT). */
  INTERRUPTED: 130,
} as const;
