/**
 * `zino up`: runs the whole suite in the foreground for development: the seven
 * services as children (and the HTTP front end when `[http] enabled` or `--http`),
 * restarted when they crash, all stopped on Ctrl-C/SIGTERM.
 */
import { readFileSync } from 'node:fs';
import type { ZinoClient } from '../../client/index.js';
import path from 'node:path';
import { SERVICE_NAMES, isListening, type ServiceName } from '../../runtime/index.js';
import { writeLocalConfig } from '../../runtime/config/local.js';
import { cliLoaded, fail, type ConfigOptions } from '../config.js';
import { EXIT } from '../../runtime/exit.js';
import { describeLlm } from '../llm-line.js';
import { formatLogLine } from '../up/log-line.js';
import { Supervisor } from '../up/supervisor.js';

/** Options of `zino up`. */
export interface UpOptions extends ConfigOptions {
  /** Run the HTTP front end even when `[http] enabled` is false. */
  http?: boolean;
}

/** Runs the suite until a signal. */
export async function upCommand(options: UpOptions): Promise<void> {
  // Checked before anything is written (a --dir that is a file is reported as such, exit 78).
  cliLoaded(options);
  const wrote = await ensureLocalConfig(options);
  const loaded = cliLoaded(options);
  const { config } = loaded;
  // Printed once here: the services are told (ZINO_SUPERVISED) not to repeat them seven times.
  for (const warning of loaded.warnings) process.stderr.write(`zino up: configuration warning: ${warning}\n`);
  if (config.approval.host_user !== '')
    process.stderr.write(
      `zino up: configuration warning: [approval] host_user = ${JSON.stringify(config.approval.host_user)} sends host runs to the privileged runner at ${config.runner.socket}, which zino up does not start: without one, host runs are refused; leave host_user empty to run them as yourself\n`,
    );
  const withHttp = config.http.enabled || options.http === true;
  // The front end's address as it logged it once listening (the port may have been 0).
  let httpUrl: string | undefined;
  const args: string[] = [];
  if (options.config !== undefined) args.push('--config', options.config);
  if (options.dir !== undefined) args.push('--dir', options.dir);
  const sockets = Object.fromEntries(SERVICE_NAMES.map((n) => [n, config[n].socket])) as Record<ServiceName, string>;
  // A second `zino up` on the same sockets must not start, nor touch the first one's sockets.
  // Asked of all seven at once: the services are spawned only after this, so it is on the cold start's path.
  const running = await Promise.all(SERVICE_NAMES.map((name) => isListening(sockets[name])));
  const busy = SERVICE_NAMES.find((_, i) => running[i]);
  if (busy !== undefined) {
    fail(`${busy} is already running at ${sockets[busy]}: another ZINO suite uses these sockets (stop it first, or use another --dir)`, EXIT.IN_USE);
  }
  const pretty = process.stderr.isTTY === true;
  const supervisor = new Supervisor({
    args,
    sockets,
    env: process.env,
    graceMs: config.limits.shutdown_grace_ms + 2000,
    http: withHttp ? { listen: config.http.listen, listening: () => httpUrl !== undefined } : undefined,
    // Pretty lines need every log line read here; JSON lines (a pipe, a file, the journal) go straight
    // from each service to our stderr, except the front end's, whose `listening` line gives its address.
    relay: (service) => pretty || service === 'http',
    onLog: (service, line) => {
      if (service === 'http') httpUrl ??= listeningUrl(line);
      process.stderr.write(`${pretty ? formatLogLine(service, line) : line}\n`);
    },
    onNotice: (message) => process.stderr.write(`zino up: ${message}\n`),
  });

  let stopping: Promise<void> | undefined;
  const stop = (code: number): void => {
    stopping ??= supervisor.stop().then(() => {
      process.stderr.write('zino up: stopped\n');
      process.exit(code);
    });
  };
  process.on('SIGINT', () => stop(EXIT.OK));
  process.on('SIGTERM', () => stop(EXIT.OK));
  process.on('SIGHUP', () => supervisor.signal('SIGHUP'));

  supervisor.start();
  try {
    await supervisor.ready();
  } catch (err) {
    await supervisor.stop();
    fail((err as Error).message);
  }
  const http = httpUrl === undefined ? undefined : { url: httpUrl, tokenFile: config.http.token_file };
  // The client library is loaded for the banner only, once the services run: not before spawning them.
  const { ZinoClient } = await import('../../client/index.js');
  process.stdout.write(await banner(new ZinoClient({ config }), options, loaded.files, wrote, http));
}

/** The `url` of the front end's `listening` log line, if `line` is that line. */
function listeningUrl(line: string): string | undefined {
  try {
    const entry = JSON.parse(line) as { msg?: unknown; url?: unknown };
    return entry.msg === 'listening' && typeof entry.url === 'string' ? entry.url : undefined;
  } catch {
    return undefined;
  }
}

/** The token of the front end, for the banner (it is the user's own terminal). */
function readToken(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (err) {
    return `(cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'})`;
  }
}

/**
 * With a runtime directory and no explicit config file, the local configuration
 * `DIR/ZINO.toml` is where the user's settings go: written on the first start.
 */
async function ensureLocalConfig(options: ConfigOptions): Promise<string | undefined> {
  const dir = options.dir ?? (process.env.ZINO_DIR || undefined);
  if (dir === undefined || options.config !== undefined || process.env.ZINO_CONFIG) return undefined;
  try {
    const { file, created } = await writeLocalConfig(path.resolve(dir));
    return created ? file : undefined;
  } catch (err) {
    return fail(`cannot write the local configuration in ${dir}: ${(err as Error).message}`, EXIT.CONFIG);
  }
}

async function banner(
  client: ZinoClient,
  options: ConfigOptions,
  files: string[],
  wrote: string | undefined,
  http: { url: string; tokenFile: string } | undefined,
): Promise<string> {
  let llm = 'unknown (rtr did not answer)';
  try {
    llm = describeLlm(await client.rtr.capabilities({ probe: true, timeoutMs: 10_000 }));
  } catch {
    // keep "unknown"
  }
  const shown = (file: string): string => path.relative(process.cwd(), file) || file;
  const configLine = files.length === 0 ? '(none: built-in defaults)' : files.map(shown).join(' + ');
  // `npm start` runs from a source checkout, where the ./zino wrapper stands in for an installed zino.
  const zino = process.env.npm_lifecycle_event === 'start' ? './zino' : 'zino';
  const flags = [options.config !== undefined ? `--config ${options.config}` : '', options.dir !== undefined ? `--dir ${options.dir}` : '']
    .filter(Boolean)
    .join(' ');
  const cmd = (sub: string): string => [zino, sub, flags].filter(Boolean).join(' ');
  const endpoint = http
    ? [`  http:    ${http.url}   (OpenAI-compatible: model "zino"; docs/http.md)`, `  token:   ${readToken(http.tokenFile)}   (from ${http.tokenFile})`]
    : [];
  return [
    `ZINO is up: all 7 services answer${http ? ', and the HTTP endpoint listens' : ''}.`,
    `  config:  ${configLine}${wrote ? ` (${shown(wrote)} written now: your settings go there)` : ''}`,
    `  LLM:     ${llm}`,
    `  daemon:  ${client.socket('daemon')}`,
    ...endpoint,
    `  ask:     ${cmd('ask')} "how much disk space is free?"`,
    `  host:    ${cmd('ask')} "create a marker file on the host"   (a change: asks for your yes)`,
    `  chat:    ${cmd('chat')}`,
    `  status:  ${cmd('status')}`,
    'Press Ctrl-C to stop.',
    '',
  ].join('\n');
}
