/** The "waiting for the model…" line (issue 15, point 5), with a fake clock: what it writes, when, and never off a terminal. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WaitingIndicator } from '../../src/cli/waiting.js';

function terminal(isTTY = true): { isTTY: boolean; written: string[]; write: (t: string) => boolean } {
  const written: string[] = [];
  return { isTTY, written, write: (t: string) => written.push(t) > 0 };
}

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('WaitingIndicator', () => {
  it('appears after the delay with the seconds of silence, counts up, and is erased by the next output', () => {
    const out = terminal();
    const indicator = new WaitingIndicator(out, { now: () => Date.now() });
    indicator.start();
    vi.advanceTimersByTime(1499);
    expect(out.written).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(out.written).toEqual(['\x1b7 waiting for the model… 1 s']);
    vi.advanceTimersByTime(1000);
    expect(out.written.at(-1)).toBe('\x1b8\x1b[K waiting for the model… 2 s');
    indicator.activity('tool');
    expect(out.written.at(-1)).toBe('\x1b8\x1b[K');
    vi.advanceTimersByTime(1500);
    expect(out.written.at(-1)).toBe('\x1b7 waiting for the tool to finish… 1 s');
    indicator.stop();
    expect(out.written.at(-1)).toBe('\x1b8\x1b[K');
    vi.advanceTimersByTime(10_000);
    expect(out.written.at(-1)).toBe('\x1b8\x1b[K');
  });

  it('writes nothing when output keeps coming', () => {
    const out = terminal();
    const indicator = new WaitingIndicator(out);
    indicator.start();
    for (let i = 0; i < 10; i++) {
      vi.advanceTimersByTime(1000);
      indicator.activity();
    }
    indicator.stop();
    expect(out.written).toEqual([]);
  });

  it('never writes to something that is not a terminal, nor when disabled', () => {
    for (const [out, enabled] of [
      [terminal(false), true],
      [terminal(true), false],
    ] as const) {
      const indicator = new WaitingIndicator(out, { enabled });
      indicator.start();
      vi.advanceTimersByTime(60_000);
      indicator.stop();
      expect(out.written).toEqual([]);
    }
  });
});
