/** What `zino ask` and `zino chat` tell the user about a degraded answer (issue 15, point 6). */
import { describe, expect, it } from 'vitest';
import { degradedReport } from '../../src/cli/degraded.js';

describe('degradedReport', () => {
  it('says nothing about a complete answer', () => {
    expect(degradedReport({ type: 'done', full_text: 'fine' })).toEqual({ lines: [], incomplete: false });
  });

  it('calls an answer stopped by the iteration limit cut short', () => {
    expect(degradedReport({ type: 'response', content: '', degraded: ['max_iterations'] }, 5)).toEqual({
      lines: ['the answer was cut short: the model was still calling tools when the iteration limit (5) was reached ([agr] max_iterations).'],
      incomplete: true,
    });
  });

  it('calls an answer without tools incomplete only when it holds a tool call that could not run', () => {
    const withCall = degradedReport({ type: 'done', full_text: 'Let me look.<tool_call>{}</tool_call>', degraded: ['tools'] });
    expect(withCall.incomplete).toBe(true);
    expect(withCall.lines).toEqual(['answered without tools: agr could not be reached, so the tool calls in this answer were not run and it is incomplete.']);
    const plain = degradedReport({ type: 'done', full_text: 'Paris.', degraded: ['tools'] });
    expect(plain).toEqual({
      lines: ['answered without tools: agr could not be reached, so the model answered directly and could run nothing.'],
      incomplete: false,
    });
  });

  it('names every missing part of the prompt in one line', () => {
    expect(degradedReport({ type: 'done', full_text: 'x', degraded: ['system_prompt', 'hard_memories', 'history'] })).toEqual({
      lines: [
        "answered without the system prompt (sys did not answer), the stored memories (mem did not answer ctx), the channel's history (mem did not answer ctx).",
      ],
      incomplete: false,
    });
  });

  it('ignores what it does not know (a frame is another process data)', () => {
    expect(degradedReport({ type: 'done', full_text: 'x', degraded: 'tools' as never })).toEqual({ lines: [], incomplete: false });
  });
});
