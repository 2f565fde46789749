/**
 * Degraded answers say so (issue 15, point 6): an answer cut short by the
 * iteration limit, made without tools (agr down: rtr answered), or built without
 * the system prompt, the context or mem's parts of it carries `degraded` in its
 * terminal frame, and the daemon's "answered" log line lists the same.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { request, type Frame, type ServiceName } from '../../src/runtime/index.js';
import type { ConfigOverrides, ServiceGroup } from '../../src/testing/suite.js';
import { collectFrames } from '../helpers/frames.js';
import { startWithMock, useMockLlm } from '../helpers/mock.js';
import { waitFor } from '../helpers/util.js';

const llm = useMockLlm();
const groups: { group: ServiceGroup; cleanup: () => void }[] = [];

afterEach(async () => {
  for (const { group, cleanup } of groups.splice(0)) {
    for (const exit of Object.values(await group.stop())) expect(exit).toEqual({ code: 0, signal: null });
    cleanup();
  }
});

async function suite(names: ServiceName[], overrides: ConfigOverrides = {}): Promise<ServiceGroup> {
  const started = await startWithMock(llm.mock, names, 'zdeg', overrides);
  groups.push(started);
  return started.group;
}

const ALL: ServiceName[] = ['mem', 'sys', 'ctx', 'rtr', 'exc', 'agr', 'daemon'];
const TOOL = 'Looking.<tool_call>{"name":"execute_bash","arguments":{"code":"echo again"}}</tool_call>';

/** The daemon's "answered" log line once it is there (it is written after the reply). */
const answered = (group: ServiceGroup): Promise<Record<string, unknown>> =>
  waitFor(() => group.get('daemon').logs.find((l) => l.msg === 'answered'), 'the "answered" log line');

describe('degraded answers', () => {
  it('a complete answer carries no degraded field', async () => {
    llm.script({ rules: [{ reply: 'all good' }] });
    const group = await suite(ALL);
    const reply = await request(group.get('daemon').socket, { message: 'hi', channel_id: 'ok' });
    expect(reply).toEqual(expect.objectContaining({ content: 'all good' }));
    expect(reply).not.toHaveProperty('degraded');
    expect(await answered(group)).toMatchObject({ degraded: [] });
  });

  it('cut by the iteration limit: degraded ["max_iterations"], streamed and collected', async () => {
    llm.script({ rules: [{ reply: TOOL }] });
    const group = await suite(ALL, { agr: { max_iterations: 2 } });
    const done = (await collectFrames(group.get('daemon').socket, { message: 'loop', stream: true })).at(-1);
    expect(done).toMatchObject({ type: 'done', iterations: 2, degraded: ['max_iterations'] });
    expect(done).not.toHaveProperty('limit_reached');
    expect(await request(group.get('daemon').socket, { message: 'loop' })).toMatchObject({ type: 'response', degraded: ['max_iterations'] });
    expect(await answered(group)).toMatchObject({ degraded: ['max_iterations'] });
  });

  it('answered without tools when agr is down: degraded ["tools"], and the log says so', async () => {
    llm.script({ rules: [{ reply: TOOL }] });
    const group = await suite(['mem', 'sys', 'ctx', 'rtr', 'daemon']);
    expect(await request(group.get('daemon').socket, { message: 'what is my IP?' })).toMatchObject({ via: 'rtr', degraded: ['tools'] });
    expect(await answered(group)).toMatchObject({ via: 'rtr', degraded: ['tools'] });
  });

  it('built without mem: degraded names the memories and the history that ctx could not get', async () => {
    llm.script({ rules: [{ reply: 'forgetful' }] });
    // A short bound: the daemon retries storing the exchange while mem is away, up to it.
    const group = await suite(['sys', 'ctx', 'rtr', 'exc', 'agr', 'daemon'], { daemon: { dependency_timeout_ms: 1000 } });
    const reply: Frame = await request(group.get('daemon').socket, { message: 'remember me?', channel_id: 'nomem' });
    expect(reply).toMatchObject({ content: 'forgetful', degraded: ['hard_memories', 'history'] });
  });

  it('built without sys and ctx: degraded names them', async () => {
    llm.script({ rules: [{ reply: 'bare' }] });
    const group = await suite(['rtr', 'exc', 'agr', 'daemon']);
    expect(await request(group.get('daemon').socket, { message: 'hi' })).toMatchObject({ degraded: ['system_prompt', 'context'] });
  });
});
