/**
 * Import of the contract's storage layout (the original Python service):
 *
 *   channels/{channel_id}.json   JSON array of {role, content}
 *   hard_memories.json           JSON array of {messages, tag}
 *   soft_memory.txt              the string (same file and format as ours: nothing to do)
 *
 * Runs at start, before mem listens. Each legacy file L becomes its new file T by
 * one atomic replace (files.ts `replaceFile`): T's new content is L's records
 * followed (channels) or preceded (hard memories) by whatever T already held, and
 * the first record from L carries `"legacy_sha256"`: the SHA-256 of L's bytes. Then
 * L is renamed to `L.imported` and the directory fsynced.
 *
 * Crash-safe and idempotent: a crash before the replace leaves T as it was and L in
 * place (the import runs again); a crash between the replace and the rename leaves
 * L in place, but T already holds a record marked with L's hash, so the next start
 * only renames L. A different file dropped at L later has another hash and is
 * imported. A legacy file that cannot be parsed is logged and left where it is.
 *
 * Hard memory ids: entries get ids continuing after the store's last id, so into
 * an empty store the ids are the legacy array indices. A legacy element that is not
 * an entry still takes its id (with no messages), so indices never shift.
 */
import { createHash } from 'node:crypto';
import { readFile, readdir, rename, open } from 'node:fs/promises';
import path from 'node:path';
import { chatMessages, type ChatMessage, type Logger } from '../../runtime/index.js';
import { fsyncDir, isNotFound, replaceFile } from './files.js';
import { hardLine, hardRecord } from './hard.js';
import { historyLine } from './history.js';
import { linesForward, parseLine } from './lines.js';
import { channelFileName, checkChannelId } from './naming.js';

/** Suffix given to a legacy file once imported. */
export const IMPORTED_SUFFIX = '.imported';

/** What an import did, for the start-up log. */
export interface ImportReport {
  channels: number;
  messages: number;
  hardEntries: number;
}

/** Imports every legacy file under `dataDir` not imported yet. */
export async function importLegacy(dataDir: string, historyDir: string, hardFile: string, log: Logger): Promise<ImportReport> {
  const report: ImportReport = { channels: 0, messages: 0, hardEntries: 0 };
  const channelsDir = path.join(dataDir, 'channels');
  let names: string[] = [];
  try {
    names = (await readdir(channelsDir, { withFileTypes: true }))
      .filter((e) => e.isFile() && e.name.endsWith('.json'))
      .map((e) => e.name)
      .sort();
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  for (const name of names) {
    const imported = await importChannel(path.join(channelsDir, name), historyDir, log);
    if (imported !== undefined) {
      report.channels++;
      report.messages += imported;
    }
  }
  const legacyHard = path.join(dataDir, 'hard_memories.json');
  report.hardEntries = (await importHard(legacyHard, hardFile, log)) ?? 0;
  if (report.channels > 0 || report.hardEntries > 0) log.info({ ...report }, 'legacy data imported');
  return report;
}

/** A legacy file's bytes, hash and parsed array; `undefined` (logged) when absent or unusable. */
async function readLegacy(file: string, log: Logger): Promise<{ hash: string; items: unknown[] } | undefined> {
  let raw: Buffer;
  try {
    raw = await readFile(file);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  let items: unknown;
  try {
    items = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    log.error({ file, reason: (err as Error).message }, 'legacy file is not JSON; left in place');
    return undefined;
  }
  if (!Array.isArray(items)) {
    log.error({ file, reason: 'not a JSON array' }, 'legacy file is not JSON; left in place');
    return undefined;
  }
  return { hash: createHash('sha256').update(raw).digest('hex'), items };
}

/** Keeps the `{role, content}` objects of a legacy list; counts the rest. */
function legacyMessages(value: unknown, dropped: { n: number }): ChatMessage[] {
  if (!Array.isArray(value)) {
    dropped.n++;
    return [];
  }
  const out = chatMessages(value);
  dropped.n += value.length - out.length;
  return out;
}

/** The complete lines of `file` (a torn tail cut off), and whether one holds `hash`. */
async function existing(file: string, hash: string): Promise<{ text: Buffer[]; marked: boolean } | undefined> {
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  try {
    const { size } = await handle.stat();
    const text: Buffer[] = [];
    let marked = false;
    for await (const line of linesForward(handle, 0, size)) {
      if (!marked && line.text.includes(hash)) marked = parseLine(line.text)?.legacy_sha256 === hash;
      text.push(Buffer.from(line.text), Buffer.from('\n'));
    }
    return { text, marked };
  } finally {
    await handle.close();
  }
}

async function finish(legacy: string): Promise<void> {
  await rename(legacy, `${legacy}${IMPORTED_SUFFIX}`);
  await fsyncDir(path.dirname(legacy));
}

/** Imports one `channels/{id}.json`; returns the number of messages, `undefined` when skipped. */
async function importChannel(legacy: string, historyDir: string, log: Logger): Promise<number | undefined> {
  const id = path.basename(legacy, '.json');
  try {
    checkChannelId(id);
  } catch (err) {
    log.error({ file: legacy, reason: (err as Error).message }, 'legacy channel file skipped: unusable channel id');
    return undefined;
  }
  const parsed = await readLegacy(legacy, log);
  if (!parsed) return undefined;
  const dropped = { n: 0 };
  const messages = legacyMessages(parsed.items, dropped);
  if (dropped.n > 0) log.warn({ file: legacy, dropped: dropped.n }, 'legacy messages without string role and content skipped');
  const target = path.join(historyDir, channelFileName(id));
  const before = await existing(target, parsed.hash);
  if (!before?.marked && messages.length > 0) {
    // One line per message (a legacy file does not say which messages were appended together).
    const lines = messages.map((m, i) => historyLine([m], i === 0 ? { legacy_sha256: parsed.hash } : {}));
    await replaceFile(target, Buffer.concat([Buffer.from(lines.join(''), 'utf8'), ...(before?.text ?? [])]));
  }
  await finish(legacy);
  return messages.length;
}

/** Imports `hard_memories.json`; returns the number of entries, `undefined` when there is nothing to do. */
async function importHard(legacy: string, target: string, log: Logger): Promise<number | undefined> {
  const parsed = await readLegacy(legacy, log);
  if (!parsed) return undefined;
  const before = await existing(target, parsed.hash);
  if (!before?.marked && parsed.items.length > 0) {
    let nextId = 0;
    for (let i = 0; i < (before?.text.length ?? 0); i += 2) {
      const entry = hardRecord(before?.text[i] as Buffer);
      if (entry) nextId = Math.max(nextId, entry.id + 1);
    }
    const dropped = { n: 0 };
    const lines = parsed.items.map((item, i) => {
      const { messages, tag } = (item ?? {}) as Record<string, unknown>;
      const entry = { id: nextId + i, messages: legacyMessages(messages, dropped), tag: typeof tag === 'string' ? tag : null };
      return hardLine(entry, i === 0 ? { legacy_sha256: parsed.hash } : {});
    });
    if (dropped.n > 0) log.warn({ file: legacy, dropped: dropped.n }, 'legacy hard memory parts without string role and content skipped');
    await replaceFile(target, Buffer.concat([...(before?.text ?? []), Buffer.from(lines.join(''), 'utf8')]));
  }
  await finish(legacy);
  return parsed.items.length;
}
