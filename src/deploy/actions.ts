/**
 * The steps of an installation or removal, as data: the planners decide them
 * from what is on the target, `apply` carries them out (or, with `--dry-run`,
 * only prints them). Every path is a path on the target system.
 */

/** Owner of a file: `root` or the zino user/group, by name. */
export interface Owner {
  user: string;
  group: string;
}

/**
 * Whether a command needs a running systemd: `required` (without one the step
 * cannot be done, and the command fails), `optional` (without one there is
 * nothing for it to do: skipped) or `none` (works on files alone).
 */
export type ManagerNeed = 'required' | 'optional' | 'none';

/** One step. */
export type Action =
  /** Create a directory (and parents); set mode and owner on the last one. */
  | { kind: 'mkdir'; path: string; mode: number; owner?: Owner | undefined }
  /** Write a file (replacing it); set mode and owner. */
  | { kind: 'write'; path: string; content: string; mode: number; owner?: Owner | undefined; why: string }
  /** Copy `entries` of the package at `source` into `prefix` (staged, then swapped in). */
  | { kind: 'install-package'; source: string; prefix: string; entries: string[]; manifest: string }
  /** Remove a file or a directory tree. */
  | { kind: 'remove'; path: string; why: string }
  /** Run a command on the target system. */
  | { kind: 'run'; argv: string[]; why: string; manager: ManagerNeed }
  /** Something left as it is, on purpose. */
  | { kind: 'keep'; path: string; why: string }
  /** Something the operator should know or do. */
  | { kind: 'note'; text: string };

/** `0750`-style octal. */
export function octal(mode: number): string {
  return `0${mode.toString(8).padStart(3, '0')}`;
}

/** Quotes an argument for display as a shell command. */
export function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`;
}

/** One line saying what `action` does (or would do). */
export function describe(action: Action): string {
  const owner = (o: Owner | undefined): string => (o ? ` ${o.user}:${o.group}` : '');
  switch (action.kind) {
    case 'mkdir':
      return `create directory ${action.path} (${octal(action.mode)}${owner(action.owner)})`;
    case 'write':
      return `write ${action.path} (${octal(action.mode)}${owner(action.owner)}): ${action.why}`;
    case 'install-package':
      return `install the package into ${action.prefix} (${action.entries.length} entries from ${action.source})`;
    case 'remove':
      return `remove ${action.path}: ${action.why}`;
    case 'run':
      return `run: ${action.argv.map(shellQuote).join(' ')}  (${action.why})`;
    case 'keep':
      return `keep ${action.path}: ${action.why}`;
    case 'note':
      return action.text;
  }
}

/** True when `action` changes nothing (reported, never executed). */
export function isInformational(action: Action): boolean {
  return action.kind === 'keep' || action.kind === 'note';
}
