/**
 * `zino ask [message…]`: one question to the daemon. The answer goes to stdout,
 * tool activity and errors to stderr. Ctrl-C cancels the request (which cancels it
 * all the way down to the LLM and any running code).
 */
import { RemoteError, ZinoError, ZinoClient, maxMessageBytes, messageTooLarge, type DoneFrame, type ResponseFrame } from '../../client/index.js';
import { EXIT, exitStatusFor } from '../../runtime/exit.js';
import { approvalHandler, terminalQuestion, type ApprovalMode } from '../approval-prompt.js';
import { cliClient } from '../client.js';
import { fail, howToStart, type ConfigOptions } from '../config.js';
import { degradedReport } from '../degraded.js';
import { AnswerDisplay, type AnswerFrame } from '../display.js';
import { WaitingIndicator } from '../waiting.js';

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
  /**
   * Told of a failure to talk to the daemon itself (not an error answer): it could
   * not be reached, or went away mid-answer. Returning true means "handled, print
   * nothing": `zino chat` waits for a restarting daemon and sends again.
   */
  onDaemonError?: (err: ZinoError) => boolean;
  /** Answer host-run approvals this way; absent: the request does not take part (the policy applies). */
  approvals?: ApprovalMode | undefined;
}

/** Asks once and prints the answer; returns the exit status. */
export async function askOnce(client: ZinoClient, params: AskParams): Promise<number> {
  const tooLarge = sizeProblem(client, params.message);
  if (tooLarge !== undefined) {
    process.stderr.write(`zino: ${tooLarge}\n`);
    return EXIT.FAILURE;
  }
  const controller = new AbortController();
  const onSigint = (): void => controller.abort();
  if (params.signal) params.signal.addEventListener('abort', onSigint, { once: true });
  else process.once('SIGINT', onSigint);
  const display = new AnswerDisplay({ out: process.stdout, err: process.stderr }, params.raw);
  // Streamed answers on a terminal: a line on stderr while the answer is silent (waiting.ts).
  const waiting = new WaitingIndicator(process.stderr, { enabled: params.stream });
  let terminal: DoneFrame | ResponseFrame | undefined;
  const handler = params.approvals
    ? approvalHandler(
        params.approvals,
        (text) => {
          if (!params.json) display.breakLine();
          process.stderr.write(text);
        },
        controller.signal,
      )
    : undefined;
  // The waiting line stays away while a person reads the code and answers; the wait for the run starts after.
  const onApproval: typeof handler = handler
    ? async (request) => {
        waiting.stop();
        try {
          return await handler(request);
        } finally {
          waiting.activity('tool');
        }
      }
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
      waiting.activity(frame.type === 'tool_call' ? 'tool' : 'model');
      if (frame.type === 'done' || frame.type === 'response') terminal = frame;
      if (params.json) process.stdout.write(`${JSON.stringify(frame)}\n`);
      else display.frame(frame);
    };
    waiting.start();
    if (params.stream) for await (const frame of client.askStream(params.message, options)) show(frame);
    else show(await client.ask(params.message, { ...options, onEvent: options.events ? show : undefined }));
    waiting.stop();
    if (!params.json) display.finish();
    return terminal ? reportDegraded(terminal, client.config.agr.max_iterations) : EXIT.OK;
  } catch (err) {
    waiting.stop();
    if (!params.json) display.finish();
    if (controller.signal.aborted) {
      process.stderr.write('zino: cancelled\n');
      return EXIT.INTERRUPTED;
    }
    if (err instanceof RemoteError) {
      // The daemon answered with an error frame: --json shows it as it came.
      if (params.json) process.stdout.write(`${JSON.stringify(err.frame)}\n`);
      else process.stderr.write(`zino: ${err.message}\n`);
      return exitStatusFor(err);
    }
    if (err instanceof ZinoError && params.onDaemonError?.(err)) return exitStatusFor(err);
    if (err instanceof ZinoError && (err.code === 'UPSTREAM_UNAVAILABLE' || err.code === 'TIMEOUT')) {
      process.stderr.write(`zino: ${howToStart(client.socket('daemon'), err.detail.errno ?? err.code)}\n`);
      return EXIT.UNAVAILABLE;
    }
    process.stderr.write(`zino: ${(err as Error).message}\n`);
    return exitStatusFor(err);
  } finally {
    if (params.signal) params.signal.removeEventListener('abort', onSigint);
    else process.off('SIGINT', onSigint);
  }
}

/**
 * The daemon's refusal of a message over its bound, said before sending it (the
 * client reads the same configuration): a message over the frame limit would
 * otherwise fail with a bare "frame too large".
 */
function sizeProblem(client: ZinoClient, message: string): string | undefined {
  const bound = maxMessageBytes(client.config);
  if (message.length * 3 <= bound) return undefined;
  const bytes = Buffer.byteLength(message, 'utf8');
  return bytes > bound ? messageTooLarge(bytes, bound) : undefined;
}

/** Tells the user on stderr what the answer lacks; INCOMPLETE (3) when it was cut short. */
function reportDegraded(frame: DoneFrame | ResponseFrame, maxIterations: number): number {
  const report = degradedReport(frame, maxIterations);
  for (const line of report.lines) process.stderr.write(`zino: ${line}\n`);
  return report.incomplete ? EXIT.INCOMPLETE : EXIT.OK;
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) return '';
  const parts: Buffer[] = [];
  for await (const chunk of process.stdin) parts.push(chunk as Buffer);
  return Buffer.concat(parts).toString('utf8').trim();
}
