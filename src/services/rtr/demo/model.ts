/**
 * ZINO's built-in demo model (`[api] base_url = "demo"`): deterministic, no
 * network, and enough behaviour to show the whole loop working.
 *
 * - A question about this machine → a sentence and a `<tool_call>` for execute_bash
 *   with a fitting command.
 * - After a `<tool_response>` → a summary of what the command printed.
 * - The skill pipeline's interpreter and fabricator steps → a plan and a script.
 * - Anything else → what the demo model is and how to configure a real LLM.
 *
 * It streams word by word with a short delay, like a real model.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ChatMessage } from '../../../runtime/index.js';
import type { BackendCheck, InferParams, LlmBackend, StreamEvent } from '../backend.js';
import { findIntent, shellQuote } from './intents.js';

/** Model name the demo reports. */
export const DEMO_MODEL = 'zino-demo';

const CONFIGURE = [
  "I'm ZINO's built-in demo model: I don't understand language, but I can show you the whole loop:",
  'ask me about this machine (for example "how much disk space is free?", "what is the uptime?" or',
  '"run `uname -a`") and I will call a tool, ZINO will run it, and I will report the result.',
  'Ask me to "create a marker file on the host" to see a host run: it needs your approval first.',
  '',
  'To talk to a real model, set these in your local configuration (.zino/ZINO.toml when you',
  'started with npm start; `zino init` writes it) and restart ZINO:',
  '',
  '    [api]',
  '    base_url = "https://api.openai.com/v1"      # OpenAI',
  '    # base_url = "https://openrouter.ai/api/v1" # OpenRouter',
  '    # base_url = "http://127.0.0.1:11434/v1"    # Ollama',
  '    # base_url = "http://127.0.0.1:8080/v1"     # llama.cpp server',
  '    # base_url = "http://127.0.0.1:8000/v1"     # vLLM',
  '    [service]',
  '    model = "gpt-4o-mini"                       # the model to use',
  '',
  'A remote API needs a key: rtr reads it, so put it in a private file named by [api] key_file,',
  'or in the LLM_API_KEY environment variable of `npm start` / `zino up` (not of `zino ask`).',
].join('\n');

/** The reply the demo model gives to `messages`. */
export function demoReply(messages: readonly ChatMessage[]): string {
  const last = messages[messages.length - 1];
  const system = messages[0]?.role === 'system' ? messages[0].content : '';
  if (!last) return CONFIGURE;
  if (last.role === 'assistant' && last.content.includes('</tool_response>')) return summarise(last.content);
  if (last.role === 'assistant' && last.content.includes('</task_response>')) return summarise(last.content, 'task_response');
  if (last.role !== 'user') return CONFIGURE;
  const kcr = last.content.indexOf(' [KCR] ');
  if (kcr >= 0) return fabricate(last.content.slice(0, kcr), /python/i.test(system));
  if (/interpreter step/i.test(system)) return interpret(last.content);
  const intent = findIntent(last.content);
  if (!intent) return CONFIGURE;
  if (intent.hostReason !== undefined) {
    const call = JSON.stringify({ name: 'execute_bash', arguments: { code: intent.command, host: true, reason: intent.hostReason } });
    return `That changes the host, so I have to ask to run it outside the sandbox.\n<tool_call>\n${call}\n</tool_call>`;
  }
  const call = JSON.stringify({ name: 'execute_bash', arguments: { code: intent.command } });
  return `Let me check ${intent.topic} on this machine.\n<tool_call>\n${call}\n</tool_call>`;
}

function summarise(text: string, tag = 'tool_response'): string {
  const open = text.lastIndexOf(`<${tag}>`);
  const close = text.lastIndexOf(`</${tag}>`);
  const body = (open >= 0 && close > open ? text.slice(open + tag.length + 2, close) : '').trim();
  // Not run at all: refused (a denied host run), or it could not start.
  if (body.startsWith('error: ')) {
    return `\nIt was not run: ${body.slice('error: '.length).replace(/^it was not run: /, '')}\n\n(This summary comes from the demo model; a real LLM would read the error and answer in plain words.)`;
  }
  const exit = /\[exit code: (-?\d+)\]\s*$/.exec(body);
  const output = (exit ? body.slice(0, exit.index) : body).trimEnd();
  const lines = output === '' || output === '(no output)' ? [] : output.split('\n');
  const shown = lines
    .slice(0, 15)
    .map((l) => `    ${l}`)
    .join('\n');
  const status = exit ? `It failed with exit code ${exit[1]}.` : 'It ran successfully.';
  const what =
    lines.length === 0
      ? 'It printed nothing.'
      : `It printed ${lines.length} line${lines.length === 1 ? '' : 's'}${lines.length > 15 ? '; the first 15' : ''}:\n\n${shown}`;
  return `\n${status} ${what}\n\n(This summary comes from the demo model; a real LLM would read the output and answer in plain words.)`;
}

function interpret(request: string): string {
  const intent = findIntent(request);
  if (!intent) return '1. The demo model cannot plan this request; print a note saying so.';
  return `1. Run \`${intent.command}\` to show ${intent.topic}.\n2. Print its output unchanged.`;
}

function fabricate(request: string, python: boolean): string {
  const intent = findIntent(request);
  const command = intent?.command ?? `echo ${shellQuote(`The demo model cannot write code for: ${request}`)}`;
  if (!python) return command;
  return `import subprocess\nimport sys\n\nresult = subprocess.run(${JSON.stringify(command)}, shell=True, capture_output=True, text=True)\nprint(result.stdout, end="")\nprint(result.stderr, end="", file=sys.stderr)\nsys.exit(result.returncode)`;
}

/** Splits a reply into word-sized pieces, as a model's tokens would arrive. */
export function tokenize(text: string): string[] {
  return text.match(/\s*\S+|\s+/g) ?? [];
}

/** The demo model as an rtr backend. */
export class DemoBackend implements LlmBackend {
  readonly kind = 'demo' as const;
  readonly model = DEMO_MODEL;

  constructor(private readonly delayMs = 12) {}

  async complete(params: InferParams, signal: AbortSignal): Promise<{ content: string; usage: { prompt_tokens: number; completion_tokens: number } }> {
    signal.throwIfAborted();
    const content = demoReply(params.messages);
    return { content, usage: usage(params.messages, content) };
  }

  async *stream(params: InferParams, signal: AbortSignal): AsyncIterable<StreamEvent> {
    const content = demoReply(params.messages);
    for (const piece of tokenize(content)) {
      await sleep(this.delayMs, undefined, { signal });
      yield { delta: piece };
    }
    yield { usage: usage(params.messages, content) };
  }

  /** The demo model is always there. */
  check(): Promise<BackendCheck> {
    return Promise.resolve({ models: [DEMO_MODEL] });
  }
}

function usage(messages: readonly ChatMessage[], content: string): { prompt_tokens: number; completion_tokens: number } {
  const promptChars = messages.reduce((n, m) => n + m.content.length, 0);
  return { prompt_tokens: Math.ceil(promptChars / 4), completion_tokens: Math.ceil(content.length / 4) };
}
