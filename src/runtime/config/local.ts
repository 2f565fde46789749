/**
 * The local configuration: `DIR/ZINO.toml` beside a runtime directory's sockets
 * and data, read on top of `./ZINO.toml` (load.ts). It holds what a user changes
 * (the LLM endpoint, the model, where the key is), so that a source checkout's
 * tracked ZINO.toml stays the documented reference and `git status` stays clean.
 * `zino init` writes it, and so does the first `zino up --dir DIR` (`npm start`).
 */
import { open } from 'node:fs/promises';
import { makeDirectory } from '../dirs.js';
import { localConfigPath } from './load.js';

/** The text `zino init` writes: the keys a new user sets, explained. */
export const LOCAL_CONFIG_TEXT = `# ZINO local configuration (written by \`zino init\`).
#
# Read on top of the ZINO.toml of the directory ZINO starts in (in a source
# checkout, the tracked reference file that lists every key with its default and
# meaning; docs/configuration.md has the same). Set here only what you change;
# git ignores this directory. Restart after a change (Ctrl-C, then npm start).
# Relative paths here are resolved against this directory.

[api]
# The LLM: any OpenAI-compatible endpoint, or "demo" (the built-in demo model,
# which a source checkout's ZINO.toml sets). Uncomment one line:
#   OpenAI      base_url = "https://api.openai.com/v1"
#   OpenRouter  base_url = "https://openrouter.ai/api/v1"
#   Ollama      base_url = "http://127.0.0.1:11434/v1"
#   llama.cpp   base_url = "http://127.0.0.1:8080/v1"
#   vLLM        base_url = "http://127.0.0.1:8000/v1"
#
# The API key (servers on 127.0.0.1 need none). rtr reads it, so it must reach the
# process that runs rtr, never the shell of \`zino ask\`. Either a file beside this
# one that only you can read (rtr refuses it otherwise):
#   umask 077; printf '%s\\n' 'sk-...' > llm.key
# key_file = "llm.key"
# or LLM_API_KEY in the environment of \`npm start\` / \`zino up\`:
#   LLM_API_KEY=sk-... npm start

[service]
# The model, e.g. "gpt-4o-mini", "openai/gpt-4o-mini" (OpenRouter), "qwen2.5:7b"
# (Ollama). Empty: the only model the server serves (\`zino status\` shows it).
# model = ""
`;

/** Writes `DIR/ZINO.toml` (mode 0600, the directory 0700) unless it exists; says which. */
export async function writeLocalConfig(dir: string): Promise<{ file: string; created: boolean }> {
  const file = localConfigPath(dir);
  await makeDirectory(dir, 0o700);
  let handle;
  try {
    // 'wx': never overwrite what a user wrote, even if two starts race.
    handle = await open(file, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return { file, created: false };
    throw err;
  }
  try {
    await handle.writeFile(LOCAL_CONFIG_TEXT);
    await handle.sync();
  } finally {
    await handle.close();
  }
  return { file, created: true };
}
