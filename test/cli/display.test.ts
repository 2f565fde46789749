import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { AnswerDisplay, type AnswerFrame } from '../../src/cli/display.js';

function sink(): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _e, done) {
      text += chunk.toString();
      done();
    },
  });
  return { stream, text: () => text };
}

function show(pieces: string[], raw = false): { out: string; err: string } {
  const out = sink();
  const err = sink();
  const display = new AnswerDisplay({ out: out.stream, err: err.stream }, raw);
  for (const delta of pieces) display.frame({ type: 'chunk', delta });
  display.finish();
  return { out: out.text(), err: err.text() };
}

const ANSWER =
  'Checking.\n<tool_call>{"name":"execute_bash","arguments":{"code":"df"}}</tool_call>\n<tool_response>\nFilesystem\n</tool_response>\n\nDone checking.';

describe('AnswerDisplay', () => {
  it('hides tool blocks and collapses the blank lines they leave', () => {
    expect(show([ANSWER]).out).toBe('Checking.\n\nDone checking.\n');
  });

  it('prints the same text however the answer is chunked', () => {
    const whole = show([ANSWER]).out;
    for (let i = 0; i <= ANSWER.length; i++) {
      for (let j = i; j <= ANSWER.length; j += 5) {
        expect(show([ANSWER.slice(0, i), ANSWER.slice(i, j), ANSWER.slice(j)]).out, `cut at ${i}/${j}`).toBe(whole);
      }
    }
  });

  it('shows the blocks with --raw and ends on a new line', () => {
    expect(show(['a <tool_call>x</tool_call>']).out).toBe('a \n');
    expect(show(['a <tool_call>x</tool_call>'], true).out).toBe('a <tool_call>x</tool_call>\n');
  });

  it('writes tool activity to stderr only', () => {
    const out = sink();
    const err = sink();
    const display = new AnswerDisplay({ out: out.stream, err: err.stream }, false);
    display.frame({ type: 'tool_call', kind: 'tool', name: 'execute_bash', code: 'uptime\nwho' });
    display.frame({ type: 'tool_result', exit_code: 0, output: ' 10:00 up 3 days' });
    display.frame({ type: 'tool_result', exit_code: 2, output: '' });
    display.finish();
    expect(out.text()).toBe('');
    expect(err.text()).toBe('[tool] execute_bash: uptime …\n[tool] ok:  10:00 up 3 days\n[tool] exit 2: \n');
  });

  it('shows frames with missing fields without "undefined" and without throwing', () => {
    // Regression: frames are another process's data; a chunk without delta printed "undefined".
    const out = sink();
    const err = sink();
    const display = new AnswerDisplay({ out: out.stream, err: err.stream }, false);
    display.frame(JSON.parse('{"type":"chunk"}') as AnswerFrame);
    display.frame({ type: 'chunk', delta: 'ok' });
    display.frame(JSON.parse('{"type":"tool_call","kind":"tool","name":"x"}') as AnswerFrame);
    display.finish();
    expect(out.text()).toBe('ok\n');
    expect(err.text()).toBe('[tool] x: \n');
  });
});
