/**
 * `zino init [--dir DIR]`: writes the local configuration `DIR/ZINO.toml`
 * (default `.zino/ZINO.toml`, where `npm start` runs the suite) unless it exists.
 * That file is where a user's settings go; the tracked ZINO.toml stays the reference.
 */
import path from 'node:path';
import { EXIT } from '../../runtime/index.js';
import { writeLocalConfig } from '../../runtime/config/local.js';
import { fail } from '../config.js';
import { CHECKOUT_DIR } from '../suite-dir.js';

/** Runs `zino init`. */
export async function initCommand(options: { dir?: string }): Promise<void> {
  const dir = options.dir ?? (process.env.ZINO_DIR || CHECKOUT_DIR);
  let result;
  try {
    result = await writeLocalConfig(path.resolve(dir));
  } catch (err) {
    fail(`cannot write the local configuration in ${dir}: ${(err as Error).message}`, EXIT.CONFIG);
  }
  const shown = path.relative(process.cwd(), result.file) || result.file;
  if (!result.created) {
    process.stderr.write(`${shown} exists already; left as it is. Edit it to change your settings.\n`);
    return;
  }
  process.stdout.write(
    [
      `wrote ${shown}: your local configuration, read on top of ./ZINO.toml.`,
      'To use a real LLM, set [api] base_url (and [service] model) there, then (re)start the suite.',
      '',
    ].join('\n'),
  );
}
