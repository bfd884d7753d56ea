/**
 * Typing of text cells (CSV, TSV, XML) and classification of values for analysis.
 * Hand-written scanners, no regexes: this runs once per cell on inputs of millions of cells.
 */

/** A typed cell value. JSON input may also carry nested objects or arrays. */
export type Cell = string | number | boolean | null;

const ZERO = 48;
const NINE = 57;
const MINUS = 45;
const DOT = 46;

/**
 * The typed value of a text cell: `''` → null; `true`/`false` (any of three casings) →
 * boolean; a plain decimal number → number, unless it has leading zeros (`007`, zip codes),
 * is `-0`, or would lose digits as a double (integers past 2^53, more than 15 significant
 * digits). Everything else stays the exact string.
 */
export function typeCell(s: string): Cell {
  const len = s.length;
  if (len === 0) return null;
  const c = s.charCodeAt(0);
  if ((c >= ZERO && c <= NINE) || c === MINUS) return numberOrString(s, len);
  if (len === 4) {
    if (s === 'true' || s === 'TRUE' || s === 'True') return true;
  } else if (len === 5) {
    if (s === 'false' || s === 'FALSE' || s === 'False') return false;
  }
  return s;
}

function numberOrString(s: string, len: number): Cell {
  let i = 0;
  const negative = s.charCodeAt(0) === MINUS;
  if (negative) i = 1;
  const intStart = i;
  while (i < len) {
    const c = s.charCodeAt(i);
    if (c < ZERO || c > NINE) break;
    i++;
  }
  const intDigits = i - intStart;
  if (intDigits === 0) return s;
  // Leading zeros mean an identifier (007, 01234 zip codes), not a number.
  if (intDigits > 1 && s.charCodeAt(intStart) === ZERO) return s;
  let fracDigits = 0;
  let isInteger = true;
  if (i < len && s.charCodeAt(i) === DOT) {
    isInteger = false;
    i++;
    const fracStart = i;
    while (i < len) {
      const c = s.charCodeAt(i);
      if (c < ZERO || c > NINE) break;
      i++;
    }
    fracDigits = i - fracStart;
    if (fracDigits === 0) return s;
  }
  if (i < len) {
    const e = s.charCodeAt(i);
    if (e !== 101 && e !== 69) return s; // e E
    isInteger = false;
    i++;
    if (i < len) {
      const sign = s.charCodeAt(i);
      if (sign === 43 || sign === MINUS) i++;
    }
    const expStart = i;
    while (i < len) {
      const c = s.charCodeAt(i);
      if (c < ZERO || c > NINE) break;
      i++;
    }
    if (i === expStart || i < len) return s;
  }
  const n = +s;
  if (!Number.isFinite(n)) return s;
  if (n === 0 && negative) return s; // -0 would print back as 0
  if (isInteger) return intDigits > 15 && !Number.isSafeInteger(n) ? s : n;
  // A double keeps 15 significant decimal digits; more would be silently rounded.
  if (intDigits + fracDigits > 15 && significantDigits(s) > 15) return s;
  return n;
}

function significantDigits(s: string): number {
  let first = -1;
  let last = -1;
  let count = 0;
  let seenDot = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 101 || c === 69) break;
    if (c === DOT) seenDot = true;
    if (c < ZERO || c > NINE) continue;
    if (first < 0 && c === ZERO) continue;
    if (first < 0) first = count;
    count++;
    if (c !== ZERO || !seenDot) last = count;
  }
  // Leading zeros never count; trailing zeros after the point are not information a double loses.
  return first < 0 ? 0 : last - first;
}

/**
 * True for an ISO 8601 date or date-time that names a real day:
 * `YYYY-MM-DD`, optionally `T`/space, `HH:MM`, `:SS`, `.fff`, and `Z` or `±HH:MM`.
 */
export function isIsoDate(s: string): boolean {
  const len = s.length;
  if (len < 10 || len > 35) return false;
  if (s.charCodeAt(4) !== MINUS || s.charCodeAt(7) !== MINUS) return false;
  if (!digits(s, 0, 4) || !digits(s, 5, 2) || !digits(s, 8, 2)) return false;
  const year = num(s, 0, 4);
  const month = num(s, 5, 2);
  const day = num(s, 8, 2);
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return false;
  if (len === 10) return true;
  const sep = s.charCodeAt(10);
  if (sep !== 84 && sep !== 32) return false; // T or space
  let i = 11;
  if (!digits(s, i, 2) || s.charCodeAt(i + 2) !== 58 || !digits(s, i + 3, 2)) return false;
  if (num(s, i, 2) > 23 || num(s, i + 3, 2) > 59) return false;
  i += 5;
  if (i < len && s.charCodeAt(i) === 58) {
    if (!digits(s, i + 1, 2) || num(s, i + 1, 2) > 59) return false;
    i += 3;
    if (i < len && s.charCodeAt(i) === DOT) {
      const start = ++i;
      while (i < len && s.charCodeAt(i) >= ZERO && s.charCodeAt(i) <= NINE) i++;
      if (i === start || i - start > 9) return false;
    }
  }
  if (i === len) return true;
  const z = s.charCodeAt(i);
  if (z === 90) return i + 1 === len; // Z
  if (z !== 43 && z !== MINUS) return false;
  if (!digits(s, i + 1, 2) || num(s, i + 1, 2) > 23) return false;
  i += 3;
  if (i < len && s.charCodeAt(i) === 58) i++;
  return i + 2 === len && digits(s, i, 2) && num(s, i, 2) <= 59;
}

function digits(s: string, at: number, n: number): boolean {
  if (at + n > s.length) return false;
  for (let i = at; i < at + n; i++) {
    const c = s.charCodeAt(i);
    if (c < ZERO || c > NINE) return false;
  }
  return true;
}

function num(s: string, at: number, n: number): number {
  let v = 0;
  for (let i = at; i < at + n; i++) v = v * 10 + (s.charCodeAt(i) - ZERO);
  return v;
}

function daysIn(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/**
 * The text of a value as it goes into a CSV, TSV or XML cell: null → '', strings as they are,
 * numbers and booleans in their JSON form, nested objects and arrays as JSON text.
 */
export function cellText(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (typeof v === 'bigint') return v.toString();
  return JSON.stringify(v) ?? '';
}
