import { describe, expect, it, vi } from 'vitest';
import { createLogger } from '../log.js';
import { createMemoryStore } from '../state/memory.js';
import { RATE_DAYS, storeDailyCounts, type AuthDeps } from './auth.js';
import { DAY_MS, utcDayOf } from './limiter.js';

const turn = () => new Promise((r) => setImmediate(r));

describe('storeDailyCounts', () => {
  it('hands the calls of one turn to the store as one increment per subject, and counts them all', async () => {
    const store = createMemoryStore();
    const coll = store.collection(RATE_DAYS);
    const spy = vi.spyOn(coll, 'increment');
    const counts = storeDailyCounts({ store, log: createLogger('silent') } as unknown as AuthDeps);
    for (let i = 0; i < 50; i++) counts.add('ip:a', '2026-11-27');
    for (let i = 0; i < 3; i++) counts.add('key:b', '2026-11-27');
    // Not handed over yet, but part of the day for a subject loaded in this turn.
    expect(await counts.load('ip:a', '2026-11-27')).toBe(50);
    await turn();
    await turn();
    expect(spy.mock.calls.map((c) => [c[0], c[2]]).sort()).toStrictEqual([
      ['ip:a|2026-11-27', 50],
      ['key:b|2026-11-27', 3],
    ]);
    expect((await coll.get('ip:a|2026-11-27'))?.count).toBe(50);
    // The next turn's calls add to what is stored.
    counts.add('ip:a', '2026-11-27');
    await turn();
    await turn();
    expect(await counts.load('ip:a', '2026-11-27')).toBe(51);
    expect(spy).toHaveBeenCalledTimes(3);
  });
});

describe('utcDayOf', () => {
  it('formats the UTC day of any instant, across day boundaries and back', () => {
    const midnight = Date.UTC(2026, 10, 27);
    const cases: Array<[number, string]> = [
      [midnight - 1, '2026-11-26'],
      [midnight, '2026-11-27'],
      [midnight + DAY_MS - 1, '2026-11-27'],
      [midnight + DAY_MS, '2026-11-28'],
      [midnight - 1, '2026-11-26'],
      [0, '1970-01-01'],
      [Date.UTC(2024, 1, 29, 23, 59, 59, 999), '2024-02-29'],
      [midnight + 5, '2026-11-27'],
    ];
    for (const [t, day] of cases) expect(utcDayOf(t), String(t)).toBe(day);
    expect(() => utcDayOf(Number.NaN)).toThrow(RangeError);
  });
});
