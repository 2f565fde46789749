/**
 * The plain `zino serve NAME [--config FILE] [--dir DIR]` that `zino up` and the systemd
 * units run, read without commander: seven services start at once, and loading and building
 * the whole command line cost each of them about 10 ms of CPU (docs/benchmarks.md, round 9).
 * Anything else (help, an unknown option, a missing value) is left to commander, which says
 * what is wrong as it does for every other command.
 */
import type { ConfigOptions } from './config.js';

/** The service and options of a plain `serve` command line (`argv` without node and the script), else undefined. */
export function plainServeArgv(argv: readonly string[]): { service: string; options: ConfigOptions } | undefined {
  if (argv[0] !== 'serve') return undefined;
  const options: ConfigOptions = {};
  let service: string | undefined;
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i] as string;
    const eq = arg.indexOf('=');
    const flag = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    const key = flag === '-c' || flag === '--config' ? 'config' : flag === '--dir' ? 'dir' : undefined;
    if (key !== undefined) {
      const value = flag === arg ? argv[++i] : arg.slice(eq + 1);
      // A repeated option (commander takes the last) or one without its value: left to commander.
      if (value === undefined || value === '' || value.startsWith('-') || options[key] !== undefined) return undefined;
      options[key] = value;
    } else if (arg.startsWith('-') || service !== undefined) {
      return undefined;
    } else {
      service = arg;
    }
  }
  return service === undefined ? undefined : { service, options };
}
