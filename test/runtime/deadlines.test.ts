import { afterEach, describe, expect, it, vi } from 'vitest';
import { Deadlines, clearDeadline, startDeadline } from '../../src/runtime/transport/deadlines.js';
import { waitFor } from '../helpers/util.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('Deadlines', () => {
  it('fires each bound once, in the order they were added, and not one that was cleared', async () => {
    const deadlines = new Deadlines(5);
    const fired: string[] = [];
    deadlines.add(() => fired.push('a'));
    const b = deadlines.add(() => fired.push('b'));
    deadlines.add(() => fired.push('c'));
    deadlines.clear(b);
    await waitFor(() => fired.length === 2, 'two bounds to fire');
    expect(fired).toEqual(['a', 'c']);
    expect(deadlines.size).toBe(0);
  });

  it('serves many pending bounds of one length with one timer, armed again only when it fires', async () => {
    // Each timer's callback is counted when it runs, so that the test needs no assumption about how long the
    // loop below takes on a loaded machine (how many sweeps find a bound not yet due depends on it).
    const realSetTimeout = globalThis.setTimeout;
    let sweep: unknown;
    let sweeps = 0;
    const timers = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) =>
      realSetTimeout(() => {
        if (callback === sweep) sweeps++;
        callback(...args);
      }, ms)) as unknown as typeof setTimeout);
    const deadlines = new Deadlines(20);
    const fired: number[] = [];
    for (let i = 0; i < 100; i++) {
      const deadline = deadlines.add(() => fired.push(i));
      // What a connection does when its request arrives in time: most bounds are cleared.
      if (i % 10 !== 0) deadlines.clear(deadline);
    }
    expect(timers).toHaveBeenCalledTimes(1);
    sweep = timers.mock.calls[0]?.[0];
    await waitFor(() => fired.length === 10, 'the ten bounds left to fire');
    expect(fired).toEqual([0, 10, 20, 30, 40, 50, 60, 70, 80, 90]);
    // Every arming of the timer has fired, once, and none is pending (waitFor's own timers aside): it was armed
    // again only by a sweep that found a bound not yet due, and not once none was left.
    expect(timers.mock.calls.filter(([callback]) => callback === sweep).length).toBe(sweeps);
    expect(sweeps).toBeGreaterThanOrEqual(1);
  });

  it('re-arms for a bound added after the timer was armed, and fires it after its own length', async () => {
    const deadlines = new Deadlines(30);
    const fired: string[] = [];
    deadlines.add(() => fired.push('first'));
    await waitFor(() => fired.length === 1, 'the first bound to fire');
    const addedAt = performance.now();
    let firedAt = 0;
    deadlines.add(() => {
      firedAt = performance.now();
      fired.push('second');
    });
    await waitFor(() => fired.length === 2, 'the second bound to fire');
    // Never early: a bound fires at the earliest its length after it was added (1 ms for timer rounding).
    expect(firedAt - addedAt).toBeGreaterThanOrEqual(29);
  });

  it('does not keep the process alive by itself', () => {
    const before = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const deadline = new Deadlines(60_000).add(() => undefined);
    expect(process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length).toBe(before);
    clearDeadline(deadline);
  });
});

describe('startDeadline', () => {
  it('shares one Deadlines per length, and gives a length past the shared ones its own that still fires', async () => {
    const fired: number[] = [];
    const lengths = [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13];
    const first = startDeadline(2, () => fired.push(2));
    expect(startDeadline(2, () => fired.push(2)).owner).toBe(first.owner);
    for (const ms of lengths) startDeadline(ms, () => fired.push(ms));
    const late = startDeadline(14, () => fired.push(14));
    expect(startDeadline(14, () => undefined).owner).not.toBe(late.owner);
    await waitFor(() => fired.length === lengths.length + 3, 'every bound to fire');
    expect(fired.filter((ms) => ms === 14)).toEqual([14]);
    clearDeadline(undefined);
  });
});
