/**
 * The plain `zino serve NAME [--config FILE] [--dir DIR]` that `zino up` and the systemd
 * units run, and the plain `zino up`, read without commander: seven services start at once,
 * and loading and building the whole command line cost each of them about 10 ms of CPU
 * (docs/benchmarks.md, round 9), and `zino up` as much before its first spawn (round 13).
 * Anything else (help, an unknown option, a missing value) is left to commander, which says
 * what is wrong as it does for every other command.
 */
import type { UpOptions } from './commands/up.js';
import type { ConfigOptions } from './config.js';

/** The service and options of a plain `serve` command line (`argv` without node and the script), else undefined. */
export function plainServeArgv(argv: readonly string[]): { service: string; options: ConfigOptions } | undefined {
  if (argv[0] !== 'serve') return undefined;
  const read = readPlain(argv, []);
  const service = read?.args.length === 1 ? read.args[0] : undefined;
  return read && service !== undefined ? { service, options: read.options } : undefined;
}

/**
 * The options of a plain `zino up [--config FILE] [--dir DIR] [--http]`, else undefined. It is
 * on the cold start's path too: everything `zino up` does before it spawns the first service
 * delays all seven (docs/benchmarks.md, round 13).
 */
export function plainUpArgv(argv: readonly string[]): UpOptions | undefined {
  if (argv[0] !== 'up') return undefined;
  const read = readPlain(argv, ['--http']);
  if (!read || read.args.length > 0) return undefined;
  return read.switches.has('--http') ? { ...read.options, http: true } : read.options;
}

/**
 * The arguments after the command, `--config`/`-c` and `--dir` (each at most once, with a
 * value), and the given switches (each at most once); undefined for anything else.
 */
function readPlain(argv: readonly string[], switches: readonly string[]): { args: string[]; options: ConfigOptions; switches: Set<string> } | undefined {
  const options: ConfigOptions = {};
  const args: string[] = [];
  const on = new Set<string>();
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
    } else if (switches.includes(arg) && !on.has(arg)) {
      on.add(arg);
    } else if (arg.startsWith('-')) {
      return undefined;
    } else {
      args.push(arg);
    }
  }
  return { args, options, switches: on };
}
