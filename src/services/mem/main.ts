/**
 * zino-mem: chat histories, hard memories with TF-IDF search, and the soft memory
 * string, persisted under `[mem] data_dir` (layout in docs/storage.md).
 *
 * Start-up: create the directories, remove temporary files a crash left behind,
 * import a contract-layout data directory (legacy.ts), open the stores (which drops
 * torn tails; the search index is built in the background, hard.ts), then listen.
 * Shutdown waits for queued writes.
 */
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import {
  ZinoError,
  bindHandlers,
  isPathError,
  makeDirectory,
  type Logger,
  type ResolvedConfig,
  type ServiceDefinition,
  type ServiceInstance,
} from '../../runtime/index.js';
import { MEM } from '../../protocol/mem.js';
import { TMP_SUFFIX, fsyncDir } from './files.js';
import { HARD_FILE, HardStore } from './hard.js';
import { memHandlers, memLimits } from './handlers.js';
import { HistoryStore } from './history.js';
import { importLegacy } from './legacy.js';
import { SOFT_FILE, SoftMemory } from './soft.js';

/** Directory of the history files inside `data_dir`. */
export const HISTORY_DIR = 'history';

/** Removes `*.tmp` files: replacements that a crash interrupted before their rename. */
async function removeTemporaries(dir: string, log: Logger): Promise<void> {
  for (const name of await readdir(dir)) {
    if (!name.endsWith(TMP_SUFFIX)) continue;
    await rm(path.join(dir, name), { force: true });
    log.warn({ file: path.join(dir, name) }, 'unfinished temporary file removed');
  }
}

/** Opens every store under `dataDir`; exported for tests and benchmarks. */
export async function openStores(dataDir: string, log: Logger): Promise<{ history: HistoryStore; hard: HardStore; soft: SoftMemory }> {
  const historyDir = path.join(dataDir, HISTORY_DIR);
  await makeDirectory(historyDir, 0o700);
  await fsyncDir(dataDir);
  await removeTemporaries(dataDir, log);
  await removeTemporaries(historyDir, log);
  const hardFile = path.join(dataDir, HARD_FILE);
  await importLegacy(dataDir, historyDir, hardFile, log);
  const hard = await HardStore.open(hardFile, log);
  const soft = await SoftMemory.open(path.join(dataDir, SOFT_FILE));
  return { history: new HistoryStore(historyDir, log), hard, soft };
}

const definition: ServiceDefinition = {
  name: 'mem',
  async create(config: Readonly<ResolvedConfig>, log: Logger): Promise<ServiceInstance> {
    const dataDir = config.mem.data_dir;
    let stores;
    try {
      stores = await openStores(dataDir, log);
    } catch (err) {
      // A data directory that cannot be made or opened is a configuration problem (exit 78), not a crash to retry.
      if (isPathError(err)) throw new ZinoError('CONFIG', `[mem] data_dir ${dataDir} cannot be used: ${err.message}`);
      throw err;
    }
    log.info({ dataDir }, 'memory opened');
    return {
      // eslint-disable-next-line no-restricted-syntax -- made once, at start
      ...bindHandlers(MEM)(memHandlers(stores, memLimits(config.limits.max_frame_bytes), log)),
      async close() {
        await Promise.all([stores.history.close(), stores.hard.close(), stores.soft.close()]);
      },
    };
  },
};

export default definition;
