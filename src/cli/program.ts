/**
 * The `zino` command line (commander): ask, chat, up, status, mem, mcp, serve, mock-llm,
 * approvals, approve, deny, audit, install-systemd, uninstall-systemd. main.ts loads it for
 * every command line except the plain `zino serve NAME` that the services run (serve-argv.ts).
 */
import { Command, Option } from 'commander';
import { SERVICE_NAMES } from '../runtime/index.js';
import { VERSION } from '../version.js';
import type { AskOptions } from './commands/ask.js';
import type { AuditOptions } from './commands/audit.js';
import type { ChatOptions } from './commands/chat.js';
import type * as MemCommands from './commands/mem.js';
import { registerSystemdCommands } from './commands/systemd.js';
import type { UpOptions } from './commands/up.js';
import type { ConfigOptions } from './config.js';

// Each command's module is loaded when that command runs, not before: `zino serve sys` (seven of
// them start at once under `zino up` and systemd) then loads the runtime and its own service, not
// the chat client, the mock LLM or the installer.

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

/** The action of `zino mem <name>`, its module loaded when it runs. */
function memAction<K extends keyof typeof MemCommands>(name: K): (...args: Parameters<(typeof MemCommands)[K]>) => Promise<void> {
  return async (...args) => {
    const commands = await import('./commands/mem.js');
    const command = commands[name] as (...a: Parameters<(typeof MemCommands)[K]>) => Promise<void>;
    await command(...args);
  };
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
    const { findCheckoutSuite } = await import('./suite-dir.js');
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
).action(async (message: string[], options: AskOptions) => (await import('./commands/ask.js')).askCommand(message, options));

withConfig(
  program
    .command('chat')
    .description('an interactive session on a channel')
    .option('--channel <id>', 'channel for history (also -ch)', 'cli-chat')
    .option('--raw', 'print tool calls and results inline')
    .option('--reconnect <seconds>', 'how long to wait for a daemon that stops answering mid-session (default 30)'),
).action(async (options: ChatOptions) => (await import('./commands/chat.js')).chatCommand(options));

program
  .command('init')
  .description('write the local configuration DIR/ZINO.toml (default .zino/ZINO.toml), where your settings go')
  .option('--dir <dir>', 'the runtime directory (default: $ZINO_DIR, else .zino)')
  .action(async (options: { dir?: string }) => (await import('./commands/init.js')).initCommand(options));

withConfig(
  program
    .command('up')
    .description('run all seven services in the foreground (Ctrl-C stops them)')
    .option('--http', 'also run the OpenAI-compatible HTTP endpoint (as [http] enabled = true does)'),
).action(async (options: UpOptions) => (await import('./commands/up.js')).upCommand(options));

withConfig(program.command('status').description('show whether each service answers').option('--json', 'print the status as JSON')).action(
  async (options: ConfigOptions & { json?: boolean }) => (await import('./commands/status.js')).statusCommand(options),
);

const memory = program.command('mem').description('administer memory: history, clear, soft, remember, search, forget');
withConfig(
  memory
    .command('history')
    .description("print a channel's history")
    .argument('<channel>')
    .option('-n, --limit <n>', 'only the last N messages')
    .option('--json', 'print as JSON'),
).action(memAction('memHistory'));
withConfig(memory.command('clear').description("delete a channel's history").argument('<channel>')).action(memAction('memClear'));
withConfig(memory.command('soft').description('show the soft memory, or replace it with TEXT').argument('[text...]').option('--clear', 'empty it')).action(
  memAction('memSoft'),
);
withConfig(memory.command('remember').description('store a hard memory').argument('<text...>').option('--tag <tag>', 'a tag that helps finding it')).action(
  memAction('memRemember'),
);
withConfig(memory.command('forget').description('delete a hard memory by its id (as remember and search show it)').argument('<id>')).action(
  memAction('memForget'),
);
withConfig(
  memory
    .command('search')
    .description('search the hard memories')
    .argument('<query...>')
    .addOption(new Option('-k, --top-k <n>', 'how many results').default('3'))
    .option('--json', 'print as JSON'),
).action(memAction('memSearch'));

withConfig(
  program
    .command('mcp')
    .description('serve ZINO to an MCP host on stdin/stdout (tools: ask, search_memory, remember, history)')
    .option('--http <host:port>', 'serve Streamable HTTP at http://HOST:PORT/mcp instead (loopback addresses only)'),
).action(async (options: ConfigOptions & { http?: string }) => (await import('./commands/mcp.js')).mcpCommand(options));

withConfig(
  program
    .command('serve')
    .description('run one service in the foreground (what systemd runs)')
    .argument('<service>', `one of: ${SERVICE_NAMES.join(', ')}, or http (the OpenAI-compatible endpoint), or runner (exc's privileged runner of host runs)`),
).action(async (service: string, options: ConfigOptions) => (await import('./commands/serve.js')).serveCommand(service, options));

program
  .command('mock-llm')
  .description('run a mock OpenAI-compatible LLM server on 127.0.0.1 (for tests and trials)')
  .option('-p, --port <port>', 'TCP port (0 picks a free one)', '0')
  .option('--script <file>', 'JSON script of replies (see docs/testing.md)')
  .action(async (options: { port: string; script?: string }) => (await import('./commands/mock-llm.js')).mockLlmCommand(options));

withConfig(
  program
    .command('approvals')
    .description('list the host runs waiting for approval (with ID: that one, with its whole program)')
    .argument('[id]')
    .option('--json', 'print the reply as JSON'),
).action(async (id: string | undefined, options: ConfigOptions & { json?: boolean }) => (await import('./commands/approvals.js')).listCommand(id, options));
withConfig(
  program.command('approve').description('let a pending host run go ahead').argument('<id>').option('--note <text>', 'a note for the audit log'),
).action(async (id: string, options: ConfigOptions & { note?: string }) => (await import('./commands/approvals.js')).answerCommand(id, 'allow', options));
withConfig(
  program
    .command('deny')
    .description('refuse a pending host run; the model is told')
    .argument('<id>')
    .option('--note <text>', 'why: the model reads "the operator denied this: TEXT"'),
).action(async (id: string, options: ConfigOptions & { note?: string }) => (await import('./commands/approvals.js')).answerCommand(id, 'deny', options));
withConfig(
  program
    .command('audit')
    .description("print exc's audit log: every run, and every decision about a host run")
    .option('--since <duration>', 'only the last DURATION: 90s, 30m, 12h, 7d')
    .option('--json', 'print the records as JSON lines, as stored'),
).action(async (options: AuditOptions) => (await import('./commands/audit.js')).auditCommand(options));
registerSystemdCommands(program);

/** Parses `argv` (as `process.argv`) and runs the command it names. */
export async function runProgram(argv: string[]): Promise<void> {
  await program.parseAsync(normaliseArgv(argv));
}
