/** Which lines of `zino chat` are commands (issue 15, point 7): an unknown `/word` is never sent to the model. */
import { describe, expect, it } from 'vitest';
import { CHAT_COMMANDS, chatHelp, parseChatLine } from '../../src/cli/chat-commands.js';

describe('parseChatLine', () => {
  it('knows the commands and their aliases, in any case', () => {
    expect(parseChatLine('/help')).toEqual({ kind: 'command', name: '/help' });
    expect(parseChatLine('  /?  ')).toEqual({ kind: 'command', name: '/help' });
    expect(parseChatLine('/CLEAR')).toEqual({ kind: 'command', name: '/clear' });
    expect(parseChatLine('/quit')).toEqual({ kind: 'command', name: '/exit' });
  });

  it('refuses an unknown command, with or without words after it', () => {
    expect(parseChatLine('/reset')).toEqual({ kind: 'unknown', name: '/reset' });
    expect(parseChatLine('/model gpt-4o')).toEqual({ kind: 'unknown', name: '/model' });
  });

  it('sends a line that starts with a path, and //text as /text', () => {
    expect(parseChatLine('/etc/hosts: who owns it?')).toEqual({ kind: 'message', text: '/etc/hosts: who owns it?' });
    expect(parseChatLine('//reset is what I typed')).toEqual({ kind: 'message', text: '/reset is what I typed' });
    expect(parseChatLine('what is /proc?')).toEqual({ kind: 'message', text: 'what is /proc?' });
    expect(parseChatLine('   ')).toEqual({ kind: 'empty' });
  });

  it('lists every command in /help', () => {
    const help = chatHelp();
    for (const command of CHAT_COMMANDS) expect(help).toContain(command.name);
  });
});
