import { describe, expect, it } from 'vitest';
import { demoReply, tokenize, DemoBackend } from '../../src/services/rtr/demo/model.js';
import { findIntent } from '../../src/services/rtr/demo/intents.js';

const user = (content: string) => [{ role: 'user', content }];

function toolCall(text: string): unknown {
  const json = /<tool_call>\n(.*)\n<\/tool_call>/.exec(text)?.[1];
  return json === undefined ? undefined : JSON.parse(json);
}

describe('demo model', () => {
  it.each([
    ['How much disk space is free?', 'df -h'],
    ['how much RAM is used', 'free -h'],
    ["what's the uptime?", 'uptime'],
    ['which processes are running?', 'ps -eo'],
    ['what kernel is this?', 'uname'],
    ['list the files in /etc/ssh please', "ls -la -- '/etc/ssh'"],
    ['please run `echo hello` for me', 'echo hello'],
  ])('answers %j with a tool call running %j', (question, command) => {
    const call = toolCall(demoReply(user(question))) as { name: string; arguments: { code: string } };
    expect(call.name).toBe('execute_bash');
    expect(call.arguments.code).toContain(command);
  });

  it('asks for the host, with a reason, to create a file (the one intent that changes the host)', () => {
    expect(toolCall(demoReply(user('create a marker file on the host')))).toEqual({
      name: 'execute_bash',
      arguments: {
        code: "touch -- '/tmp/zino-demo-marker' && ls -l -- '/tmp/zino-demo-marker'",
        host: true,
        reason: 'create the file you asked for; the sandbox cannot change anything on the host',
      },
    });
    expect(toolCall(demoReply(user('please touch the file /srv/flag for me')))).toMatchObject({
      arguments: { code: "touch -- '/srv/flag' && ls -l -- '/srv/flag'", host: true },
    });
    // Looking stays sandboxed.
    expect(toolCall(demoReply(user('list the files in /etc')))).toEqual({ name: 'execute_bash', arguments: { code: "ls -la -- '/etc'" } });
  });

  it('says a refused run was not run', () => {
    const augmented = '<tool_response>\nerror: the operator denied this (no reason given). It was not run.\n</tool_response>';
    const reply = demoReply([{ role: 'assistant', content: augmented }]);
    expect(reply).toContain('It was not run: the operator denied this (no reason given).');
    expect(reply).not.toContain('It ran successfully');
  });

  it('explains itself and how to configure a real endpoint otherwise', () => {
    const reply = demoReply(user('write me a poem'));
    expect(toolCall(reply)).toBeUndefined();
    expect(reply).toContain("ZINO's built-in demo model");
    for (const endpoint of ['api.openai.com', 'openrouter.ai', '11434', '8080', '8000', 'LLM_API_KEY']) expect(reply).toContain(endpoint);
  });

  it('summarises the output after a tool response', () => {
    const augmented = 'Let me check.\n<tool_call>\n{}\n</tool_call>\n<tool_response>\nFilesystem Size\n/dev/sda1 100G\n</tool_response>\n';
    const reply = demoReply([...user('disk?'), { role: 'assistant', content: augmented }]);
    expect(reply).toContain('It ran successfully. It printed 2 lines:');
    expect(reply).toContain('    /dev/sda1 100G');
    expect(toolCall(reply)).toBeUndefined();
  });

  it('reports a failed command after a tool response', () => {
    const augmented = '<tool_response>\nboom\n[stderr]\nno such file\n[exit code: 2]\n</tool_response>';
    expect(demoReply([{ role: 'assistant', content: augmented }])).toContain('It failed with exit code 2.');
  });

  it('plays the interpreter and fabricator steps of a skill', () => {
    const plan = demoReply([{ role: 'system', content: "You are the interpreter step of ZINO's bash skill." }, ...user('check memory')]);
    expect(plan).toBe('1. Run `free -h` to show the memory usage.\n2. Print its output unchanged.');
    const bash = demoReply([{ role: 'system', content: 'fabricator of the bash skill' }, ...user('check memory [KCR] 1. Run free')]);
    expect(bash).toBe('free -h');
    const python = demoReply([{ role: 'system', content: "fabricator step of ZINO's python skill" }, ...user('check memory [KCR] plan')]);
    expect(python).toContain('subprocess.run("free -h", shell=True');
    expect(demoReply([{ role: 'system', content: 'fabricator' }, ...user('compose a sonnet [KCR] plan')])).toBe(
      "echo 'The demo model cannot write code for: compose a sonnet'",
    );
  });

  it('streams word-sized pieces that add up to the reply, then usage', async () => {
    const backend = new DemoBackend(0);
    const pieces: string[] = [];
    let usage: unknown;
    for await (const event of backend.stream({ messages: user('uptime?'), temperature: 1, top_p: 1 }, new AbortController().signal)) {
      if ('delta' in event) pieces.push(event.delta);
      else usage = event.usage;
    }
    expect(pieces.length).toBeGreaterThan(5);
    expect(pieces.join('')).toBe(demoReply(user('uptime?')));
    expect(usage).toMatchObject({ prompt_tokens: 2 });
  });

  it('stops streaming when aborted', async () => {
    const controller = new AbortController();
    const backend = new DemoBackend(5);
    const iterator = backend.stream({ messages: user('uptime?'), temperature: 1, top_p: 1 }, controller.signal)[Symbol.asyncIterator]();
    await iterator.next();
    controller.abort();
    await expect(iterator.next()).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('tokenize keeps every character', () => {
    const text = '  hello  world\n<tool_call>\n{"a": 1}\n';
    expect(tokenize(text).join('')).toBe(text);
  });

  it('finds no intent in small talk', () => {
    expect(findIntent('hello there')).toBeUndefined();
  });
});
