/**
 * What is already on the target system, read once before planning: the
 * planners decide only from this, so their decisions can be tested without a
 * system to install into.
 */
import { existsSync, lstatSync, readdirSync, readFileSync, realpathSync, statSync, type Stats } from 'node:fs';
import path from 'node:path';
import { parse } from 'smol-toml';
import { findGroup, findUser } from './accounts.js';
import { KNOWN_UNITS, MANIFEST, PATHS, RUNNER_GROUP, ZINO_GROUP, ZINO_USER, unitPath, type Layout } from './layout.js';
import { readPackageName } from './package-files.js';
import { isOurWrapper } from './render.js';

/** What a directory at the prefix is. */
export type PrefixState = 'absent' | 'empty' | 'zino' | 'foreign';

/** What the `zino` command at {@link PATHS.wrapper} is. */
export type WrapperState = 'absent' | 'ours' | 'foreign';

/** The target system as found. */
export interface Observed {
  userExists: boolean;
  groupExists: boolean;
  /** The zino-runner group (zino-exc's way to the privileged runner). */
  runnerGroupExists: boolean;
  configDirExists: boolean;
  configExists: boolean;
  envExists: boolean;
  /** Mode of the env file when it exists (to warn when others can read it). */
  envMode?: number | undefined;
  stateDirExists: boolean;
  /** The HTTP front end's state directory (its token). */
  httpStateDirExists: boolean;
  /** The existing configuration sets `[http] enabled = true` (false when there is none, or it cannot be read). */
  httpEnabled: boolean;
  runtimeDirExists: boolean;
  prefix: PrefixState;
  /** The package being installed is the prefix itself (`zino` run from the installation). */
  sourceIsPrefix: boolean;
  wrapper: WrapperState;
  /** Units present in the unit directory. */
  unitsPresent: string[];
  tmpfilesExists: boolean;
  sysusersExists: boolean;
  /** A systemd manager runs this system (only meaningful for the live root). */
  systemdRunning: boolean;
  /** The effective uid is 0. */
  isRoot: boolean;
}

/** Reads the target's state for `layout`, installing from `source` (if any). */
export function observe(layout: Layout, source?: string): Observed {
  const at = layout.at;
  const envStat = statOrUndefined(at(PATHS.envFile));
  return {
    userExists: findUser(layout.root, ZINO_USER) !== undefined,
    groupExists: findGroup(layout.root, ZINO_GROUP) !== undefined,
    runnerGroupExists: findGroup(layout.root, RUNNER_GROUP) !== undefined,
    configDirExists: existsSync(at(PATHS.configDir)),
    configExists: existsSync(at(PATHS.configFile)),
    envExists: envStat !== undefined,
    envMode: envStat ? envStat.mode & 0o777 : undefined,
    stateDirExists: existsSync(at(PATHS.stateDir)),
    httpStateDirExists: existsSync(at(PATHS.httpStateDir)),
    httpEnabled: httpEnabledIn(at(PATHS.configFile)),
    runtimeDirExists: existsSync(at(PATHS.runtimeDir)),
    prefix: prefixState(at(layout.prefix)),
    sourceIsPrefix: source !== undefined && sameDirectory(source, at(layout.prefix)),
    wrapper: wrapperState(at(PATHS.wrapper)),
    unitsPresent: KNOWN_UNITS.filter((unit) => existsSync(at(unitPath(unit)))),
    tmpfilesExists: existsSync(at(PATHS.tmpfilesFile)),
    sysusersExists: existsSync(at(PATHS.sysusersFile)),
    systemdRunning: layout.live && existsSync('/run/systemd/system'),
    isRoot: process.geteuid?.() === 0,
  };
}

/**
 * Whether the configuration at `file` enables the HTTP front end. A file that cannot
 * be read or parsed counts as not enabling it (the services will say what is wrong
 * with it when they start).
 */
export function httpEnabledIn(file: string): boolean {
  try {
    return configEnablesHttp(readFileSync(file, 'utf8'));
  } catch {
    return false;
  }
}

/** Whether a ZINO.toml text sets `[http] enabled = true`; false when it does not parse. */
export function configEnablesHttp(text: string): boolean {
  try {
    const http = (parse(text) as Record<string, unknown>).http;
    return typeof http === 'object' && http !== null && (http as Record<string, unknown>).enabled === true;
  } catch {
    return false;
  }
}

/** Whether `dir` holds a ZINO installation, nothing, or something else. */
export function prefixState(dir: string): PrefixState {
  let entries: string[];
  try {
    if (!lstatSync(dir).isDirectory()) return 'foreign';
    entries = readdirSync(dir);
  } catch {
    return 'absent';
  }
  if (entries.length === 0) return 'empty';
  if (existsSync(path.join(dir, MANIFEST)) || readPackageName(path.join(dir, 'package.json')) === 'zino') return 'zino';
  return 'foreign';
}

function wrapperState(file: string): WrapperState {
  try {
    return isOurWrapper(readFileSync(file, 'utf8')) ? 'ours' : 'foreign';
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'absent' : 'foreign';
  }
}

function statOrUndefined(file: string): Stats | undefined {
  try {
    return statSync(file);
  } catch {
    return undefined;
  }
}

function sameDirectory(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return false;
  }
}
