/** Finding a command on PATH, as the shell would. */
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';

/** Absolute path of `command` on `PATH`, or `undefined`. A command with a slash is checked as is. */
export function which(command: string, envPath = process.env.PATH ?? ''): string | undefined {
  const candidates = command.includes('/')
    ? [command]
    : envPath
        .split(':')
        .filter(Boolean)
        .map((dir) => path.join(dir, command));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}
