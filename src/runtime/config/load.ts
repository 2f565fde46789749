/**
 * ZINO.toml → `Readonly<ResolvedConfig>`: parse with smol-toml to `unknown`, then
 * check every key against {@link SCHEMA}, fill defaults, resolve paths.
 *
 * - File: `--config`, else `$ZINO_CONFIG`; else `./ZINO.toml` when it exists, with the
 *   local configuration `DIR/ZINO.toml` of the runtime directory (`--dir`/`$ZINO_DIR`)
 *   read on top of it when that exists; else defaults.
 * - Relative paths are resolved against the directory of the file that sets them
 *   (defaults: the first file's directory, cwd without a file).
 * - A wrong type or an unreadable file throws {@link ConfigError} naming the file and the key.
 * - Unknown sections and keys are returned as warnings (the caller logs them).
 */
import { readFileSync, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { parse, TomlError } from 'smol-toml';
import { ZinoError } from '../errors.js';
import { MAX_SOCKET_PATH_BYTES } from '../transport/socket-path.js';
import { SCHEMA, SERVICE_NAMES, type AnyKeySpec, type AnyTablesSpec, type ResolvedConfig, type ScalarKeySpec } from './schema.js';

/** A configuration problem that stops the process; the message names the file and the key. */
export class ConfigError extends ZinoError {
  constructor(message: string) {
    super('CONFIG', message);
    this.name = 'ConfigError';
  }
}

/** Where to find the configuration and what to override. */
export interface LoadOptions {
  /** Explicit config file (`--config`); must exist. */
  path?: string | undefined;
  /**
   * One directory for all sockets (`DIR/run/<service>.sock`) and the mem data
   * (`DIR/data/mem`), overriding the file (`--dir`, else `$ZINO_DIR`). This is how
   * `zino up` runs the suite for an unprivileged user without touching /run.
   */
  dir?: string | undefined;
  /** Environment to read `ZINO_CONFIG`, `ZINO_DIR` and `LLM_API_KEY` from. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Directory that relative paths resolve against when no file is used. @default process.cwd() */
  cwd?: string;
}

/** The outcome of loading: the config, which files it came from, and what to warn about. */
export interface LoadedConfig {
  config: Readonly<ResolvedConfig>;
  /** Absolute path of the most specific file read (the local one when there is one), or `null` when running on defaults. */
  file: string | null;
  /** Every file read, in the order they were applied (later ones win). */
  files: string[];
  warnings: string[];
}

/** Name of the local configuration file inside a runtime directory (`DIR/ZINO.toml`). */
export const LOCAL_CONFIG_NAME = 'ZINO.toml';

/** The local configuration file of runtime directory `dir`. */
export function localConfigPath(dir: string): string {
  return path.join(dir, LOCAL_CONFIG_NAME);
}

/** Finds, reads and resolves the configuration. Throws {@link ConfigError}. */
export function loadConfig(options: LoadOptions = {}): LoadedConfig {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const explicit = options.path ?? (env.ZINO_CONFIG || undefined);
  const dirOption = options.dir ?? (env.ZINO_DIR || undefined);
  const dir = dirOption === undefined ? undefined : path.resolve(cwd, dirOption);
  if (dir !== undefined) checkRuntimeDir(dir, options.dir !== undefined ? '--dir' : '$ZINO_DIR');
  const files: string[] = [];
  if (explicit !== undefined) files.push(path.resolve(cwd, explicit));
  else {
    const shared = path.resolve(cwd, 'ZINO.toml');
    if (existsSync(shared)) files.push(shared);
    // The local configuration beside the runtime directory's sockets and data (`zino init`).
    const local = dir === undefined ? undefined : localConfigPath(dir);
    if (local !== undefined && local !== shared && existsSync(local)) files.push(local);
  }
  const layers = files.map((file) => ({ file, raw: readToml(file) }));
  const warnings: string[] = [];
  // Each file alone first: an error or a warning names the file it is in.
  for (const layer of layers) warnings.push(...resolveConfig(layer.raw, { file: layer.file, baseDir: path.dirname(layer.file), env, dir }).warnings);
  const last = layers.at(-1);
  const raw = layers.length > 1 ? mergeLayers(layers) : (last?.raw ?? {});
  const { config } = resolveConfig(raw, {
    file: last?.file ?? null,
    baseDir: layers[0] ? path.dirname(layers[0].file) : cwd,
    env,
    dir,
  });
  return { config, file: last?.file ?? null, files, warnings };
}

/**
 * One document from several files, later ones winning key by key. A relative path a
 * file sets is made absolute against that file's directory first, so that it means
 * what it meant in its own file.
 */
function mergeLayers(layers: { file: string; raw: unknown }[]): Record<string, unknown> {
  const sections: Readonly<Record<string, Readonly<Record<string, AnyKeySpec>>>> = SCHEMA;
  const merged: Record<string, Record<string, unknown>> = {};
  for (const { file, raw } of layers) {
    if (!isTable(raw)) continue;
    for (const [name, section] of Object.entries(raw)) {
      if (!isTable(section)) continue;
      const into = (merged[name] ??= {});
      for (const [key, value] of Object.entries(section)) {
        const spec = sections[name]?.[key];
        into[key] = spec?.kind === 'path' && typeof value === 'string' && value !== '' ? path.resolve(path.dirname(file), value) : value;
      }
    }
  }
  return merged;
}

/** Context for {@link resolveConfig}. */
export interface ResolveContext {
  /** Named in error messages; `null` means built-in defaults. */
  file: string | null;
  /** Relative paths resolve against this directory. */
  baseDir: string;
  env: NodeJS.ProcessEnv;
  /** Absolute runtime directory overriding sockets and data_dir (see {@link LoadOptions.dir}). */
  dir?: string | undefined;
}

/** Validates a parsed TOML document and produces the resolved configuration. */
export function resolveConfig(raw: unknown, ctx: ResolveContext): { config: Readonly<ResolvedConfig>; warnings: string[] } {
  const where = ctx.file ?? 'configuration';
  const warnings: string[] = [];
  if (!isTable(raw)) throw new ConfigError(`${where}: the document must be a TOML table`);
  // Built section by section from the schema walk below, which gives every key of ResolvedConfig its checked value.
  const out: { [S in keyof ResolvedConfig]?: Record<string, unknown> } = {};
  const sections: Readonly<Record<string, Readonly<Record<string, AnyKeySpec>>>> = SCHEMA;

  for (const name of Object.keys(raw)) {
    if (!(name in sections)) warnings.push(`${where}: unknown section [${name}] ignored${suggest(name, Object.keys(sections))}`);
  }
  for (const [sectionName, keys] of Object.entries(sections)) {
    const section: unknown = raw[sectionName];
    if (section !== undefined && !isTable(section)) {
      throw new ConfigError(`${where}: [${sectionName}] must be a table, got ${describe(section)}`);
    }
    const given: Record<string, unknown> = section ?? {};
    for (const key of Object.keys(given)) {
      if (!(key in keys)) warnings.push(`${where}: unknown key [${sectionName}] ${key} ignored${suggest(key, Object.keys(keys))}`);
    }
    const resolved: Record<string, unknown> = {};
    for (const [key, spec] of Object.entries(keys)) {
      resolved[key] =
        spec.kind === 'tables'
          ? readTables(given[key], spec, `${sectionName}.${key}`, where, ctx.baseDir, warnings)
          : readKey(given[key], spec, `${where}: [${sectionName}] ${key}`, ctx.baseDir);
    }
    out[sectionName as keyof ResolvedConfig] = resolved;
  }

  const config = out as ResolvedConfig;
  const agent = isTable(raw.agent) ? raw.agent : {};
  if (agent.max_iterations === undefined) config.agent.max_iterations = config.agr.max_iterations;
  // The environment is the last resort: a key file named in the configuration wins over it.
  if (config.api.key === '' && config.api.key_file === '' && ctx.env.LLM_API_KEY) config.api.key = ctx.env.LLM_API_KEY;
  if (ctx.dir !== undefined) {
    for (const service of SERVICE_NAMES) config[service].socket = path.join(ctx.dir, 'run', `${service}.sock`);
    config.mem.data_dir = path.join(ctx.dir, 'data', 'mem');
    config.exc.audit_log = path.join(ctx.dir, 'data', 'audit.jsonl');
  }
  if (config.exc.audit_log === '') config.exc.audit_log = path.join(path.dirname(config.mem.data_dir), 'audit.jsonl');
  // The token sits beside mem's data (`data/http.token` by default, `DIR/data/http.token` under --dir).
  const http = isTable(raw.http) ? raw.http : {};
  if (http.token_file === undefined) config.http.token_file = path.join(path.dirname(config.mem.data_dir), 'http.token');
  for (const service of SERVICE_NAMES) {
    const socket = config[service].socket;
    const bytes = Buffer.byteLength(socket);
    if (bytes > MAX_SOCKET_PATH_BYTES) {
      const from = ctx.dir !== undefined ? ` (from --dir/$ZINO_DIR ${ctx.dir})` : '';
      throw new ConfigError(
        `${where}: [${service}] socket${from} is ${bytes} bytes, longer than the ${MAX_SOCKET_PATH_BYTES} a Unix socket path may have: ${socket}`,
      );
    }
  }
  return { config: deepFreeze(config), warnings };
}

/** `--dir`/`$ZINO_DIR` must be a directory when it exists (it is created otherwise). */
function checkRuntimeDir(dir: string, name: string): void {
  let isDirectory: boolean;
  try {
    isDirectory = statSync(dir).isDirectory();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return;
    if (code === 'ENOTDIR') isDirectory = false;
    else throw new ConfigError(`${name} ${dir}: cannot be used (${code ?? (err as Error).message})`);
  }
  if (!isDirectory) throw new ConfigError(`${name} ${dir} is not a directory`);
}

function readToml(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unknown error';
    throw new ConfigError(`${file}: cannot read the config file (${code})`);
  }
  try {
    return parse(text);
  } catch (err) {
    if (err instanceof TomlError) {
      const reason = err.message.split('\n')[0] ?? 'invalid TOML';
      throw new ConfigError(`${file}: invalid TOML at line ${err.line}, column ${err.column}: ${reason}`);
    }
    throw new ConfigError(`${file}: invalid TOML: ${(err as Error).message}`);
  }
}

/** One key's value: its default when absent, else checked; a path resolved against `baseDir` (an optional one only when given). */
function readKey(value: unknown, spec: ScalarKeySpec, name: string, baseDir: string): unknown {
  const checked = value === undefined ? spec.default : checkValue(value, spec, name);
  if (spec.kind !== 'path') return checked;
  if (spec.optional === true && checked === '') return '';
  return path.resolve(baseDir, checked as string);
}

/**
 * A table of tables (`[mcp.servers.<name>]`): every entry checked key by key like a
 * section (unknown keys warned about), then by the spec's own `check`.
 */
function readTables(value: unknown, spec: AnyTablesSpec, id: string, where: string, baseDir: string, warnings: string[]): Record<string, unknown> {
  if (value === undefined) return {};
  if (!isTable(value)) throw new ConfigError(`${where}: [${id}] must hold tables like [${id}.NAME], got ${describe(value)}`);
  const out: Record<string, unknown> = {};
  for (const [name, entry] of Object.entries(value)) {
    const table = `[${id}.${name}]`;
    if (!spec.name.pattern.test(name)) throw new ConfigError(`${where}: ${table}: the name must be ${spec.name.rule}`);
    if (!isTable(entry)) throw new ConfigError(`${where}: ${table} must be a table, got ${describe(entry)}`);
    for (const key of Object.keys(entry)) {
      if (!(key in spec.entry)) warnings.push(`${where}: unknown key ${table} ${key} ignored${suggest(key, Object.keys(spec.entry))}`);
    }
    const resolved: Record<string, unknown> = {};
    for (const [key, keySpec] of Object.entries(spec.entry)) resolved[key] = readKey(entry[key], keySpec, `${where}: ${table} ${key}`, baseDir);
    const problem = spec.check?.(resolved);
    if (problem !== undefined) throw new ConfigError(`${where}: ${table} ${problem}`);
    out[name] = resolved;
  }
  return out;
}

function checkValue(value: unknown, spec: ScalarKeySpec, name: string): unknown {
  switch (spec.kind) {
    case 'env': {
      if (!isTable(value)) throw new ConfigError(`${name} must be a table of strings like { NAME = "value" }, got ${describe(value)}`);
      for (const [key, v] of Object.entries(value)) {
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw new ConfigError(`${name}: "${key}" is not an environment variable name`);
        if (typeof v !== 'string') throw new ConfigError(`${name}: ${key} must be a string, got ${describe(v)}`);
      }
      return { ...value };
    }
    case 'boolean':
      if (typeof value !== 'boolean') throw new ConfigError(`${name} must be true or false, got ${describe(value)}`);
      return value;
    case 'number':
    case 'integer': {
      if (typeof value !== 'number' || !Number.isFinite(value)) throw new ConfigError(`${name} must be a number, got ${describe(value)}`);
      if (spec.kind === 'integer' && !Number.isInteger(value)) throw new ConfigError(`${name} must be an integer, got ${value}`);
      if (spec.min !== undefined && value < spec.min) throw new ConfigError(`${name} must be at least ${spec.min}, got ${value}`);
      if (spec.max !== undefined && value > spec.max) throw new ConfigError(`${name} must be at most ${spec.max}, got ${value}`);
      return value;
    }
    case 'string':
    case 'path': {
      if (typeof value !== 'string') throw new ConfigError(`${name} must be a string, got ${describe(value)}`);
      // "" is "not set" for an optional path (its default is filled in or left out); blanks are never a path.
      if (spec.kind === 'path' && value.trim() === '' && !(spec.optional === true && value === '')) throw new ConfigError(`${name} must not be empty`);
      if (spec.choices && !spec.choices.includes(value)) {
        throw new ConfigError(`${name} must be one of ${spec.choices.map((c) => `"${c}"`).join(', ')}, got "${value}"`);
      }
      const problem = spec.check?.(value);
      if (problem !== undefined) throw new ConfigError(`${name} ${problem}`);
      return value;
    }
    case 'strings': {
      if (!Array.isArray(value)) throw new ConfigError(`${name} must be a list of strings, got ${describe(value)}`);
      if (spec.maxItems !== undefined && value.length > spec.maxItems)
        throw new ConfigError(`${name} must have at most ${spec.maxItems} entries, got ${value.length}`);
      const list: string[] = [];
      for (const [i, item] of value.entries()) {
        if (typeof item !== 'string') throw new ConfigError(`${name}[${i}] must be a string, got ${describe(item)}`);
        const problem = spec.check?.(item);
        if (problem !== undefined) throw new ConfigError(`${name}[${i}] ${problem}`);
        list.push(item);
      }
      return list;
    }
  }
}

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  if (isTable(value)) return 'a table';
  if (typeof value === 'string') return `the string ${JSON.stringify(value)}`;
  return `${typeof value} ${String(value)}`;
}

/** " (did you mean X?)" for a near miss: edit distance ≤ 2. */
function suggest(name: string, known: string[]): string {
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of known) {
    const d = editDistance(name, candidate);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best === undefined ? '' : ` (did you mean ${best}?)`;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

function deepFreeze<T extends object>(value: T): Readonly<T> {
  for (const inner of Object.values(value)) if (typeof inner === 'object' && inner !== null) deepFreeze(inner);
  return Object.freeze(value);
}
