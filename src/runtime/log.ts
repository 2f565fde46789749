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
  const out = pino.stdSerializers.err(err);
  if (typeof out.stack === 'string') out.stack = mapStack(out.stack);
  if (typeof out.type === 'string') out.type = out.type.replace(INNER_CLASS_NAME, '');
  return out;
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
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      // A logged error's stack points into the sources, also from the bundled code (stack.ts).
      serializers: { err: serializeError },
      redact: { paths: ['key', 'api_key', 'apiKey', '*.key', '*.api_key', 'headers.authorization'], censor: '[redacted]' },
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
