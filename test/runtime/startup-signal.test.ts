/**
 * A stop requested while a service is still starting (here: mem indexing 20,000
 * memories) ends it cleanly with exit 0, instead of the default action of SIGTERM
 * killing it half-started. Regression: the handlers were installed only after listening.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI_PATH, startProcess, type RunningProcess } from '../../src/testing/process.js';
import { writeTestConfig } from '../../src/testing/suite.js';
import { tempDir, waitFor } from '../helpers/util.js';

let proc: RunningProcess | undefined;
let cleanup: (() => void) | undefined;
afterEach(async () => {
  await proc?.stop('SIGKILL');
  cleanup?.();
});

describe('a SIGTERM while a service starts', () => {
  it('is kept and acted on once the service is up: exit 0', async () => {
    const temp = tempDir('zstart');
    cleanup = temp.cleanup;
    const { file } = writeTestConfig(temp.dir);
    const data = path.join(temp.dir, 'data', 'mem');
    mkdirSync(data, { recursive: true });
    const lines = Array.from(
      { length: 20_000 },
      (_, id) =>
        `${JSON.stringify({ id, messages: [{ role: 'user', content: `memory number ${id} about server ${id % 97} and disk ${id % 13}` }], tag: null })}\n`,
    );
    writeFileSync(path.join(data, 'hard_memories.jsonl'), lines.join(''));
    proc = startProcess(CLI_PATH, ['serve', 'mem', '--config', file], { env: { ...process.env, ZINO_LOG_LEVEL: 'info' } });
    await waitFor(() => proc!.logs.some((l) => l.msg === 'configuration loaded'), 'mem to start loading');
    proc.child.kill('SIGTERM');
    expect(await proc.exited).toEqual({ code: 0, signal: null });
    expect(proc.logs.map((l) => l.msg)).toEqual(expect.arrayContaining(['listening', 'shutting down', 'stopped']));
  });
});
