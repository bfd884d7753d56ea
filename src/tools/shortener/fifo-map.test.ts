import { describe, expect, it } from 'vitest';
import { FifoMap } from './fifo-map.js';
import { growth, GROWTH_TIMEOUT_MS, MAX_GROWTH } from '../../../test/growth.js';

describe('FifoMap (the redirect cache and the unknown-code memory, issue 32)', () => {
  it('keeps at most max entries, the oldest inserted out first; setting a key again keeps its place', () => {
    const m = new FifoMap<number>(3);
    for (const [k, v] of [['a', 1], ['b', 2], ['c', 3], ['a', 10]] as const) m.set(k, v);
    expect(m.size).toBe(3);
    m.set('d', 4);
    expect([m.get('a'), m.get('b'), m.get('c'), m.get('d')]).toStrictEqual([undefined, 2, 3, 4]);
    // A deleted key leaves room: nothing else goes out for the next one.
    m.delete('c');
    m.set('e', 5);
    expect([m.has('b'), m.has('d'), m.has('e'), m.size]).toStrictEqual([true, true, true, 3]);
    m.set('f', 6);
    expect([m.has('b'), m.has('d'), m.has('e'), m.has('f')]).toStrictEqual([false, true, true, true]);
    m.clear();
    expect(m.size).toBe(0);
    m.set('g', 7);
    expect(m.get('g')).toBe(7);
    const none = new FifoMap<number>(0);
    none.set('x', 1);
    expect(none.size).toBe(0);
  });

  it('stays bounded and correct under churn with deletes (its queue compacts)', () => {
    const m = new FifoMap<number>(1000);
    for (let i = 0; i < 50_000; i++) {
      m.set(`k${i}`, i);
      if (i % 3 === 0) m.delete(`k${i - 500}`);
    }
    expect(m.size).toBeLessThanOrEqual(1000);
    expect(m.get('k49999')).toBe(49_999);
    expect(m.get('k40000')).toBeUndefined();
  });

  it(
    'an eviction costs the same at any size (a Map used as a queue walked its deleted entries: quadratic)',
    async () => {
      const run = (n: number) => {
        const m = new FifoMap<string>(n);
        for (let i = 0; i < 2 * n; i++) m.set(`code${i}`, 'https://example.com/x');
        expect(m.size).toBe(n);
        expect(m.get(`code${2 * n - 1}`)).toBe('https://example.com/x');
        expect(m.has(`code${n - 1}`)).toBe(false);
      };
      // At most 4n = 160k entries: past a few hundred thousand, the GC of the live map alone makes
      // 4n cost 6–8 × n (measured under load), too near the limit for a linear structure.
      const g = await growth(run, { from: 20_000, max: 160_000 });
      expect(g.ratio, g.text).toBeLessThan(MAX_GROWTH);
    },
    GROWTH_TIMEOUT_MS,
  );
});
