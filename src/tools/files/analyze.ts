/** Per-column profile of a table: type, null and distinct counts, numeric or text statistics. */
import { isIsoDate, typeCell, type Cell } from './cells.js';
import type { Table } from './table.js';

export type ColumnType = 'integer' | 'number' | 'boolean' | 'date' | 'string' | 'empty' | 'mixed';

export interface NumericStats {
  min: number;
  max: number;
  mean: number;
  median: number;
  /** Sample standard deviation (n − 1); 0 for a single value; null past the range of a double. */
  stddev: number | null;
  /** null when the sum is past the range of a double (±1.8e308); mean and median stay exact. */
  sum: number | null;
}
export interface TextStats {
  minLength: number;
  maxLength: number;
  top: Array<{ value: Cell; count: number }>;
}
export interface DateStats {
  min: string;
  max: string;
}
export interface BooleanStats {
  trueCount: number;
  falseCount: number;
}

export interface ColumnProfile {
  name: string;
  type: ColumnType;
  nullCount: number;
  uniqueCount: number;
  stats: NumericStats | TextStats | DateStats | BooleanStats | null;
}

/** How many most frequent values `top` lists. */
export const TOP_VALUES = 5;

const K_INT = 1;
const K_DEC = 2;
const K_BOOL = 4;
const K_DATE = 8;
const K_STR = 16;

/** Profiles every column in one pass per column. */
export function analyzeTable(table: Table): ColumnProfile[] {
  return table.columns.map((name, j) => analyzeColumn(name, table.records, j, table.untyped === true));
}

function analyzeColumn(name: string, records: unknown[][], j: number, untyped: boolean): ColumnProfile {
  const rows = records.length;
  // Strings are counted per distinct value; numbers go to an array that is sorted once (for
  // the median) and yields their distinct values and counts as runs. Dates are recognised on
  // distinct strings only, so per cell there is one typeof and at most one Map update.
  // Boxed counters: a repeated value costs one Map lookup, not a get and a set.
  const strCounts = new Map<string, { n: number }>();
  const nums = new Float64Array(rows);
  let numCount = 0;
  let nullCount = 0;
  let kinds = 0;
  let trueCount = 0;
  let falseCount = 0;
  for (let r = 0; r < rows; r++) {
    const cell = records[r]![j];
    const v = untyped && typeof cell === 'string' ? typeCell(cell) : cell;
    if (v === null || v === undefined) {
      nullCount++;
      continue;
    }
    const t = typeof v;
    if (t === 'string') {
      const box = strCounts.get(v as string);
      if (box === undefined) strCounts.set(v as string, { n: 1 });
      else box.n++;
    } else if (t === 'number') {
      kinds |= Number.isInteger(v) ? K_INT : K_DEC;
      nums[numCount++] = v as number;
    } else if (t === 'boolean') {
      if (v) trueCount++;
      else falseCount++;
    } else {
      // Nested JSON values are profiled as their JSON text.
      const text = JSON.stringify(v);
      const box = strCounts.get(text);
      if (box === undefined) strCounts.set(text, { n: 1 });
      else box.n++;
    }
  }
  if (trueCount + falseCount > 0) kinds |= K_BOOL;
  let dateMin = '';
  let dateMax = '';
  let dateMinT = Infinity;
  let dateMaxT = -Infinity;
  for (const s of strCounts.keys()) {
    if (isIsoDate(s)) {
      kinds |= K_DATE;
      const time = dateTime(s);
      if (time < dateMinT) {
        dateMinT = time;
        dateMin = s;
      }
      if (time > dateMaxT) {
        dateMaxT = time;
        dateMax = s;
      }
    } else kinds |= K_STR;
  }
  const sorted = nums.subarray(0, numCount).sort();
  let distinctNums = 0;
  for (let i = 0; i < numCount; i++) if (i === 0 || sorted[i] !== sorted[i - 1]) distinctNums++;
  const uniqueCount = strCounts.size + distinctNums + (trueCount > 0 ? 1 : 0) + (falseCount > 0 ? 1 : 0);
  const type = typeOf(kinds);
  let stats: ColumnProfile['stats'];
  switch (type) {
    case 'empty':
      stats = null;
      break;
    case 'integer':
    case 'number':
      stats = numericStats(sorted);
      break;
    case 'boolean':
      stats = { trueCount, falseCount };
      break;
    case 'date':
      stats = { min: dateMin, max: dateMax };
      break;
    default:
      stats = textStats(valueCounts(strCounts, sorted, trueCount, falseCount));
  }
  return { name, type, nullCount, uniqueCount, stats };
}

/** Every distinct value with its count: strings, then numbers (from their sorted runs), then booleans. */
function* valueCounts(strCounts: Map<string, { n: number }>, sorted: Float64Array, trueCount: number, falseCount: number): Generator<[Cell, number]> {
  for (const [s, box] of strCounts) yield [s, box.n];
  for (let i = 0; i < sorted.length; ) {
    let k = i + 1;
    while (k < sorted.length && sorted[k] === sorted[i]) k++;
    yield [sorted[i]!, k - i];
    i = k;
  }
  if (trueCount > 0) yield [true, trueCount];
  if (falseCount > 0) yield [false, falseCount];
}

/** Milliseconds of an ISO date; one without an offset is read as UTC, so all compare alike. */
function dateTime(s: string): number {
  if (s.length === 10) return Date.parse(`${s}T00:00:00Z`);
  const iso = s.charCodeAt(10) === 32 ? `${s.slice(0, 10)}T${s.slice(11)}` : s;
  const zoned = iso.endsWith('Z') || iso.indexOf('+', 10) > 0 || iso.indexOf('-', 10) > 0;
  return Date.parse(zoned ? iso : `${iso}Z`);
}

function typeOf(kinds: number): ColumnType {
  switch (kinds) {
    case 0:
      return 'empty';
    case K_INT:
      return 'integer';
    case K_DEC:
    case K_INT | K_DEC:
      return 'number';
    case K_BOOL:
      return 'boolean';
    case K_DATE:
      return 'date';
    case K_STR:
      return 'string';
    default:
      return 'mixed';
  }
}

/** Neumaier-compensated sum of `nums[i] * scale`: large columns of decimals keep their last digits. */
function compensatedSum(nums: Float64Array, scale: number): number {
  let sum = 0;
  let comp = 0;
  for (let i = 0; i < nums.length; i++) {
    const x = nums[i]! * scale;
    const t = sum + x;
    comp += Math.abs(sum) >= Math.abs(x) ? sum - t + x : x - t + sum;
    sum = t;
  }
  return sum + comp;
}

/** Sample standard deviation, computed on values divided by `scale` so that no square overflows. */
function deviation(nums: Float64Array, mean: number, scale: number): number {
  let sq = 0;
  for (let i = 0; i < nums.length; i++) {
    const d = scale === 1 ? nums[i]! - mean : nums[i]! / scale - mean / scale;
    sq += d * d;
  }
  return Math.sqrt(sq / (nums.length - 1)) * scale;
}

/**
 * Statistics of a sorted, non-empty array of finite numbers. Every figure but `sum` lies within
 * the range of the values, and is computed so that no intermediate overflows: 1e308 + 1e308 is
 * Infinity in a double, so past ±1.8e308 the sum is null (JSON has no Infinity), the mean is the
 * sum of x/n, and the deviation is taken on values divided by the largest magnitude.
 */
function numericStats(sorted: Float64Array): NumericStats {
  const n = sorted.length;
  const min = sorted[0]!;
  const max = sorted[n - 1]!;
  const total = compensatedSum(sorted, 1);
  const sum = Number.isFinite(total) ? total : null;
  const mean = sum !== null ? sum / n : compensatedSum(sorted, 1 / n);
  let dev = n > 1 ? deviation(sorted, mean, 1) : 0;
  if (!Number.isFinite(dev)) {
    const scale = Math.max(Math.abs(min), Math.abs(max));
    dev = deviation(sorted, mean, scale);
  }
  const stddev = Number.isFinite(dev) ? dev : null;
  const mid = n >> 1;
  const a = sorted[mid - 1]!;
  const b = sorted[mid]!;
  const median = n % 2 === 1 ? b : Number.isFinite(a + b) ? (a + b) / 2 : a / 2 + b / 2;
  return { min, max, mean, median, stddev, sum };
}

function textStats(counts: Iterable<[Cell, number]>): TextStats {
  let minLength = Infinity;
  let maxLength = 0;
  const top: Array<{ value: Cell; count: number }> = [];
  for (const [value, count] of counts) {
    const len = typeof value === 'string' ? value.length : String(value).length;
    if (len < minLength) minLength = len;
    if (len > maxLength) maxLength = len;
    // Keep the TOP_VALUES most frequent, first-seen first among equal counts.
    if (top.length < TOP_VALUES || count > top[top.length - 1]!.count) {
      let k = top.length < TOP_VALUES ? top.length : top.length - 1;
      while (k > 0 && top[k - 1]!.count < count) k--;
      top.splice(k, 0, { value, count });
      if (top.length > TOP_VALUES) top.pop();
    }
  }
  return { minLength: minLength === Infinity ? 0 : minLength, maxLength, top };
}
