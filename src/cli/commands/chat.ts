/**
 * `zino chat`: an interactive session on one channel, streaming, with tool
 * activity on stderr; on a terminal, a host run the model asks for is put to the
 * person in place (y / n / a). Ctrl-C cancels the answer in progress; at the prompt it (or
 * Ctrl-D, or /exit) ends the session. Slash commands are in chat-commands.ts; an
 * unknown one is never sent to the model. When the daemon stops answering in the
 * middle of a session (a restart), the session waits for it (reconnect.ts), keeps
 * its channel, and sends the message again once it is back.
 */
import readline from 'node:readline';
import { EXIT } from '../../runtime/exit.js';
import { readlineQuestion, type ApprovalMode } from '../approval-prompt.js';
import { chatHelp, parseChatLine } from '../chat-commands.js';
import { cliClient } from '../client.js';
import { howToStart, type ConfigOptions } from '../config.js';
import { DEFAULT_RECONNECT_S, waitForDaemon } from '../reconnect.js';
import { askOnce } from './ask.js';
import type { ZinoClient, ZinoError } from '../../client/index.js';

/** Options of `zino chat`. */
export interface ChatOptions extends ConfigOptions {
  channel?: string;
  raw?: boolean;
  /** Seconds to wait for a daemon that stops answering mid-session. */
  reconnect?: string;
}

/** Runs the session until the input ends. */
export async function chatCommand(options: ChatOptions): Promise<void> {
  const client = cliClient(options);
  const channel = options.channel ?? 'cli-chat';
  const reconnectS = options.reconnect === undefined ? DEFAULT_RECONNECT_S : Number(options.reconnect);
  if (!Number.isFinite(reconnectS) || reconnectS < 0) {
    process.stderr.write(`zino: --reconnect must be a number of seconds, got "${options.reconnect}"\n`);
    process.exit(EXIT.USAGE);
  }
  const interactive = process.stdin.isTTY === true;
  const rl = readline.createInterface({ input: process.stdin, output: process.stdout, terminal: interactive });
  if (interactive) process.stderr.write(`zino chat on channel "${channel}". Type /help for the commands; Ctrl-D leaves.\n`);
  let answering: AbortController | undefined;
  let atPrompt = false;
  rl.on('SIGINT', () => {
    if (answering) answering.abort();
    else rl.close();
  });
  const prompt = (): void => {
    atPrompt = interactive;
    if (interactive) rl.prompt();
  };
  const session: Session = {
    client,
    channel,
    raw: options.raw ?? false,
    reconnectMs: reconnectS * 1000,
    answered: false,
    // On a terminal, host runs are asked about in place; piped input cannot answer, so the policy applies.
    approvals: interactive ? { kind: 'ask', question: readlineQuestion(rl) } : undefined,
  };
  let status: number = EXIT.OK;
  rl.setPrompt('you> ');
  prompt();
  for await (const line of rl) {
    atPrompt = false;
    const input = parseChatLine(line);
    if (input.kind === 'command' && input.name === '/exit') break;
    if (input.kind === 'empty') {
      // nothing to do
    } else if (input.kind === 'unknown') {
      process.stderr.write(`zino: unknown command ${input.name} (not sent to the model; /help lists the commands, //text sends "/text")\n`);
    } else if (input.kind === 'command' && input.name === '/help') {
      process.stderr.write(`${chatHelp()}\n`);
    } else if (input.kind === 'command') {
      await clearHistory(client, channel);
    } else {
      answering = new AbortController();
      const sent = await send(session, input.text, answering.signal);
      answering = undefined;
      if (sent.giveUp) {
        status = EXIT.UNAVAILABLE;
        break;
      }
    }
    prompt();
  }
  // Ctrl-D or Ctrl-C at the prompt leaves the cursor after "you> ": end the line for the shell.
  if (atPrompt) process.stdout.write('\n');
  rl.close();
  process.exit(status);
}

interface Session {
  client: ZinoClient;
  channel: string;
  raw: boolean;
  reconnectMs: number;
  /** The daemon has answered in this session: a refusal from now on is a restart worth waiting for. */
  answered: boolean;
  /** How host-run approvals are answered; absent: the policy applies. */
  approvals: ApprovalMode | undefined;
}

/**
 * Sends one message. When the daemon cannot be reached after it has answered in
 * this session, waits for it and sends the same message again (nothing was sent
 * the first time); when it went away mid-answer, waits for it and says the answer
 * was lost. Gives up with how to start it after `reconnectMs` (`giveUp`).
 */
async function send(session: Session, message: string, signal: AbortSignal): Promise<{ status: number; giveUp: boolean }> {
  for (;;) {
    let lost: ZinoError | undefined;
    const status = await askOnce(session.client, {
      message,
      channel: session.channel,
      stream: true,
      json: false,
      raw: session.raw,
      events: false,
      signal,
      approvals: session.approvals,
      onDaemonError: (err) => {
        lost = err;
        // Not reached at all (nothing was sent) after it had answered: wait quietly below.
        return session.answered && session.reconnectMs > 0 && err.detail.phase === 'connect';
      },
    });
    if (lost === undefined || status === EXIT.INTERRUPTED) {
      // An answer, or an error answer (the LLM down, …): the session goes on.
      session.answered ||= status !== EXIT.INTERRUPTED;
      return { status, giveUp: false };
    }
    const notSent = lost.detail.phase === 'connect';
    // A daemon never reached in this session is not restarting: it is not running.
    if ((!session.answered && notSent) || session.reconnectMs === 0) return { status, giveUp: true };
    const socket = session.client.socket('daemon');
    const reason = lost.detail.errno ?? lost.code;
    const say = (line: string): void => void process.stderr.write(`${line}\n`);
    const outcome = await waitForDaemon(session.client, { maxMs: session.reconnectMs, signal, say, reason });
    if (outcome === 'stopped') {
      say(notSent ? 'zino: stopped waiting; the message was not sent.' : 'zino: stopped waiting.');
      return { status: EXIT.INTERRUPTED, giveUp: false };
    }
    if (outcome === 'gave-up') {
      say(`zino: the daemon did not come back within ${session.reconnectMs / 1000} s; giving up.`);
      say(`zino: ${howToStart(socket, reason)}`);
      return { status: EXIT.UNAVAILABLE, giveUp: true };
    }
    if (!notSent) {
      // The answer broke off half-way: whatever ran may have run; do not run it twice.
      say('zino: the daemon is back; that answer was lost: send your message again if you still want it.');
      return { status: EXIT.FAILURE, giveUp: false };
    }
    say('zino: the daemon is back; sending your message again.');
  }
}

async function clearHistory(client: ZinoClient, channel: string): Promise<void> {
  try {
    await client.mem.clearHistory(channel, { timeoutMs: 5000 });
    process.stderr.write(`(history of "${channel}" cleared)\n`);
  } catch (err) {
    process.stderr.write(`zino: could not clear the history: ${(err as Error).message}\n`);
  }
}
