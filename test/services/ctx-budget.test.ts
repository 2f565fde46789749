import { describe, expect, it } from 'vitest';
import { estimateTokens, fitBudget, flatten, type ContextParts } from '../../src/services/ctx/budget.js';

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
