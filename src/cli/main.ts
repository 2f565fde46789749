#!/usr/bin/env node
/**
 * The `zino` command: ask, chat, up, status, mem, mcp, serve, mock-llm, approvals,
 * approve, deny, audit, install-systemd, uninstall-systemd.
 */
import { Command, Option } from 'commander';
import { SERVICE_NAMES } from '../runtime/index.js';
import { VERSION } from '../version.js';
import { askCommand, type AskOptions } from './commands/ask.js';
import { registerApprovalCommands } from './commands/approvals.js';
import { registerAuditCommand } from './commands/audit.js';
import { chatCommand, type ChatOptions } from './commands/chat.js';
import { mcpCommand } from './commands/mcp.js';
import { memClear, memForget, memHistory, memRemember, memSearch, memSoft } from './commands/mem.js';
import { mockLlmCommand } from './commands/mock-llm.js';
import { serveCommand } from './commands/serve.js';
import { statusCommand } from './commands/status.js';
import { registerSystemdCommands } from './commands/systemd.js';
import { initCommand } from './commands/init.js';
import { upCommand, type UpOptions } from './commands/up.js';
import type { ConfigOptions } from './config.js';
import { findCheckoutSuite } from './suite-dir.js';

/**
 * Accepts the original client's spelling of flags: `-ch` is two letters, which
 * commander cannot take as a short option, so it becomes `--channel`.
 */
export function normaliseArgv(argv: string[]): string[] {
  return argv.map((arg) => (arg === '-ch' ? '--channel' : arg.startsWith('-ch=') ? `--channel=${arg.slice(4)}` : arg));
}

/** Adds `--config` and `--dir` to a command. */
function withConfig(command: Command): Command {
  return command
    .option('-c, --config <file>', 'config file (default: $ZINO_CONFIG, else ./ZINO.toml)')
    .option('--dir <dir>', 'sockets under DIR/run, data under DIR/data (default: $ZINO_DIR)');
}

/** Commands that start services rather than talk to a running suite: they never look for one in ./.zino. */
const STARTERS = new Set(['up', 'serve', 'init']);

const program = new Command('zino')
  .description('ZINO: an LLM agent platform for a Linux host')
  .version(VERSION, '-V, --version')
  .showHelpAfterError('(run with --help for usage)')
  // One place for every client command (present and future): a suite running in ./.zino is
  // used when nothing names another (suite-dir.ts), and the user is told so.
  .hook('preAction', async (_program, command) => {
    if (STARTERS.has(command.name()) || !command.options.some((o) => o.long === '--dir')) return;
    const options = command.opts<ConfigOptions>();
    const found = await findCheckoutSuite(options);
    if (!found) return;
    command.setOptionValue('dir', found.dir);
    process.stderr.write(`${found.notice}\n`);
  });

withConfig(
  program
    .command('ask')
    .description('ask one question (the message from the arguments, or stdin)')
    .argument('[message...]', 'the message')
    .option('-s, --stream', 'print the answer as it is written')
    .option('--channel <id>', 'channel for history (also -ch)')
    .option('--json', 'print every frame as a JSON line')
    .option('--events', 'with --json: include tool activity frames')
    .option('--raw', 'print tool calls and results inline, as the model wrote them')
    .option('-y, --yes', 'approve every host run of this request without asking'),
).action((message: string[], options: AskOptions) => askCommand(message, options));

withConfig(
  program
    .command('chat')
    .description('an interactive session on a channel')
    .option('--channel <id>', 'channel for history (also -ch)', 'cli-chat')
    .option('--raw', 'print tool calls and results inline')
    .option('--reconnect <seconds>', 'how long to wait for a daemon that stops answering mid-session (default 30)'),
).action((options: ChatOptions) => chatCommand(options));

program
  .command('init')
  .description('write the local configuration DIR/ZINO.toml (default .zino/ZINO.toml), where your settings go')
  .option('--dir <dir>', 'the runtime directory (default: $ZINO_DIR, else .zino)')
  .action((options: { dir?: string }) => initCommand(options));

withConfig(
  program
    .command('up')
    .description('run all seven services in the foreground (Ctrl-C stops them)')
    .option('--http', 'also run the OpenAI-compatible HTTP endpoint (as [http] enabled = true does)'),
).action((options: UpOptions) => upCommand(options));

withConfig(program.command('status').description('show whether each service answers').option('--json', 'print the status as JSON')).action(
  (options: ConfigOptions & { json?: boolean }) => statusCommand(options),
);

const memory = program.command('mem').description('administer memory: history, clear, soft, remember, search, forget');
withConfig(
  memory
    .command('history')
    .description("print a channel's history")
    .argument('<channel>')
    .option('-n, --limit <n>', 'only the last N messages')
    .option('--json', 'print as JSON'),
).action(memHistory);
withConfig(memory.command('clear').description("delete a channel's history").argument('<channel>')).action(memClear);
withConfig(memory.command('soft').description('show the soft memory, or replace it with TEXT').argument('[text...]').option('--clear', 'empty it')).action(
  memSoft,
);
withConfig(memory.command('remember').description('store a hard memory').argument('<text...>').option('--tag <tag>', 'a tag that helps finding it')).action(
  memRemember,
);
withConfig(memory.command('forget').description('delete a hard memory by its id (as remember and search show it)').argument('<id>')).action(memForget);
withConfig(
  memory
    .command('search')
    .description('search the hard memories')
    .argument('<query...>')
    .addOption(new Option('-k, --top-k <n>', 'how many results').default('3'))
    .option('--json', 'print as JSON'),
).action(memSearch);

withConfig(
  program
    .command('mcp')
    .description('serve ZINO to an MCP host on stdin/stdout (tools: ask, search_memory, remember, history)')
    .option('--http <host:port>', 'serve Streamable HTTP at http://HOST:PORT/mcp instead (loopback addresses only)'),
).action((options: ConfigOptions & { http?: string }) => mcpCommand(options));

withConfig(
  program
    .command('serve')
    .description('run one service in the foreground (what systemd runs)')
    .argument('<service>', `one of: ${SERVICE_NAMES.join(', ')}, or http (the OpenAI-compatible endpoint), or runner (exc's privileged runner of host runs)`),
).action((service: string, options: ConfigOptions) => serveCommand(service, options));

program
  .command('mock-llm')
  .description('run a mock OpenAI-compatible LLM server on 127.0.0.1 (for tests and trials)')
  .option('-p, --port <port>', 'TCP port (0 picks a free one)', '0')
  .option('--script <file>', 'JSON script of replies (see docs/testing.md)')
  .action((options: { port: string; script?: string }) => mockLlmCommand(options));

registerApprovalCommands(program, withConfig);
registerAuditCommand(program, withConfig);
registerSystemdCommands(program);

await program.parseAsync(normaliseArgv(process.argv));
