import { describe, expect, it } from 'vitest';
import { estimateTokens, fitBudget, fitBytes, flatten, type ContextParts } from '../../src/services/ctx/budget.js';

const msg = (content: string) => ({ role: 'user', content });
const chars = (n: number, c = 'x') => msg(c.repeat(n));

function parts(): ContextParts {
  return {
    examples: [chars(8, 'e')],
    hard: [
      { messages: [chars(8, 'a')], score: 0.9 },
      { messages: [chars(8, 'b')], score: 0.5 },
      { messages: [chars(8, 'c')], score: 0.5 },
    ],
    history: [chars(4, '1'), chars(4, '2'), chars(4, '3')],
  };
}

describe('ctx token budget', () => {
  it('estimates tokens as ceil(characters / 4)', () => {
    expect([0, 1, 4, 5, 8].map(estimateTokens)).toEqual([0, 1, 1, 2, 2]);
  });

  it('returns everything when off (0) or within budget', () => {
    expect(fitBudget(parts(), 0)).toMatchObject({ droppedHistory: 0, droppedHard: 0, tokens: 11 });
    expect(fitBudget(parts(), 11).parts).toEqual(parts());
  });

  it('drops oldest history first, then the lowest score (the later of equal scores), keeping examples', () => {
    expect(flatten(fitBudget(parts(), 9).parts).map((m) => m.content[0])).toEqual(['e', 'a', 'b', 'c', '3']);
    const t = fitBudget(parts(), 7);
    expect(flatten(t.parts).map((m) => m.content[0])).toEqual(['e', 'a', 'b']);
    expect(t).toMatchObject({ droppedHistory: 3, droppedHard: 1, tokens: 6 });
    expect(flatten(fitBudget(parts(), 1).parts).map((m) => m.content[0])).toEqual(['e']);
  });
});

describe('ctx byte bound', () => {
  const size = (m: { role: string; content: string }): number => JSON.stringify(m).length + 1;
  it('keeps everything that fits, then drops oldest history, then the lowest-scored hard memory', () => {
    const all = fitBudget(parts(), 0);
    const total = flatten(all.parts).reduce((n, m) => n + size(m), 0);
    expect(fitBytes(all, total)).toBe(all);
    const noHistory = fitBytes(all, total - 3 * size(chars(4)));
    expect(flatten(noHistory.parts).map((m) => m.content[0])).toEqual(['e', 'a', 'b', 'c']);
    expect(noHistory).toMatchObject({ droppedHistory: 3, droppedHard: 0 });
    const lessHard = fitBytes(all, total - 3 * size(chars(4)) - 1);
    expect(flatten(lessHard.parts).map((m) => m.content[0])).toEqual(['e', 'a', 'b']);
    expect(lessHard).toMatchObject({ droppedHistory: 3, droppedHard: 1, tokens: 6 });
    expect(flatten(fitBytes(all, 1).parts).map((m) => m.content[0])).toEqual(['e']);
  });

  it('measures each list of examples as it is: the same list again, or a new list after a reload', () => {
    // The examples are sized once per list (they are the same list for every request until a reload).
    const examples = [msg('print("a")\nprint("b")')];
    const context = (list: ContextParts['examples']): ContextParts => ({ examples: list, hard: [], history: [chars(4, '1')] });
    const bound = size(examples[0] as ReturnType<typeof msg>) + size(chars(4));
    for (let i = 0; i < 2; i++) expect(fitBytes(fitBudget(context(examples), 0), bound, 'once')).toMatchObject({ droppedHistory: 0 });
    // A reload's longer examples leave no room for the history under the same bound.
    const reloaded = [msg('print("a")\nprint("b")\nprint("c")')];
    expect(fitBytes(fitBudget(context(reloaded), 0), bound, 'once')).toMatchObject({ droppedHistory: 1 });
    expect(fitBytes(fitBudget(context(examples), 0), bound, 'once')).toMatchObject({ droppedHistory: 0 });
  });

  it('sizes the examples on every call unless asked to remember them, so a list that changed is measured as it is', () => {
    const list = [msg('short')];
    const parts = (): ContextParts => ({ examples: list, hard: [], history: [chars(4, '1')] });
    const bound = size(list[0] as ReturnType<typeof msg>) + size(chars(4));
    expect(fitBytes(fitBudget(parts(), 0), bound)).toMatchObject({ droppedHistory: 0 });
    list[0] = msg('print("a")\nprint("b")\nprint("c")');
    expect(fitBytes(fitBudget(parts(), 0), bound)).toMatchObject({ droppedHistory: 1 });
  });
});
