/**
 * Crashes: SIGKILL each service in turn in the middle of a streamed, tool-using
 * request. The client always gets a terminal frame (or, when the daemon itself dies,
 * its connection closes): the request never hangs. When it ends with `done`, the
 * exchange is in the history, or (mem was the one killed and did not come back within
 * the daemon's bound) the daemon logged that it was not stored. With agr dead, new
 * requests are answered by the rtr fallback; under `zino up` the service comes back
 * and the next request succeeds. How long each step took is recorded for
 * docs/reliability.md, not asserted: it depends on the machine's load.
 */
import { describe, expect, it } from 'vitest';
import { request, stream, type ChatMessage, type Frame, type ServiceName } from '../../src/runtime/index.js';
import { waitFor } from '../helpers/util.js';
import { record, useFaultSuite } from './harness.js';

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
/** A generous bound for a service to come back: met in about 0.5 s on a quiet machine. */
const BACK_WITHIN_MS = 30_000;

const fs = useFaultSuite('zcrash');

describe.each((['daemon', 'rtr', 'agr', 'sys', 'exc', 'mem', 'ctx'] as ServiceName[]).map((s) => [s]))('SIGKILL of %s mid-request', (service) => {
  it('ends the request with a terminal frame, keeps the store promise, and the service comes back', async () => {
    fs.script({
      rules: [
        { role: 'user', match: 'crash test', chunks: ['Starting. ', TOOL, ' waiting.'], delayMs: 20 },
        { role: 'assistant', match: '</tool_response>', chunks: ['Finished', ' after', ' the', ' tool.'], delayMs: 30 },
        { reply: 'plain answer' },
      ],
    });
    const channel = `crash-${service}`;
    let killedAt = 0;
    let terminal: Frame | undefined;
    let failure: string | undefined;
    try {
      for await (const frame of stream(fs.socket('daemon'), { message: 'crash test', stream: true, channel_id: channel })) {
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

    if (service === 'agr') {
      // While agr is down, new requests are answered straight through rtr.
      expect(await request(fs.socket('daemon'), { message: 'are you there?' })).toMatchObject({ type: 'response', content: 'plain answer', via: 'rtr' });
    }
    const backAfter = await fs.waitUntilBack(service, killedAt, BACK_WITHIN_MS);
    record(`crash.${service}.restart_ms`, backAfter, 'ms');

    if (terminal?.type === 'done') {
      // The store promise: a client that saw `done` finds the exchange in the history,
      // unless mem stayed unreachable past the daemon's bound, which the daemon logs.
      const history = (await request(fs.socket('mem'), { type: 'get_history', channel_id: channel })).messages as ChatMessage[];
      const stored =
        history.some((m) => m.role === 'user' && m.content === 'crash test') &&
        history.some((m) => m.role === 'assistant' && m.content === terminal?.full_text);
      if (service === 'mem' && !stored) {
        await waitFor(
          () => fs.suite.logs.some((l) => l.service === 'daemon' && l.msg === 'exchange not stored: mem failed' && l.channel === channel),
          'the daemon to log the exchange it did not store',
          30_000,
        );
      } else {
        expect(stored, `the exchange is in ${channel}'s history`).toBe(true);
      }
      record(`crash.${service}.stored`, stored ? 'yes' : 'no (logged)');
    }
    expect(await request(fs.socket('daemon'), { message: 'after the crash' }, { timeoutMs: 30_000 })).toMatchObject({
      type: 'response',
      content: 'plain answer',
      via: 'agr',
    });
  });
});
