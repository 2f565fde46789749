/**
 * Crashes: SIGKILL each service in turn in the middle of a streamed, tool-using
 * request. The client gets a terminal frame (or, when the daemon itself dies, its
 * connection closes) within 1 s and never hangs; with agr dead, new requests are
 * answered by the rtr fallback; under `zino up` the service is back within 2 s and
 * the next request succeeds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, stream, type Frame, type ServiceName } from '../../src/runtime/index.js';
import { record, startFaultSuite, type FaultSuite } from './harness.js';

const TOOL = '<tool_call>{"name":"execute_bash","arguments":{"code":"sleep 0.2; echo slept"}}</tool_call>';
/** Where each service is killed: at the tool call (most), or while rtr streams the second reply. */
const TRIGGER: Record<ServiceName, string> = {
  daemon: '<tool_call>',
  agr: '<tool_call>',
  exc: '<tool_call>',
  sys: '<tool_call>',
  ctx: '<tool_call>',
  mem: '<tool_call>',
  rtr: 'Finished',
};

let fs: FaultSuite;
beforeAll(async () => {
  fs = await startFaultSuite('zcrash');
});
afterAll(async () => {
  await fs.close();
});

describe.each((['daemon', 'rtr', 'agr', 'sys', 'exc', 'mem', 'ctx'] as ServiceName[]).map((s) => [s]))('SIGKILL of %s mid-request', (service) => {
  it('ends the request within 1 s, and the service is back within 2 s', async () => {
    fs.script({
      rules: [
        { role: 'user', match: 'crash test', chunks: ['Starting. ', TOOL, ' waiting.'], delayMs: 20 },
        { role: 'assistant', match: '</tool_response>', chunks: ['Finished', ' after', ' the', ' tool.'], delayMs: 30 },
        { reply: 'plain answer' },
      ],
    });
    let killedAt = 0;
    let terminal: Frame | undefined;
    let failure: string | undefined;
    try {
      for await (const frame of stream(fs.socket('daemon'), { message: 'crash test', stream: true, channel_id: `crash-${service}` })) {
        if (killedAt === 0 && frame.type === 'chunk' && String(frame.delta).includes(TRIGGER[service])) {
          process.kill(fs.pid(service), 'SIGKILL');
          killedAt = Date.now();
        }
        if (frame.type !== 'chunk') terminal = frame;
      }
    } catch (err) {
      failure = (err as Error).message;
    }
    const toTerminal = Date.now() - killedAt;
    expect(killedAt).toBeGreaterThan(0);
    // Either a terminal frame (done or error), or — the daemon itself died — the connection closed.
    if (service === 'daemon') expect(failure).toMatch(/closed the connection/);
    else expect(terminal?.type === 'done' || terminal?.type === 'error').toBe(true);
    record(`crash.${service}.terminal_ms`, toTerminal, 'ms');
    record(`crash.${service}.terminal`, typeof terminal?.type === 'string' ? terminal.type : 'connection closed');
    expect(toTerminal).toBeLessThan(1000);

    if (service === 'agr') {
      // While agr is down, new requests are answered straight through rtr.
      expect(await request(fs.socket('daemon'), { message: 'are you there?' })).toMatchObject({ type: 'response', content: 'plain answer', via: 'rtr' });
    }
    const backAfter = await fs.waitUntilBack(service, killedAt);
    record(`crash.${service}.restart_ms`, backAfter, 'ms');
    expect(backAfter).toBeLessThan(2000);
    expect(await request(fs.socket('daemon'), { message: 'after the crash' }, { timeoutMs: 10_000 })).toMatchObject({
      type: 'response',
      content: 'plain answer',
      via: 'agr',
    });
  });
});
