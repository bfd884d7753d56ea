/**
 * The one order of cell values that transform's sort, filter comparisons and group min/max
 * share: numbers (and text that is a plain decimal number, such as `007` or a 20-digit id)
 * numerically, then booleans (false < true), then text in natural order (digit runs by value:
 * file2 < file10), then nested values by their JSON text; null is kept apart (sorted last).
 */
import { cellText } from './cells.js';

/** A cell made ready for comparing: its kind and the value compared within the kind. */
export type Key =
  | { kind: 0; n: number }
  | { kind: 1; n: number }
  | { kind: 2; s: string }
  | { kind: 3; s: string }
  | null;

const DECIMAL = /^-?[0-9]+(?:\.[0-9]+)?$/;

/** The comparison key of a cell value (null for null). */
export function keyOf(v: unknown): Key {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') return { kind: 0, n: v };
  if (typeof v === 'boolean') return { kind: 1, n: v ? 1 : 0 };
  if (typeof v === 'string') {
    // Text cells that typing kept as strings (leading zeros, past 2^53) still sort as numbers.
    if (v.length <= 400 && DECIMAL.test(v)) return { kind: 0, n: Number(v) };
    return { kind: 2, s: v };
  }
  return { kind: 3, s: cellText(v) };
}

const isDigit = (c: number): boolean => c >= 48 && c <= 57;

/**
 * Natural order of two strings: runs of digits compare by value (leading zeros ignored, then
 * fewer leading zeros first), everything else by UTF-16 code unit. Linear in the shorter string.
 */
export function naturalCompare(a: string, b: string): number {
  let i = 0;
  let j = 0;
  let zeros = 0;
  while (i < a.length && j < b.length) {
    const ca = a.charCodeAt(i);
    const cb = b.charCodeAt(j);
    if (isDigit(ca) && isDigit(cb)) {
      let si = i;
      let sj = j;
      while (si < a.length && a.charCodeAt(si) === 48) si++;
      while (sj < b.length && b.charCodeAt(sj) === 48) sj++;
      let ei = si;
      let ej = sj;
      while (ei < a.length && isDigit(a.charCodeAt(ei))) ei++;
      while (ej < b.length && isDigit(b.charCodeAt(ej))) ej++;
      const la = ei - si;
      const lb = ej - sj;
      if (la !== lb) return la - lb;
      for (let k = 0; k < la; k++) {
        const d = a.charCodeAt(si + k) - b.charCodeAt(sj + k);
        if (d !== 0) return d;
      }
      if (zeros === 0) zeros = si - i - (sj - j);
      i = ei;
      j = ej;
      continue;
    }
    if (ca !== cb) return ca - cb;
    i++;
    j++;
  }
  const rest = a.length - i - (b.length - j);
  if (rest !== 0) return rest;
  return zeros;
}

/** Compares two non-null keys in the one order; 0 only for equal values. */
export function compareKeys(a: NonNullable<Key>, b: NonNullable<Key>): number {
  if (a.kind !== b.kind) return a.kind - b.kind;
  if (a.kind === 0 || a.kind === 1) {
    const bn = (b as { n: number }).n;
    return a.n < bn ? -1 : a.n > bn ? 1 : 0;
  }
  const bs = (b as { s: string }).s;
  const c = naturalCompare(a.s, bs);
  if (c !== 0) return c;
  return a.s < bs ? -1 : a.s > bs ? 1 : 0;
}
