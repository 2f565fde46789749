/**
 * `zino up`: runs the whole suite in the foreground for development: the seven
 * services as children (and the HTTP front end when `[http] enabled` or `--http`),
 * restarted when they crash, all stopped on Ctrl-C/SIGTERM.
 */
import { readFileSync } from 'node:fs';
import { ZinoClient } from '../../client/index.js';
import { SERVICE_NAMES, isListening, type ServiceName } from '../../runtime/index.js';
import { cliConfig, fail, type ConfigOptions } from '../config.js';
import { EXIT } from '../../runtime/exit.js';
import { formatLogLine } from '../up/log-line.js';
import { Supervisor } from '../up/supervisor.js';

/** Options of `zino up`. */
export interface UpOptions extends ConfigOptions {
  /** Run the HTTP front end even when `[http] enabled` is false. */
  http?: boolean;
}

/** Runs the suite until a signal. */
export async function upCommand(options: UpOptions): Promise<void> {
  const config = cliConfig(options);
  const withHttp = config.http.enabled || options.http === true;
  // The front end's address as it logged it once listening (the port may have been 0).
  let httpUrl: string | undefined;
  const args: string[] = [];
  if (options.config !== undefined) args.push('--config', options.config);
  if (options.dir !== undefined) args.push('--dir', options.dir);
  const sockets = Object.fromEntries(SERVICE_NAMES.map((n) => [n, config[n].socket])) as Record<ServiceName, string>;
  // A second `zino up` on the same sockets must not start, nor touch the first one's sockets.
  for (const name of SERVICE_NAMES) {
    if (await isListening(sockets[name])) {
      fail(`${name} is already running at ${sockets[name]}: another ZINO suite uses these sockets (stop it first, or use another --dir)`, EXIT.IN_USE);
    }
  }
  const pretty = process.stderr.isTTY === true;
  const supervisor = new Supervisor({
    args,
    sockets,
    env: process.env,
    graceMs: config.limits.shutdown_grace_ms + 2000,
    http: withHttp ? { listen: config.http.listen, listening: () => httpUrl !== undefined } : undefined,
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
  process.stdout.write(
    await banner(new ZinoClient({ config }), options, httpUrl === undefined ? undefined : { url: httpUrl, tokenFile: config.http.token_file }),
  );
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

async function banner(client: ZinoClient, options: ConfigOptions, http: { url: string; tokenFile: string } | undefined): Promise<string> {
  let llm = 'unknown (rtr did not answer)';
  try {
    const caps = await client.rtr.capabilities({ timeoutMs: 2000 });
    if (caps.configured === false) llm = 'NOT CONFIGURED: set [api] base_url in ZINO.toml (see the rtr log)';
    else if (caps.backend === 'demo') llm = 'the built-in demo model (set [api] base_url in ZINO.toml for a real one)';
    else llm = caps.model || 'auto-detected model';
  } catch {
    // keep "unknown"
  }
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
