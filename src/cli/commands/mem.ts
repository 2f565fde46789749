/**
 * `zino mem history|clear|soft|remember|search`: administering memory by talking
 * to mem directly (and to sys for the soft memory in the prompt).
 */
import { ZinoError, type HardMemoryResult, type ZinoClient } from '../../client/index.js';
import { EXIT, exitStatusFor } from '../../runtime/exit.js';
import { cliClient } from '../client.js';
import { fail, howToStart, type ConfigOptions } from '../config.js';

/**
 * mem's answer to `call`, or the command ends with the error's message and the
 * status of the one table (exit.ts): 69 when mem cannot be reached, with how to start it.
 */
async function mem<T>(call: (client: ZinoClient) => Promise<T>, client: ZinoClient): Promise<T> {
  try {
    return await call(client);
  } catch (err) {
    const status = exitStatusFor(err);
    if (err instanceof ZinoError && err.code === 'UPSTREAM_UNAVAILABLE' && err.detail.phase === 'connect') {
      return fail(howToStart(client.socket('mem'), err.detail.errno ?? err.code, 'mem'), status);
    }
    return fail((err as Error).message, status);
  }
}

/** `zino mem history <channel> [--limit N]`. */
export async function memHistory(channel: string, options: ConfigOptions & { limit?: string; json?: boolean }): Promise<void> {
  const client = cliClient(options);
  const limit = options.limit === undefined ? 0 : Number(options.limit);
  if (!Number.isInteger(limit) || limit < 0) fail(`--limit must be a whole number, got "${options.limit}"`, EXIT.USAGE);
  const { messages, omitted } = await mem((c) => c.mem.getHistoryPage(channel, { limit }), client);
  if (omitted > 0) {
    process.stderr.write(
      `(${omitted} older message${omitted === 1 ? '' : 's'} left out: the history is larger than one reply can hold; shown: the ${messages.length} most recent)\n`,
    );
  }
  if (options.json) process.stdout.write(`${JSON.stringify(messages)}\n`);
  else if (messages.length === 0) process.stderr.write(`(no history on "${channel}")\n`);
  else process.stdout.write(`${messages.map((m) => `${m.role}: ${m.content}`).join('\n\n')}\n`);
}

/** `zino mem clear <channel>`. */
export async function memClear(channel: string, options: ConfigOptions): Promise<void> {
  await mem((c) => c.mem.clearHistory(channel), cliClient(options));
  process.stderr.write(`history of "${channel}" cleared\n`);
}

/** `zino mem soft [text…]`: shows the soft memory, or replaces it (in mem, durably, and in sys's prompt). */
export async function memSoft(words: string[], options: ConfigOptions & { clear?: boolean }): Promise<void> {
  const client = cliClient(options);
  if (words.length === 0 && !options.clear) {
    const soft = await mem((c) => c.mem.getSoft(), client);
    // An empty soft memory prints nothing on stdout (not a blank line); stderr says so.
    if (soft === '') process.stderr.write('(the soft memory is empty)\n');
    else process.stdout.write(`${soft}\n`);
    return;
  }
  const content = options.clear ? '' : words.join(' ');
  await mem((c) => c.mem.setSoft(content), client);
  try {
    await client.sys.setSoftMemory(content, { timeoutMs: 5000 });
    process.stderr.write('soft memory updated (stored, and in the system prompt)\n');
  } catch (err) {
    process.stderr.write(`soft memory stored; the running system prompt was not updated: ${(err as Error).message}\n`);
  }
}

/** `zino mem remember <text…> [--tag T]`: stores a hard memory. */
export async function memRemember(words: string[], options: ConfigOptions & { tag?: string }): Promise<void> {
  const client = cliClient(options);
  const text = words.join(' ').trim();
  if (text === '') fail('nothing to remember', EXIT.USAGE);
  const id = await mem((c) => c.mem.storeHard([{ role: 'user', content: text }], options.tag ? { tag: options.tag } : {}), client);
  process.stdout.write(`remembered as #${id}\n`);
}

/** `zino mem forget <id>`: deletes a hard memory (its id as `remember` and `search --json` show it; "#7" works too). */
export async function memForget(idText: string, options: ConfigOptions): Promise<void> {
  const client = cliClient(options);
  const id = Number(idText.replace(/^#/, ''));
  if (!/^#?\d+$/.test(idText) || !Number.isSafeInteger(id))
    fail(`the id must be a whole number (as "zino mem remember" printed it), got "${idText}"`, EXIT.USAGE);
  await mem((c) => c.mem.forgetHard(id), client);
  process.stderr.write(`hard memory #${id} forgotten\n`);
}

/** `zino mem search <query…> [--top-k N]`. */
export async function memSearch(words: string[], options: ConfigOptions & { topK?: string; json?: boolean }): Promise<void> {
  const client = cliClient(options);
  const topK = options.topK === undefined ? 3 : Number(options.topK);
  if (!Number.isInteger(topK) || topK < 1) fail(`--top-k must be a positive whole number, got "${options.topK}"`, EXIT.USAGE);
  const results = await mem((c) => c.mem.searchHard(words.join(' '), { topK }), client);
  if (options.json) process.stdout.write(`${JSON.stringify(results)}\n`);
  else if (results.length === 0) process.stderr.write('(nothing found)\n');
  else process.stdout.write(`${results.map(searchLine).join('\n')}\n`);
}

/**
 * One result of `zino mem search`: score, `#id`, the messages. The id is a ZINO extra of
 * the reply: a mem written from the contract alone sends none, and then none is shown.
 */
function searchLine(r: HardMemoryResult): string {
  return [r.score.toFixed(4), ...(typeof r.id === 'number' ? [`#${r.id}`] : []), r.messages.map((m) => m.content).join(' / ')].join('  ');
}
