/**
 * Where rtr's API key comes from: `[api] key`, else the file `[api] key_file`
 * (which must not be readable by group or others), else `LLM_API_KEY` in rtr's own
 * environment. Only rtr reads the key; the source (never the key) is shown by
 * `zino status` and named in the hint of a 401.
 */
import { readFileSync, statSync } from 'node:fs';
import type { ResolvedConfig } from '../../runtime/index.js';

/** Where the key came from. */
export type KeySource = 'config' | 'key_file' | 'env' | 'none';

/** A key and its source, or why the configured key file cannot be used. */
export type KeyResult = { key: string; source: KeySource; problem?: undefined } | { key?: undefined; source?: undefined; problem: string };

/** The key rtr uses, by the precedence in the module comment. */
export function resolveApiKey(config: Readonly<ResolvedConfig>, env: NodeJS.ProcessEnv = process.env): KeyResult {
  const { key, key_file: file } = config.api;
  // resolveConfig fills [api] key from LLM_API_KEY when neither key nor key_file is set.
  if (key !== '') return { key, source: env.LLM_API_KEY !== undefined && env.LLM_API_KEY === key ? 'env' : 'config' };
  if (file === '') return { key: '', source: 'none' };
  let mode: number;
  try {
    const stats = statSync(file);
    if (!stats.isFile()) return { problem: `[api] key_file ${file} is not a regular file` };
    mode = stats.mode & 0o777;
  } catch (err) {
    return { problem: `cannot read [api] key_file ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` };
  }
  if ((mode & 0o077) !== 0) {
    return { problem: `[api] key_file ${file} may be read by others (mode 0${mode.toString(8)}); make it private: chmod 600 ${file}` };
  }
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return { problem: `cannot read [api] key_file ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` };
  }
  const fromFile = text.trim();
  if (fromFile === '') return { problem: `[api] key_file ${file} is empty` };
  return { key: fromFile, source: 'key_file' };
}

/** Where the key came from, in words, for hints and `zino status`. */
export function describeKeySource(source: KeySource, config: Readonly<ResolvedConfig>): string {
  switch (source) {
    case 'config':
      return '[api] key';
    case 'key_file':
      return `[api] key_file ${config.api.key_file}`;
    case 'env':
      return "LLM_API_KEY in rtr's environment";
    case 'none':
      return 'no key';
  }
}
