import type { IndexValue } from './types.js';

/**
 * An index entry (value, id) as one string whose plain string order (UTF-16 code units, as
 * `<` compares) is the index order: values by type (null < boolean < number < string), then
 * by value, then ties by id. One flat string per entry is the cheapest key a B+ tree can hold
 * (no tuple per entry) and compares natively.
 *
 * Layout: type tag, encoded value, terminator "\0\0", then the id as is. A string value's
 * "\0" is written "\0\x01", so the first "\0\0" always ends the value, a value that is a
 * prefix of another sorts first, and equal values fall through to the ids.
 */
const TAG_NULL = '\x01';
const TAG_BOOL = '\x02';
const TAG_NUMBER = '\x03';
const TAG_STRING = '\x04';
const END = '\0\0';
/** The smallest string greater than every key of one value: bounds ranges that exclude it. */
const AFTER = '\0\x01';

const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
const HI = LITTLE_ENDIAN ? 1 : 0;
const LO = 1 - HI;

/** 16 hex digits whose order is the numbers' order (IEEE 754 bits, sign-flipped). */
function encodeNumber(n: number): string {
  f64[0] = n === 0 ? 0 : n; // -0 and 0 are one value
  let hi = u32[HI]!;
  let lo = u32[LO]!;
  if (hi >>> 31) {
    hi = ~hi >>> 0;
    lo = ~lo >>> 0;
  } else hi = (hi | 0x80000000) >>> 0;
  return hi.toString(16).padStart(8, '0') + lo.toString(16).padStart(8, '0');
}

/** The encoded value with its type tag (no terminator, no id). */
export function encodeValue(v: IndexValue): string {
  if (v === null) return TAG_NULL;
  switch (typeof v) {
    case 'boolean':
      return TAG_BOOL + (v ? '1' : '0');
    case 'number':
      return TAG_NUMBER + encodeNumber(v);
    default:
      return TAG_STRING + (v.includes('\0') ? v.replaceAll('\0', '\0\x01') : v);
  }
}

/** The key of the entry (v, id). */
export function indexKey(v: IndexValue, id: string): string {
  return joinKey(encodeValue(v), id);
}

/** The key of the entry (v, id), v given encoded (encodeValue). */
export function joinKey(encoded: string, id: string): string {
  return encoded + END + id;
}

/** The id an index key ends with. */
export function idOfKey(key: string): string {
  return key.slice(key.indexOf(END) + END.length);
}

/** Values of other types and non-JSON values are indexed as null, like `undefined`. */
export function indexValue(v: unknown): IndexValue {
  if (v === undefined || v === null) return null;
  if (typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  return null;
}

export interface Range {
  eq?: IndexValue;
  gt?: IndexValue;
  gte?: IndexValue;
  lt?: IndexValue;
  lte?: IndexValue;
}

/**
 * The keys of a range as [low, high): low inclusive, high exclusive; undefined = unbounded.
 * Several bounds narrow each other, as they did on the sorted array before.
 */
export function keyBounds(r: Range): [string | undefined, string | undefined] {
  let low: string | undefined;
  let high: string | undefined;
  const raise = (k: string) => {
    if (low === undefined || k > low) low = k;
  };
  const lower = (k: string) => {
    if (high === undefined || k < high) high = k;
  };
  if (r.eq !== undefined) {
    raise(encodeValue(r.eq) + END);
    lower(encodeValue(r.eq) + AFTER);
  }
  if (r.gte !== undefined) raise(encodeValue(r.gte) + END);
  if (r.gt !== undefined) raise(encodeValue(r.gt) + AFTER);
  if (r.lte !== undefined) lower(encodeValue(r.lte) + AFTER);
  if (r.lt !== undefined) lower(encodeValue(r.lt) + END);
  return [low, high];
}

/** Plain code-unit order, the order of index keys and ids. */
export function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
