import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { idOfKey, indexKey, keyBounds, type Range } from './index-key.js';
import type { IndexValue } from './types.js';

/** The index order as specified: null < boolean < number < string, then by value, then by id. */
function rank(v: IndexValue): number {
  return v === null ? 0 : typeof v === 'boolean' ? 1 : typeof v === 'number' ? 2 : 3;
}
function compareValues(a: IndexValue, b: IndexValue): number {
  if (rank(a) !== rank(b)) return rank(a) - rank(b);
  if (a === b || a === null) return 0;
  return (a as string | number | boolean) < (b as string | number | boolean) ? -1 : 1;
}

const value: fc.Arbitrary<IndexValue> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer({ min: -5, max: 5 }),
  fc.string({ unit: 'binary', maxLength: 6 }),
  fc.constantFrom('', 'a', 'a\0', 'a\0b', '\0', 'ab', '\uffff'),
);
const id = fc.string({ unit: 'binary', minLength: 1, maxLength: 5 });

describe('index keys', () => {
  test.prop([value, id, value, id])('string order of keys is (value, id) order', (va, ia, vb, ib) => {
    const expected = Math.sign(compareValues(va, vb) || (ia < ib ? -1 : ia > ib ? 1 : 0));
    const a = indexKey(va, ia);
    const b = indexKey(vb, ib);
    expect(Math.sign(a < b ? -1 : a > b ? 1 : 0)).toBe(expected);
    expect(idOfKey(a)).toBe(ia);
  });

  const range: fc.Arbitrary<Range> = fc.record({ eq: value, gt: value, gte: value, lt: value, lte: value }, { requiredKeys: [] });
  test.prop([fc.array(fc.tuple(value, id), { maxLength: 30 }), range])('a range selects exactly the entries whose value is in it', (entries, r) => {
    const [low, high] = keyBounds(r);
    const inKeys = entries.filter(([v, i]) => {
      const k = indexKey(v, i);
      return (low === undefined || k >= low) && (high === undefined || k < high);
    });
    const inValues = entries.filter(([v]) => {
      if (r.eq !== undefined && compareValues(v, r.eq) !== 0) return false;
      if (r.gt !== undefined && compareValues(v, r.gt) <= 0) return false;
      if (r.gte !== undefined && compareValues(v, r.gte) < 0) return false;
      if (r.lt !== undefined && compareValues(v, r.lt) >= 0) return false;
      if (r.lte !== undefined && compareValues(v, r.lte) > 0) return false;
      return true;
    });
    expect(inKeys).toStrictEqual(inValues);
  });
});
