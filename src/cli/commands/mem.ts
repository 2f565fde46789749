/**
 * `zino mem history|clear|soft|remember|search`: administering memory by talking
 * to mem directly (and to sys for the soft memory in the prompt).
 */
import { request, textOf, type ChatMessage, type Frame, type ResolvedConfig } from '../../runtime/index.js';
import { cliConfig, fail, type ConfigOptions } from '../config.js';
import { EXIT } from '../exit.js';

async function mem(config: Readonly<ResolvedConfig>, frame: Frame): Promise<Frame> {
  try {
    return await request(config.mem.socket, frame, { name: 'mem', timeoutMs: 30_000 });
  } catch (err) {
    return fail((err as Error).message);
  }
}

/** `zino mem history <channel> [--limit N]`. */
export async function memHistory(channel: string, options: ConfigOptions & { limit?: string; json?: boolean }): Promise<void> {
  const config = cliConfig(options);
  const limit = options.limit === undefined ? 0 : Number(options.limit);
  if (!Number.isInteger(limit) || limit < 0) fail(`--limit must be a whole number, got "${options.limit}"`, EXIT.USAGE);
  const reply = await mem(config, { type: 'get_history', channel_id: channel, limit });
  const messages = (reply.messages ?? []) as ChatMessage[];
  if (options.json) process.stdout.write(`${JSON.stringify(messages)}\n`);
  else if (messages.length === 0) process.stderr.write(`(no history on "${channel}")\n`);
  else process.stdout.write(`${messages.map((m) => `${m.role}: ${m.content}`).join('\n\n')}\n`);
}

/** `zino mem clear <channel>`. */
export async function memClear(channel: string, options: ConfigOptions): Promise<void> {
  await mem(cliConfig(options), { type: 'clear_history', channel_id: channel });
  process.stderr.write(`history of "${channel}" cleared\n`);
}

/** `zino mem soft [text…]`: shows the soft memory, or replaces it (in mem, durably, and in sys's prompt). */
export async function memSoft(words: string[], options: ConfigOptions & { clear?: boolean }): Promise<void> {
  const config = cliConfig(options);
  if (words.length === 0 && !options.clear) {
    const reply = await mem(config, { type: 'get_soft' });
    process.stdout.write(`${textOf(reply.content ?? '')}\n`);
    return;
  }
  const content = options.clear ? '' : words.join(' ');
  await mem(config, { type: 'set_soft', content });
  try {
    await request(config.sys.socket, { type: 'set_soft_memory', content }, { name: 'sys', timeoutMs: 5000 });
    process.stderr.write('soft memory updated (stored, and in the system prompt)\n');
  } catch (err) {
    process.stderr.write(`soft memory stored; the running system prompt was not updated: ${(err as Error).message}\n`);
  }
}

/** `zino mem remember <text…> [--tag T]`: stores a hard memory. */
export async function memRemember(words: string[], options: ConfigOptions & { tag?: string }): Promise<void> {
  const config = cliConfig(options);
  const text = words.join(' ').trim();
  if (text === '') fail('nothing to remember', EXIT.USAGE);
  const reply = await mem(config, { type: 'store_hard', messages: [{ role: 'user', content: text }], ...(options.tag ? { tag: options.tag } : {}) });
  process.stdout.write(`remembered as #${String(reply.id)}\n`);
}

/** `zino mem search <query…> [--top-k N]`. */
export async function memSearch(words: string[], options: ConfigOptions & { topK?: string; json?: boolean }): Promise<void> {
  const config = cliConfig(options);
  const topK = options.topK === undefined ? 3 : Number(options.topK);
  if (!Number.isInteger(topK) || topK < 1) fail(`--top-k must be a positive whole number, got "${options.topK}"`, EXIT.USAGE);
  const reply = await mem(config, { type: 'search_hard', query: words.join(' '), top_k: topK });
  const results = (reply.results ?? []) as { messages: ChatMessage[]; score: number }[];
  if (options.json) process.stdout.write(`${JSON.stringify(results)}\n`);
  else if (results.length === 0) process.stderr.write('(nothing found)\n');
  else process.stdout.write(`${results.map((r) => `${r.score.toFixed(4)}  ${r.messages.map((m) => m.content).join(' / ')}`).join('\n')}\n`);
}
