/**
 * `zino ask [message…]`: one question to the daemon. The answer goes to stdout,
 * tool activity and errors to stderr. Ctrl-C cancels the request (which cancels it
 * all the way down to the LLM and any running code).
 */
import { RemoteError, ZinoError, ZinoClient } from '../../client/index.js';
import { EXIT } from '../../runtime/exit.js';
import { approvalHandler, terminalQuestion, type ApprovalMode } from '../approval-prompt.js';
import { cliClient, fail, howToStart, type ConfigOptions } from '../config.js';
import { AnswerDisplay, type AnswerFrame } from '../display.js';

/** Options of `zino ask`. */
export interface AskOptions extends ConfigOptions {
  stream?: boolean;
  channel?: string;
  json?: boolean;
  raw?: boolean;
  events?: boolean;
  yes?: boolean;
}

/** Runs `zino ask`. */
export async function askCommand(words: string[], options: AskOptions): Promise<void> {
  const client = cliClient(options);
  const message = words.length > 0 ? words.join(' ') : await readStdin();
  if (message.trim() === '') fail('no message: give it as arguments or on stdin (zino ask "what is the uptime?")', EXIT.USAGE);
  const code = await askOnce(client, {
    message,
    channel: options.channel,
    stream: options.stream ?? false,
    json: options.json ?? false,
    raw: options.raw ?? false,
    events: options.events ?? false,
    approvals: approvalMode(options.yes ?? false),
  });
  process.exit(code);
}

/**
 * How host-run approvals of `zino ask` are answered: `--yes` approves them all; on a
 * terminal the person is asked (Ctrl-C at the question cancels, as it does
 * elsewhere); otherwise nothing is asked and the daemon applies `[approval] unattended`.
 */
function approvalMode(yes: boolean): ApprovalMode | undefined {
  if (yes) return { kind: 'yes' };
  if (process.stdin.isTTY !== true) return undefined;
  return { kind: 'ask', question: terminalQuestion(() => process.emit('SIGINT')) };
}

/** What one question needs. */
export interface AskParams {
  message: string;
  channel?: string | undefined;
  stream: boolean;
  json: boolean;
  raw: boolean;
  events: boolean;
  /** Cancels the request; by default Ctrl-C does. */
  signal?: AbortSignal;
  /** Answer host-run approvals this way; absent: the request does not take part (the policy applies). */
  approvals?: ApprovalMode | undefined;
}

/** Asks once and prints the answer; returns the exit status. */
export async function askOnce(client: ZinoClient, params: AskParams): Promise<number> {
  const controller = new AbortController();
  const onSigint = (): void => controller.abort();
  if (params.signal) params.signal.addEventListener('abort', onSigint, { once: true });
  else process.once('SIGINT', onSigint);
  const display = new AnswerDisplay({ out: process.stdout, err: process.stderr }, params.raw);
  const onApproval = params.approvals
    ? approvalHandler(
        params.approvals,
        (text) => {
          if (!params.json) display.breakLine();
          process.stderr.write(text);
        },
        controller.signal,
      )
    : undefined;
  const approvalOptions = onApproval
    ? { onApproval, onApprovalError: (err: ZinoError) => process.stderr.write(`zino: the answer was not taken: ${err.message}\n`) }
    : {};
  const options = {
    signal: controller.signal,
    ...(params.channel === undefined ? {} : { channelId: params.channel }),
    // Tool activity on stderr comes from the event frames; --json shows them only when asked.
    events: !params.json || params.events,
    ...approvalOptions,
  };
  try {
    const show = (frame: AnswerFrame): void => {
      if (params.json) process.stdout.write(`${JSON.stringify(frame)}\n`);
      else display.frame(frame);
    };
    if (params.stream) for await (const frame of client.askStream(params.message, options)) show(frame);
    else show(await client.ask(params.message, { ...options, onEvent: options.events ? show : undefined }));
    if (!params.json) display.finish();
    return EXIT.OK;
  } catch (err) {
    if (!params.json) display.finish();
    if (controller.signal.aborted) {
      process.stderr.write('zino: cancelled\n');
      return EXIT.INTERRUPTED;
    }
    if (err instanceof RemoteError) {
      // The daemon answered with an error frame: --json shows it as it came.
      if (params.json) process.stdout.write(`${JSON.stringify(err.frame)}\n`);
      else process.stderr.write(`zino: ${err.message}\n`);
      return EXIT.FAILURE;
    }
    if (err instanceof ZinoError && (err.code === 'UPSTREAM_UNAVAILABLE' || err.code === 'TIMEOUT')) {
      process.stderr.write(`zino: ${howToStart(client.socket('daemon'), err.detail.errno ?? err.code)}\n`);
      return EXIT.UNAVAILABLE;
    }
    process.stderr.write(`zino: ${(err as Error).message}\n`);
    return EXIT.FAILURE;
  } finally {
    if (params.signal) params.signal.removeEventListener('abort', onSigint);
    else process.off('SIGINT', onSigint);
  }
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) return '';
  const parts: Buffer[] = [];
  for await (const chunk of process.stdin) parts.push(chunk as Buffer);
  return Buffer.concat(parts).toString('utf8').trim();
}
