import type { IndexValue } from './types.js';

/** Values of different types order as null < boolean < number < string. */
function rank(v: IndexValue): number {
  if (v === null) return 0;
  switch (typeof v) {
    case 'boolean':
      return 1;
    case 'number':
      return 2;
    default:
      return 3;
  }
}

export function compareValues(a: IndexValue, b: IndexValue): number {
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (a === b || ra === 0) return 0;
  return (a as string | number | boolean) < (b as string | number | boolean) ? -1 : 1;
}

function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export interface Range {
  eq?: IndexValue;
  gt?: IndexValue;
  gte?: IndexValue;
  lt?: IndexValue;
  lte?: IndexValue;
}

/**
 * An ordered index of (value, id) pairs in one sorted array: binary search for lookups and
 * ranges, splice for changes. Splicing is a memmove; at 100k entries it costs tens of µs.
 */
export class SortedIndex {
  #values: IndexValue[] = [];
  #ids: string[] = [];

  get size(): number {
    return this.#ids.length;
  }

  /** First position whose (value, id) is >= (v, id) — or > when `after` and id is undefined. */
  #lowerBound(v: IndexValue, id: string | undefined, after: boolean): number {
    let lo = 0;
    let hi = this.#ids.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      let c = compareValues(this.#values[mid]!, v);
      if (c === 0) c = id === undefined ? (after ? -1 : 1) : compareIds(this.#ids[mid]!, id);
      if (c < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  add(v: IndexValue, id: string): void {
    const i = this.#lowerBound(v, id, false);
    this.#values.splice(i, 0, v);
    this.#ids.splice(i, 0, id);
  }

  /** Replaces the contents with these entries, in any order: one sort instead of n splices (start-up). */
  load(entries: Array<[IndexValue, string]>): void {
    entries.sort((a, b) => compareValues(a[0], b[0]) || compareIds(a[1], b[1]));
    this.#values = entries.map((e) => e[0]);
    this.#ids = entries.map((e) => e[1]);
  }

  remove(v: IndexValue, id: string): void {
    const i = this.#lowerBound(v, id, false);
    if (this.#ids[i] === id && compareValues(this.#values[i]!, v) === 0) {
      this.#values.splice(i, 1);
      this.#ids.splice(i, 1);
    }
  }

  /** [start, end) positions of a range. */
  bounds(r: Range): [number, number] {
    let start = 0;
    let end = this.#ids.length;
    if (r.eq !== undefined) {
      start = this.#lowerBound(r.eq, undefined, false);
      end = this.#lowerBound(r.eq, undefined, true);
    }
    if (r.gte !== undefined) start = Math.max(start, this.#lowerBound(r.gte, undefined, false));
    if (r.gt !== undefined) start = Math.max(start, this.#lowerBound(r.gt, undefined, true));
    if (r.lte !== undefined) end = Math.min(end, this.#lowerBound(r.lte, undefined, true));
    if (r.lt !== undefined) end = Math.min(end, this.#lowerBound(r.lt, undefined, false));
    return [start, Math.max(start, end)];
  }

  idAt(i: number): string {
    return this.#ids[i]!;
  }
}
