/**
 * The pure parts of the HTTP front end: the answer text (markup taken out, tool
 * activity as Markdown), reading a chat completion body, the listen address, and
 * the token.
 */
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AnswerText, eventMarkdown, fenced } from '../../src/frontends/http/answer-text.js';
import { parseJsonObject } from '../../src/frontends/http/body.js';
import { parseChatRequest } from '../../src/frontends/http/chat-request.js';
import { HttpError, fromZinoError } from '../../src/frontends/http/errors.js';
import { isLoopback, parseListen } from '../../src/frontends/http/listen.js';
import { TokenCheck, loadToken } from '../../src/frontends/http/token.js';
import { ConfigError, ZinoError } from '../../src/runtime/index.js';
import { rng } from '../helpers/random.js';
import { captureLogger, tempDir } from '../helpers/util.js';

/** What a whole answer becomes when `pieces` arrive one by one. */
function answer(pieces: string[], mode: 'plain' | 'verbose' | 'raw' = 'plain'): string {
  const text = new AnswerText(mode);
  return pieces.map((p) => text.chunk(p)).join('') + text.end();
}

/** `count` ways of cutting `text` into pieces (seeded, so a failure can be replayed). */
function randomSplits(text: string, count: number, seed = 17): string[][] {
  const random = rng(seed);
  return Array.from({ length: count }, () => {
    const pieces: string[] = [];
    for (let at = 0; at < text.length;) {
      const size = 1 + Math.floor(random() * 12);
      pieces.push(text.slice(at, at + size));
      at += size;
    }
    return pieces;
  });
}

const TOOL_TURN =
  'Running.<tool_call>{"name":"execute_bash","arguments":{"code":"echo $((6*7))"}}</tool_call>\n<tool_response>\n42\n</tool_response>\n The answer is 42.';

describe('AnswerText', () => {
  it('takes the tool loop markup and the newlines agr put around a response out, however the text is split', () => {
    expect(answer([TOOL_TURN])).toBe('Running. The answer is 42.');
    for (const pieces of randomSplits(TOOL_TURN, 50)) expect(answer(pieces)).toBe('Running. The answer is 42.');
  });

  it("keeps the model's own newlines, and text that only looks like a tag", () => {
    expect(answer(['Line one.\n\nLine two.\n'])).toBe('Line one.\n\nLine two.\n');
    expect(answer(['a < b and <tool', 'box> stays'])).toBe('a < b and <toolbox> stays');
    expect(answer(['unclosed <tool_call>{"x":1}'])).toBe('unclosed <tool_call>{"x":1}');
  });

  it('passes everything through in raw mode (zino-direct)', () => {
    expect(answer([TOOL_TURN], 'raw')).toBe(TOOL_TURN);
  });

  it('writes tool calls and results as Markdown in verbose mode, and nothing for them otherwise', () => {
    const verbose = new AnswerText('verbose');
    const plain = new AnswerText('plain');
    for (const text of [verbose, plain]) {
      text.chunk('Checking.');
    }
    const call = { type: 'tool_call', kind: 'tool', name: 'execute_python', code: 'print(1)' } as const;
    const result = { type: 'tool_result', exit_code: 2, output: 'boom' } as const;
    expect(verbose.event(call)).toBe('\n\n**Running `execute_python`:**\n\n```python\nprint(1)\n```\n\n');
    expect(verbose.event(result)).toBe('**Result** (exit 2):\n\n```text\nboom\n```\n\n');
    expect(verbose.event({ type: 'tool_call', kind: 'task', skill: 'disk', request: 'how\nfull' })).toBe('\n\n**Task `disk`:** how full\n\n');
    expect(verbose.event({ type: 'tool_call', kind: 'invalid', error: 'bad JSON' })).toBe('\n\n**Tool call not run:** bad JSON\n\n');
    expect(verbose.event({ type: 'tool_result', exit_code: -1, output: '' })).toContain('(not run)');
    expect(verbose.event({ type: 'iteration', n: 2 })).toBe('');
    expect(plain.event(call)).toBe('');
  });

  it('fences code with more backticks than it contains', () => {
    expect(fenced('a ``` b')).toBe('````\na ``` b\n````');
    expect(fenced('x\n', 'bash')).toBe('```bash\nx\n```');
  });
});

describe('eventMarkdown', () => {
  it('shows each kind of tool call readably: a program, a task, an MCP tool with its arguments, a call not run', () => {
    expect(eventMarkdown({ type: 'tool_call', kind: 'tool', name: 'execute_bash', code: 'df -h' })).toContain('```bash\ndf -h\n```');
    const mcp = eventMarkdown({ type: 'tool_call', kind: 'mcp', name: 'files__read_text_file', arguments: { path: '/srv/a.txt' } });
    expect(mcp).toContain('MCP tool `files__read_text_file`');
    expect(mcp).toContain('"path": "/srv/a.txt"');
    expect(eventMarkdown({ type: 'tool_call', kind: 'invalid', error: 'no such tool' })).toContain('Tool call not run:** no such tool');
  });
});

describe('parseChatRequest', () => {
  const user = (content: string) => ({ role: 'user', content });
  const parse = (body: Record<string, unknown>, headers: Record<string, string> = {}) => parseChatRequest(body, headers);
  const status = (fn: () => unknown): number | undefined => {
    try {
      fn();
    } catch (err) {
      if (err instanceof HttpError) return err.status;
      throw err;
    }
    return undefined;
  };

  it('makes the last user message the prompt and the earlier ones the history when there is no channel', () => {
    const job = parse({ model: 'zino', messages: [{ role: 'system', content: 's' }, user('a'), { role: 'assistant', content: null }, user('b')] });
    expect(job).toMatchObject({ model: 'zino', prompt: 'b', stream: false, verbose: false });
    expect(job.history).toEqual([
      { role: 'system', content: 's' },
      { role: 'user', content: 'a' },
      { role: 'assistant', content: '' },
    ]);
    expect(job.channelId).toBeUndefined();
    expect(parse({ model: 'zino', messages: [user('only')] }).history).toEqual([]);
  });

  it("uses a channel's stored history when the request carries only the new message (system messages aside)", () => {
    const viaUser = parse({ model: 'zino', user: 'alice', messages: [{ role: 'system', content: 's' }, user('hi')] });
    expect(viaUser).toMatchObject({ channelId: 'alice', prompt: 'hi' });
    expect(viaUser.history).toBeUndefined();
    // The header wins over `user`, and may be UTF-8.
    const header = Buffer.from('kanal-ä', 'utf8').toString('latin1');
    expect(parse({ model: 'zino', user: 'alice', messages: [user('hi')] }, { 'x-zino-channel': header }).channelId).toBe('kanal-ä');
    // Earlier turns with a channel: they are the history, never the stored one as well.
    expect(parse({ model: 'zino', user: 'alice', messages: [user('a'), user('b')] }).history).toEqual([{ role: 'user', content: 'a' }]);
  });

  it('reads stream, include_usage, sampling, verbose and max tokens; ignores what it does not use', () => {
    const job = parse(
      {
        model: 'zino',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'x' },
              { type: 'text', text: 'y' },
            ],
          },
        ],
        stream: true,
        stream_options: { include_usage: true },
        temperature: 0,
        top_p: 1,
        max_tokens: 9,
        tools: [],
        seed: 1,
        logit_bias: {},
      },
      { 'x-zino-verbose': 'true' },
    );
    expect(job).toMatchObject({ stream: true, includeUsage: true, temperature: 0, topP: 1, maxTokens: 9, verbose: true, prompt: 'x\ny' });
    expect(parse({ model: 'zino-verbose', messages: [user('x')], stream_options: { include_usage: true } })).toMatchObject({
      verbose: true,
      includeUsage: false,
    });
  });

  it('gives zino-direct every message as a chat API takes it, and needs no user message last', () => {
    const job = parse({
      model: 'zino-direct',
      messages: [user('q'), { role: 'tool', content: 'out', tool_call_id: 'x' }, { role: 'assistant', content: 'pre' }],
    });
    expect(job.messages).toEqual([
      { role: 'user', content: 'q' },
      { role: 'user', content: '[tool] out' },
      { role: 'assistant', content: 'pre' },
    ]);
  });

  it('refuses bad bodies with 400 and unknown models with 404', () => {
    expect(status(() => parse({ model: 'gpt-4', messages: [user('x')] }))).toBe(404);
    for (const body of [
      {},
      { model: 3, messages: [user('x')] },
      { model: 'zino' },
      { model: 'zino', messages: {} },
      { model: 'zino', messages: [5] },
      { model: 'zino', messages: [{ content: 'x' }] },
      { model: 'zino', messages: [{ role: 'user' }] },
      { model: 'zino', messages: [{ role: 'user', content: [{ type: 'image_url' }] }] },
      { model: 'zino', messages: [{ role: 'user', content: '   ' }] },
      { model: 'zino', messages: [user('x')], stream: 'yes' },
      { model: 'zino', messages: [user('x')], stream_options: [] },
      { model: 'zino', messages: [user('x')], top_p: 2 },
      { model: 'zino', messages: [user('x')], temperature: Number.NaN },
      { model: 'zino', messages: [user('x')], max_tokens: 0 },
      { model: 'zino', messages: [user('x')], n: 2 },
      { model: 'zino', messages: [user('x')], user: 5 },
      { model: 'zino', messages: [user('x')], user: 'x'.repeat(300) },
    ]) {
      expect(
        status(() => parse(body)),
        JSON.stringify(body),
      ).toBe(400);
    }
  });
});

describe('parseJsonObject', () => {
  it('takes a JSON object and refuses anything else with 400', () => {
    expect(parseJsonObject(Buffer.from('{"a":1}'))).toEqual({ a: 1 });
    for (const bytes of [Buffer.from(''), Buffer.from('[]'), Buffer.from('nul'), Buffer.from([0x7b, 0xff, 0x7d])]) {
      expect(() => parseJsonObject(bytes)).toThrow(HttpError);
    }
  });
});

describe('fromZinoError', () => {
  it('maps ZINO codes to statuses, hides internal details, and says plainly when ZINO is down', () => {
    expect(fromZinoError(new ZinoError('INVALID_REQUEST', 'too big'), 'daemon')).toMatchObject({ status: 400, message: 'too big' });
    expect(fromZinoError(new ZinoError('UPSTREAM_ERROR', 'LLM said 500'), 'daemon').status).toBe(502);
    expect(fromZinoError(new ZinoError('TIMEOUT', 't'), 'daemon').status).toBe(504);
    const down = fromZinoError(
      new ZinoError('UPSTREAM_UNAVAILABLE', 'cannot connect to the daemon at /run/zino/daemon.sock', { detail: { service: 'daemon' } }),
      'daemon',
    );
    expect(down).toMatchObject({ status: 503, code: 'service_unavailable' });
    expect(down.message).not.toContain('/run/zino');
    expect(fromZinoError(new ZinoError('INTERNAL', 'stack here'), 'daemon')).toMatchObject({ status: 500, message: 'internal error (see the ZINO logs)' });
    expect(fromZinoError(new Error('boom'), 'rtr').status).toBe(500);
  });
});

describe('parseListen', () => {
  it('takes loopback host:port and refuses anything else unless allowed', () => {
    expect(parseListen('127.0.0.1:8088', false)).toEqual({ host: '127.0.0.1', port: 8088 });
    expect(parseListen('localhost:0', false)).toEqual({ host: '127.0.0.1', port: 0 });
    expect(parseListen('[::1]:9', false)).toEqual({ host: '::1', port: 9 });
    expect(parseListen('127.8.9.10:1', false).host).toBe('127.8.9.10');
    for (const bad of ['0.0.0.0:8088', '[::]:8088', '192.168.1.2:80', '[::ffff:10.0.0.1]:80']) {
      expect(() => parseListen(bad, false), bad).toThrow(/allow_non_loopback/);
    }
    expect(parseListen('0.0.0.0:8088', true)).toEqual({ host: '0.0.0.0', port: 8088 });
    for (const bad of ['8088', 'example.com:80', '127.0.0.1:99999', '127.0.0.1:', '[127.0.0.1]:80', '::1:80'])
      expect(() => parseListen(bad, true), bad).toThrow(ConfigError);
    expect(isLoopback('::ffff:127.0.0.1')).toBe(true);
  });
});

describe('the token', () => {
  let dir: string;
  let cleanup: () => void;
  beforeEach(() => ({ dir, cleanup } = tempDir('ztok')));
  afterEach(() => cleanup());

  it('is created 0640 in a 0750 directory with 256 random bits on first start, then read back', async () => {
    const { log } = captureLogger();
    const file = path.join(dir, 'state', 'http.token');
    const token = await loadToken(file, log);
    expect(token).toMatch(/^zino-[\w-]{43}$/);
    expect(statSync(file).mode & 0o777).toBe(0o640);
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o750);
    expect(readFileSync(file, 'utf8')).toBe(`${token}\n`);
    expect(await loadToken(file, log)).toBe(token);
    expect(await loadToken(path.join(dir, 'other.token'), log)).not.toBe(token);
  });

  it("takes an operator's own token of 16 characters or more, refuses a shorter or empty one, and warns when others may read it", async () => {
    const { log, lines } = captureLogger();
    const file = path.join(dir, 'mine.token');
    writeFileSync(file, '  my-own-long-token-1234  \n', { mode: 0o644 });
    expect(await loadToken(file, log)).toBe('my-own-long-token-1234');
    expect(lines.find((l) => l.msg === 'the HTTP token file is readable by every user: chmod 0640 it')).toMatchObject({ level: 'warn' });
    for (const text of ['', 'short', 'two words here ok ok']) {
      writeFileSync(file, text);
      await expect(loadToken(file, log)).rejects.toBeInstanceOf(ConfigError);
    }
    mkdirSync(path.join(dir, 'adir'));
    await expect(loadToken(path.join(dir, 'adir'), log)).rejects.toBeInstanceOf(ConfigError);
  });

  it('is checked as "Bearer TOKEN" only', () => {
    const check = new TokenCheck('zino-secret-token-123');
    expect(check.matches('Bearer zino-secret-token-123')).toBe(true);
    expect(check.matches('bearer zino-secret-token-123')).toBe(true);
    for (const header of [
      undefined,
      '',
      'Bearer',
      'Bearer ',
      'zino-secret-token-123',
      'Basic zino-secret-token-123',
      'Bearer zino-secret-token-1234',
      'Bearer zino-secret-token-12',
    ]) {
      expect(check.matches(header), String(header)).toBe(false);
    }
    check.replace('another-token-of-length');
    expect(check.matches('Bearer zino-secret-token-123')).toBe(false);
    expect(check.matches('Bearer another-token-of-length')).toBe(true);
  });
});
