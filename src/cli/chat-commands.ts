/**
 * The slash commands of `zino chat`. A line whose first word is `/word` is a
 * command, and an unknown one is refused rather than sent to the model; a line
 * that merely starts with a path (`/etc/hosts: who owns it?`) is a message, and
 * `//text` sends `/text`.
 */

/** The commands, as /help lists them. */
export const CHAT_COMMANDS: readonly { name: string; aliases?: readonly string[]; does: string }[] = [
  { name: '/help', aliases: ['/?'], does: 'list these commands' },
  { name: '/clear', does: "forget this channel's history" },
  { name: '/exit', aliases: ['/quit'], does: 'leave (as Ctrl-D does)' },
];

/** What a line of input is. */
export type ChatLine =
  { kind: 'empty' } | { kind: 'message'; text: string } | { kind: 'command'; name: '/help' | '/clear' | '/exit' } | { kind: 'unknown'; name: string };

/** Classifies one line of input. */
export function parseChatLine(line: string): ChatLine {
  const text = line.trim();
  if (text === '') return { kind: 'empty' };
  if (text.startsWith('//')) return { kind: 'message', text: text.slice(1) };
  const word = /^\/([A-Za-z?]+)(?:\s|$)/.exec(text)?.[0].trim();
  if (word === undefined) return { kind: 'message', text };
  const known = CHAT_COMMANDS.find((c) => c.name === word.toLowerCase() || c.aliases?.includes(word.toLowerCase()));
  if (!known) return { kind: 'unknown', name: word };
  return { kind: 'command', name: known.name as '/help' | '/clear' | '/exit' };
}

/** The text of /help. */
export function chatHelp(): string {
  const rows = CHAT_COMMANDS.map((c) => `  ${[c.name, ...(c.aliases ?? [])].join(', ').padEnd(16)} ${c.does}`);
  return [
    'Type a message and press Enter; the answer streams in, tool activity shows on stderr.',
    ...rows,
    '  //text           send a message that starts with "/"',
    'Ctrl-C stops an answer (at the prompt, it leaves); Ctrl-D leaves.',
  ].join('\n');
}
