/**
 * Which backend rtr uses: the demo model, an OpenAI-compatible API, or none (with
 * the reason, which every `infer` then answers as NOT_CONFIGURED). Advice names the
 * file the user edits: the most specific configuration file read (the local one).
 */
import type { Logger, ResolvedConfig } from '../../runtime/index.js';
import type { LlmBackend } from './backend.js';
import { DemoBackend } from './demo/model.js';
import { describeKeySource, resolveApiKey } from './key.js';
import type { OpenAiBackend } from './openai-backend.js';

/** A usable backend and where its key came from, or why there is none. */
export type Selection = { backend: LlmBackend; keySource: string; problem?: undefined } | { backend?: undefined; keySource?: undefined; problem: string };

const EXAMPLES =
  'OpenAI "https://api.openai.com/v1", OpenRouter "https://openrouter.ai/api/v1", Ollama "http://127.0.0.1:11434/v1", ' +
  'llama.cpp "http://127.0.0.1:8080/v1", vLLM "http://127.0.0.1:8000/v1", or "demo" for the built-in demo model';

/**
 * Chooses the backend from `[api]` and `[service]`; `configFile` is named in advice. The
 * OpenAI-compatible backend is `openAi` (from engine.ts, which rtr imports once it listens).
 */
export function selectBackend(
  config: Readonly<ResolvedConfig>,
  log: Logger,
  openAi: typeof OpenAiBackend,
  configFile: string | null = null,
  env: NodeJS.ProcessEnv = process.env,
): Selection {
  const file = configFile ?? 'ZINO.toml';
  const baseUrl = config.api.base_url.trim();
  if (baseUrl === 'demo') return { backend: new DemoBackend(), keySource: 'no key' };
  if (baseUrl === '') return { problem: `no LLM endpoint configured: set [api] base_url in ${file} (${EXAMPLES})` };
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return { problem: `[api] base_url is not a URL: "${baseUrl}" (${EXAMPLES})` };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { problem: `[api] base_url must be an http(s) URL, got "${baseUrl}"` };
  const key = resolveApiKey(config, env);
  if (key.problem !== undefined) return { problem: key.problem };
  let apiKey = key.key;
  if (apiKey === '') {
    // Local servers (Ollama, llama.cpp, vLLM) usually need no key; the SDK still wants one.
    if (!isLoopback(url.hostname)) {
      return {
        problem:
          `no API key for ${baseUrl}: set [api] key_file in ${file} (a file only you can read), or LLM_API_KEY in the environment ` +
          'of `npm start` / `zino up` / the zino-rtr unit (rtr reads it; the shell of `zino ask` does not matter)',
      };
    }
    apiKey = 'no-key';
  }
  const backend = new openAi({ baseUrl, apiKey, model: config.service.model, timeoutMs: config.rtr.timeout * 1000, log, configFile: file });
  return { backend, keySource: describeKeySource(key.source, config) };
}

/** True for localhost and loopback addresses. */
export function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
