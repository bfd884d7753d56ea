/**
 * The in-memory form every format parses into and generates from: column names plus rows as
 * arrays aligned with them. Rows stay arrays internally (no objects keyed by user text, so no
 * `__proto__` surprises); objects are built only at the output boundary by {@link rowObjects}.
 */
import { cutText, ToolError } from '../../errors.js';

export interface Table {
  columns: string[];
  /** Each record has exactly `columns.length` entries; absent values are null. */
  records: unknown[][];
  /**
   * True when the records still hold the raw text of CSV/TSV cells (strings, or null for
   * padding), to be typed by whoever reads them: analyze types each cell as it goes, which
   * saves boxing every decimal into the records first. Absent: values are typed.
   */
  untyped?: boolean;
}

/** Most data rows accepted by any action. */
export const MAX_ROWS = 200_000;
/** Most columns accepted by any action. */
export const MAX_COLUMNS = 1_000;
/** Most characters in `content` (the REST body limit is 10 MiB anyway). */
export const MAX_CONTENT_CHARS = 10 * 1024 * 1024;
/** Most characters of output any action may produce (an estimate is checked before building). */
export const MAX_OUTPUT_CHARS = 64 * 1024 * 1024;

export function tooManyRows(count: number | string): ToolError {
  return new ToolError('INVALID_INPUT', `Too many rows: ${count} (limit ${MAX_ROWS})`, { limit: MAX_ROWS });
}

export function tooManyColumns(count: number | string): ToolError {
  return new ToolError('INVALID_INPUT', `Too many columns: ${count} (limit ${MAX_COLUMNS})`, { limit: MAX_COLUMNS });
}

export function outputTooLarge(): ToolError {
  return new ToolError('INVALID_INPUT', `The result would exceed ${MAX_OUTPUT_CHARS / 1024 / 1024} MiB`, { limit: MAX_OUTPUT_CHARS });
}

/**
 * A number past the range of a double: JSON.parse reads 1e400 as Infinity, which no output
 * format can carry (CSV would get the text "Infinity", JSON null). Refused, never rewritten:
 * 422 for content (it parsed, but into a value we cannot keep), 400 for `data`.
 */
function numberOutOfRange(what: string, row: number, column: string): ToolError {
  const code = what === 'data row' ? 'INVALID_INPUT' : 'PARSE_ERROR';
  return new ToolError(code, `${what} ${row}, column ${cutText(JSON.stringify(column), 200)}: a number past the range of a double (±1.8e308); write it as a string`, { row, column });
}

/**
 * Column names made unique and non-empty: an empty name becomes `column_N` (1-based position),
 * a repeated one gets `_2`, `_3`… appended.
 */
export function uniqueColumns(names: readonly string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  names.forEach((raw, i) => {
    let name = raw === '' ? `column_${i + 1}` : raw;
    if (seen.has(name)) {
      let k = 2;
      while (seen.has(`${name}_${k}`)) k++;
      name = `${name}_${k}`;
    }
    seen.add(name);
    out.push(name);
  });
  return out;
}

/** Names for headerless input: column_1 … column_n. */
export function positionalColumns(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `column_${i + 1}`);
}

/**
 * Rows as plain objects in column order. Keys such as `__proto__` become own properties
 * (defineProperty), never prototype writes, so the objects serialise with every column.
 */
export function rowObjects(table: Table): Array<Record<string, unknown>> {
  const { columns, records } = table;
  const n = columns.length;
  const out = new Array<Record<string, unknown>>(records.length);
  const unsafe = columns.includes('__proto__');
  for (let r = 0; r < records.length; r++) {
    const rec = records[r]!;
    const o: Record<string, unknown> = {};
    if (unsafe) {
      for (let j = 0; j < n; j++) Object.defineProperty(o, columns[j]!, { value: rec[j], enumerable: true, writable: true, configurable: true });
    } else {
      for (let j = 0; j < n; j++) o[columns[j]!] = rec[j];
    }
    out[r] = o;
  }
  return out;
}

/**
 * A table from row objects: the union of their own keys in first-seen order becomes the
 * columns; a row without a key gets null there. Only own enumerable keys are read.
 */
export function tableFromObjects(rows: readonly unknown[], what: string): Table {
  if (rows.length > MAX_ROWS) throw tooManyRows(rows.length);
  const index = new Map<string, number>();
  const columns: string[] = [];
  const keyLists: string[][] = new Array(rows.length);
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r];
    if (typeof row !== 'object' || row === null || Array.isArray(row)) {
      throw new ToolError('PARSE_ERROR', `${what} ${r + 1} is not an object`, { row: r + 1 });
    }
    const keys = Object.keys(row);
    keyLists[r] = keys;
    for (const k of keys) {
      if (!index.has(k)) {
        if (columns.length >= MAX_COLUMNS) throw tooManyColumns(`more than ${MAX_COLUMNS}`);
        index.set(k, columns.length);
        columns.push(k);
      }
    }
  }
  const n = columns.length;
  const records: unknown[][] = new Array(rows.length);
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r] as Record<string, unknown>;
    const rec: unknown[] = new Array(n).fill(null);
    for (const k of keyLists[r]!) {
      // An own key shadows Object.prototype, so row['__proto__'] reads the data, not the prototype.
      const v = row[k];
      if (typeof v === 'number' && !Number.isFinite(v)) throw numberOutOfRange(what, r + 1, k);
      rec[index.get(k)!] = v === undefined ? null : v;
    }
    records[r] = rec;
  }
  return { columns, records };
}
