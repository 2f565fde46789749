/**
 * Issue 15, point 1: configuring a real LLM must not break the tests nor dirty the
 * checkout. In a fresh clone of this repository (its committed state), the user
 * does what the README says: `zino init`, then sets base_url in the local file.
 * The unit tests (among them those that check the shipped ZINO.toml documents
 * every key, which failed when users edited it) stay green, and `git status` stays
 * clean. The clone borrows this checkout's node_modules through a symlink, which
 * .gitignore's `node_modules` covers as it covers a directory.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI_PATH, PACKAGE_ROOT } from '../../src/testing/paths.js';
import { tempDir } from '../helpers/util.js';

const isCheckout = existsSync(path.join(PACKAGE_ROOT, '.git'));

describe.runIf(isCheckout)('a local configuration in a fresh clone', () => {
  it('with another base_url leaves the unit tests green and git status clean', { timeout: 240_000 }, () => {
    const { dir, cleanup } = tempDir('zclone');
    try {
      const clone = path.join(dir, 'zino');
      execFileSync('git', ['clone', '--quiet', PACKAGE_ROOT, clone]);
      symlinkSync(path.join(PACKAGE_ROOT, 'node_modules'), path.join(clone, 'node_modules'));
      const env = { ...process.env, ZINO_CONFIG: '', ZINO_DIR: '' };
      execFileSync(process.execPath, [CLI_PATH, 'init'], { cwd: clone, env });
      const local = path.join(clone, '.zino', 'ZINO.toml');
      writeFileSync(local, readFileSync(local, 'utf8').replace(/^\[api\]\n/m, '[api]\nbase_url = "http://127.0.0.1:11434/v1"\n'));
      // The tracked reference is as cloned: the setting lives in the local file only.
      expect(execFileSync('git', ['diff', '--stat'], { cwd: clone, encoding: 'utf8' })).toBe('');

      const vitest = path.join(clone, 'node_modules', 'vitest', 'vitest.mjs');
      const run = spawnSync(process.execPath, [vitest, 'run', '--project', 'unit'], { cwd: clone, env: { ...env, CI: 'true' }, encoding: 'utf8' });
      expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
      expect(execFileSync('git', ['status', '--porcelain'], { cwd: clone, encoding: 'utf8' })).toBe('');
    } finally {
      cleanup();
    }
  });
});
