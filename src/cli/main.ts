#!/usr/bin/env node
/**
 * The `zino` command: ask, chat, up, status, mem, serve, mock-llm.
 */
import { Command } from 'commander';
import { SERVICE_NAMES } from '../runtime/index.js';
import { VERSION } from '../version.js';
import { mockLlmCommand } from './commands/mock-llm.js';
import { serveCommand } from './commands/serve.js';

/**
 * Accepts the original client's spelling of flags: `-ch` is two letters, which
 * commander cannot take as a short option, so it becomes `--channel`.
 */
export function normaliseArgv(argv: string[]): string[] {
  return argv.map((arg) => (arg === '-ch' ? '--channel' : arg.startsWith('-ch=') ? `--channel=${arg.slice(4)}` : arg));
}

const program = new Command('zino')
  .description('ZINO: an LLM agent platform for a Linux host')
  .version(VERSION, '-V, --version')
  .showHelpAfterError('(run with --help for usage)');

program
  .command('serve')
  .description('run one service in the foreground (what systemd runs)')
  .argument('<service>', `one of: ${SERVICE_NAMES.join(', ')}`)
  .option('-c, --config <file>', 'config file (default: $ZINO_CONFIG, else ./ZINO.toml)')
  .option('--dir <dir>', 'put sockets under DIR/run and data under DIR/data (default: $ZINO_DIR)')
  .action((service: string, options: { config?: string; dir?: string }) => serveCommand(service, options));

program
  .command('mock-llm')
  .description('run a mock OpenAI-compatible LLM server on 127.0.0.1 (for tests and trials)')
  .option('-p, --port <port>', 'TCP port (0 picks a free one)', '0')
  .option('--script <file>', 'JSON script of replies (see docs/testing.md)')
  .action((options: { port: string; script?: string }) => mockLlmCommand(options));

await program.parseAsync(normaliseArgv(process.argv));
