/**
 * `zino chat`: an interactive session on one channel, streaming, with tool
 * activity on stderr; on a terminal, a host run the model asks for is put to the
 * person in place (y / n / a). Ctrl-C cancels the answer in progress; at the prompt it (or
 * Ctrl-D, or /exit) ends the session. /clear forgets the channel's history.
 */
import readline from 'node:readline';
import { EXIT } from '../../runtime/exit.js';
import { readlineQuestion } from '../approval-prompt.js';
import { cliClient, type ConfigOptions } from '../config.js';
import { askOnce } from './ask.js';

/** Options of `zino chat`. */
export interface ChatOptions extends ConfigOptions {
  channel?: string;
  raw?: boolean;
}

const HELP = 'Type a message and press Enter. /clear forgets this channel, /exit (or Ctrl-D) leaves; Ctrl-C stops an answer.';

/** Runs the session until the input ends. */
export async function chatCommand(options: ChatOptions): Promise<void> {
  const client = cliClient(options);
  const channel = options.channel ?? 'cli-chat';
  const interactive = process.stdin.isTTY === true;
  const rl = readline.createInterface({ input: process.stdin, output: process.stdout, terminal: interactive });
  if (interactive) process.stderr.write(`zino chat on channel "${channel}". ${HELP}\n`);
  let answering: AbortController | undefined;
  rl.on('SIGINT', () => {
    if (answering) answering.abort();
    else rl.close();
  });
  let status: number = EXIT.OK;
  const prompt = (): void => {
    if (interactive) rl.prompt();
  };
  rl.setPrompt('you> ');
  prompt();
  for await (const line of rl) {
    const message = line.trim();
    if (message === '') {
      prompt();
      continue;
    }
    if (message === '/exit' || message === '/quit') break;
    if (message === '/help') {
      process.stderr.write(`${HELP}\n`);
      prompt();
      continue;
    }
    if (message === '/clear') {
      try {
        await client.mem.clearHistory(channel, { timeoutMs: 5000 });
        process.stderr.write(`(history of "${channel}" cleared)\n`);
      } catch (err) {
        process.stderr.write(`zino: could not clear the history: ${(err as Error).message}\n`);
      }
      prompt();
      continue;
    }
    answering = new AbortController();
    status = await askOnce(client, {
      message,
      channel,
      stream: true,
      json: false,
      raw: options.raw ?? false,
      events: false,
      signal: answering.signal,
      // On a terminal, host runs are asked about in place; piped input cannot answer, so the policy applies.
      approvals: interactive ? { kind: 'ask', question: readlineQuestion(rl) } : undefined,
    });
    answering = undefined;
    if (status === EXIT.UNAVAILABLE) break;
    prompt();
  }
  rl.close();
  process.exit(status === EXIT.UNAVAILABLE ? status : EXIT.OK);
}
