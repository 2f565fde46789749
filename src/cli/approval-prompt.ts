/**
 * Asking a person, in place, whether a host run may go ahead: `zino ask` and
 * `zino chat` on a terminal show the program (whole, or its first 40 lines and how
 * many more), the executor and the model's reason, and take `y`, `n` or `a`
 * (always, for the rest of this request). A call of an MCP tool that may change the
 * host is asked the same way, showing the server, the tool and its arguments.
 * `--yes` answers yes to every host run of the request without asking.
 */
import readline from 'node:readline';
import type { ApprovalAnswer, ApprovalHandler, ApprovalRequired } from '../client/index.js';

/** Lines of a program shown before "… N more lines". */
export const SHOWN_LINES = 40;

/** Asks one question; resolves with the line typed, or undefined when the input ended or `signal` fired. */
export type Question = (prompt: string, signal: AbortSignal) => Promise<string | undefined>;

/** How a request's approvals are answered. */
export type ApprovalMode = { kind: 'ask'; question: Question } | { kind: 'yes' };

/** What the person reads before answering. */
export function describeApproval(request: ApprovalRequired, now = Date.now()): string {
  const lines = request.code.replace(/\n$/, '').split('\n');
  const shown = lines.slice(0, SHOWN_LINES).map((line) => `  | ${line}`);
  const more = lines.length - SHOWN_LINES;
  const left = Math.max(0, Math.round((Date.parse(request.expires_at) - now) / 1000));
  const expires = Number.isFinite(left) ? `, expires in ${left} s` : '';
  if (request.mcp) {
    return [
      '',
      'ZINO wants to call this MCP tool, which may change things on the host (it runs outside the sandbox):',
      `  server:   ${oneLine(request.mcp.server)}`,
      `  tool:     ${oneLine(request.mcp.tool)} (${oneLine(request.executor)})`,
      `  approval: ${oneLine(request.id)}${expires}`,
      '  arguments:',
      ...shown,
      ...(more > 0 ? [`  … ${more} more line${more === 1 ? '' : 's'} (zino approvals ${oneLine(request.id)} shows them all)`] : []),
      '',
    ].join('\n');
  }
  return [
    '',
    request.no_sandbox
      ? 'ZINO wants to run this program on the host (no sandbox can be used here, so every run is a host run):'
      : 'ZINO wants to run this program on the host, outside the sandbox:',
    `  reason:   ${oneLine(request.reason) || '(none given)'}`,
    `  executor: ${oneLine(request.executor)}`,
    `  approval: ${oneLine(request.id)}${expires}`,
    ...shown,
    ...(more > 0 ? [`  … ${more} more line${more === 1 ? '' : 's'} (zino approvals ${oneLine(request.id)} shows the whole program)`] : []),
    '',
  ].join('\n');
}

/** Control characters out of text from the wire, so it cannot move the cursor or clear the screen. */
function oneLine(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ').trim();
}

/** Program text with control characters made visible (tabs and newlines kept). */
function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/**
 * The handler of one request's approvals. `write` shows text (stderr); `signal` is
 * the request's: once it fires, nothing more is asked or answered.
 */
export function approvalHandler(mode: ApprovalMode, write: (text: string) => void, signal: AbortSignal): ApprovalHandler {
  let always = false;
  return async (request): Promise<ApprovalAnswer | undefined> => {
    if (signal.aborted) return undefined;
    const first = request.mcp ? oneLine(request.executor) : oneLine(request.code.split('\n').find((l) => l.trim() !== '') ?? '');
    if (mode.kind === 'yes' || always) {
      write(`[host] approved (${mode.kind === 'yes' ? '--yes' : 'always for this request'}): ${first}\n`);
      return { decision: 'allow' };
    }
    write(describeApproval({ ...request, code: printable(request.code) }));
    const question = request.mcp ? 'Call it?' : 'Run it on the host?';
    for (;;) {
      const typed = await mode.question(`${question} [y]es / [n]o / [a]lways for this request: `, signal);
      if (signal.aborted) return undefined;
      const answer = (typed ?? 'n').trim().toLowerCase();
      if (answer === 'y' || answer === 'yes') return { decision: 'allow' };
      if (answer === 'a' || answer === 'always') {
        always = true;
        return { decision: 'allow' };
      }
      if (answer === 'n' || answer === 'no' || answer === '') {
        write('[host] denied: the model will be told.\n');
        return typed === undefined ? { decision: 'deny', note: 'nobody answered at the terminal' } : { decision: 'deny' };
      }
      write('Please answer y, n or a.\n');
    }
  };
}

/**
 * A {@link Question} on the terminal of stdin, writing to stderr (stdout carries the
 * answer): a readline interface of its own for each question. Ctrl-C calls `onInterrupt`.
 */
export function terminalQuestion(onInterrupt: () => void): Question {
  return (prompt, signal) =>
    new Promise((resolve) => {
      if (signal.aborted) {
        resolve(undefined);
        return;
      }
      const rl = readline.createInterface({ input: process.stdin, output: process.stderr, terminal: true });
      let settled = false;
      const done = (answer: string | undefined): void => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        resolve(answer);
        rl.close();
      };
      const onAbort = (): void => done(undefined);
      signal.addEventListener('abort', onAbort, { once: true });
      rl.on('SIGINT', () => {
        done(undefined);
        onInterrupt();
      });
      rl.on('close', () => done(undefined));
      rl.question(prompt, (answer) => done(answer));
    });
}

/** A {@link Question} on an existing readline interface (`zino chat`'s): the typed line answers it instead of becoming a message. */
export function readlineQuestion(rl: readline.Interface): Question {
  return (prompt, signal) =>
    new Promise((resolve) => {
      if (signal.aborted) {
        resolve(undefined);
        return;
      }
      let settled = false;
      const done = (answer: string | undefined): void => {
        if (settled) return;
        settled = true;
        rl.off('close', onClose);
        signal.removeEventListener('abort', onClose);
        resolve(answer);
      };
      const onClose = (): void => done(undefined);
      rl.once('close', onClose);
      // An aborted question is withdrawn by readline itself (the next line is a message again).
      signal.addEventListener('abort', onClose, { once: true });
      rl.question(prompt, { signal }, (answer) => done(answer));
    });
}
