/**
 * Logging: pino JSON lines on stderr (journald captures them). Every line has
 * `service`; request-scoped lines come from a child with `request_id` and `type`.
 * Level: `ZINO_LOG_LEVEL`, then `[logging] level`, then `info`.
 */
import { pino, type Logger, type DestinationStream } from 'pino';
import { mapStack } from './stack.js';

export type { Logger } from 'pino';

const LEVELS = new Set(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']);
/** Python's level names, as the original implementation's configs use them. */
const ALIASES: Record<string, string> = { warning: 'warn', critical: 'fatal', notset: 'trace' };

/** Maps a level name (any case, Python names accepted) to pino's, or `undefined` when unknown. */
export function normaliseLevel(name: string | undefined): string | undefined {
  if (name === undefined) return undefined;
  const lower = name.trim().toLowerCase();
  const level = ALIASES[lower] ?? lower;
  return LEVELS.has(level) ? level : undefined;
}

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** `[logging] level` from the config. */
  configLevel?: string | undefined;
  /** Environment to read `ZINO_LOG_LEVEL` from. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Where lines go. @default stderr, written synchronously so nothing is lost on exit */
  destination?: DestinationStream;
}

/**
 * The name esbuild gives a class that refers to itself in its body: `var APIError = class
 * _APIError …`. The bundle is built without `keepNames` (docs/decisions.md), so such a class's
 * `name` is `_APIError`; the openai SDK's and the MCP SDK's errors are written that way.
 */
const INNER_CLASS_NAME = /^_(?=[A-Z])/;

/**
 * pino's error serializer, with the stack (and its causes') mapped to the sources, and the
 * `type` a bundled class of the form above would show given back its name as written.
 */
function serializeError(err: Error): ReturnType<typeof pino.stdSerializers.err> {
  if (err === null || typeof err !== 'object') return err;
  let out = pino.stdSerializers.err(err);
  // Something not error-like comes back as it is: a copy, so that what was logged is left as it was.
  if ((out as unknown) === err) out = Object.assign({}, out);
  if (typeof out.stack === 'string') out.stack = mapStack(out.stack);
  if (typeof out.type === 'string') out.type = out.type.replace(INNER_CLASS_NAME, '');
  // The one field redactSecrets leaves to the serializer: an error is logged through its own properties.
  for (const name of NESTED_SECRETS) if (out[name] !== undefined) out[name] = CENSOR;
  return out;
}

/** What a secret is written as. */
const CENSOR = '[redacted]';
/** Fields never written at the top of a line ... */
const TOP_SECRETS = new Set(['key', 'api_key', 'apiKey']);
/** ... nor inside a field's object, one level down (and `headers.authorization`). */
const NESTED_SECRETS = ['key', 'api_key', 'apiKey'] as const;

/**
 * A log line's fields with every secret censored: `key`, `api_key` and `apiKey` at the top and
 * inside any field's object, one level down (an error under `err` through {@link serializeError});
 * `headers.authorization`. The object logged is not changed: a copy is made only when there is
 * something to hide. It does what pino's `redact` with those paths did (and `apiKey` one level
 * down besides), whose wildcard paths ran on every field of every line: 40 % of a line's cost,
 * and the four lines of a request about 3 % of the suite's CPU per request (docs/benchmarks.md,
 * round 15). A child logger's bindings are not seen here (pino formats them apart); ours bind
 * `request_id` and `type` only (transport/connection.ts, frontends/http/server.ts).
 */
export function redactSecrets(fields: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  for (const name in fields) {
    const value = fields[name];
    if (value === undefined || value === null) continue;
    if (TOP_SECRETS.has(name)) {
      (out ??= Object.assign({}, fields))[name] = CENSOR;
      continue;
    }
    if (typeof value !== 'object' || name === 'err') continue;
    const inner = value as Record<string, unknown>;
    const authorization = name === 'headers' && inner.authorization !== undefined;
    if (inner.key === undefined && inner.api_key === undefined && !authorization) continue;
    const copy: Record<string, unknown> = Object.assign({}, inner);
    for (const secret of NESTED_SECRETS) if (copy[secret] !== undefined) copy[secret] = CENSOR;
    if (authorization) copy.authorization = CENSOR;
    (out ??= Object.assign({}, fields))[name] = copy;
  }
  return out ?? fields;
}

/** The second {@link isoTime} last formatted, and its text up to the milliseconds. */
let isoSecond = Number.NaN;
let isoPrefix = '';

/**
 * pino's `isoTime` (`,"time":"2026-11-29T03:07:45.123Z"`), formatting the date once a second:
 * `toISOString` was a fifth of a line's cost.
 */
export function isoTime(now: number = Date.now()): string {
  const second = Math.floor(now / 1000);
  if (second !== isoSecond) {
    const iso = new Date(second * 1000).toISOString();
    isoPrefix = `,"time":"${iso.slice(0, iso.length - 4)}`;
    isoSecond = second;
  }
  const ms = now - second * 1000;
  return `${isoPrefix}${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z"`;
}

/** The root logger of a process, with `service` on every line. */
export function createLogger(service: string, options: LoggerOptions = {}): Logger {
  const env = options.env ?? process.env;
  const fromEnv = env.ZINO_LOG_LEVEL;
  const level = normaliseLevel(fromEnv) ?? normaliseLevel(options.configLevel) ?? 'info';
  const logger = pino(
    {
      level,
      base: { service, pid: process.pid },
      timestamp: () => isoTime(),
      formatters: { level: (label) => ({ level: label }), log: redactSecrets },
      // A logged error's stack points into the sources, also from the bundled code (stack.ts).
      serializers: { err: serializeError },
    },
    options.destination ?? pino.destination({ fd: 2, sync: true }),
  );
  if (fromEnv !== undefined && normaliseLevel(fromEnv) === undefined) {
    logger.warn({ value: fromEnv }, 'ZINO_LOG_LEVEL is not a log level; ignored');
  } else if (fromEnv === undefined && options.configLevel !== undefined && normaliseLevel(options.configLevel) === undefined) {
    logger.warn({ value: options.configLevel }, '[logging] level is not a log level; using info');
  }
  return logger;
}
