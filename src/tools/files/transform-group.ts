/**
 * transform's `group`: rows grouped by key columns (first-seen order, one pass, a Map keyed by
 * the exact key values) with count, sum, min, max and mean per group.
 */
import { z } from 'zod';
import { cutText, ToolError } from '../../errors.js';
import { compareKeys, keyOf } from './order.js';
import type { Table } from './table.js';
import { columnIndex, stepError, tupleKey } from './transform-columns.js';

/** One aggregate of a group step. */
export const Aggregate = z.discriminatedUnion('op', [
  z.object({
    op: z.literal('count').describe('count: rows, or with column its non-null values'),
    column: z.string().max(1000).optional().describe('Count only the rows where this column has a value'),
    as: z.string().min(1).max(1000).optional().describe('Name of the result column (default: count, or <column>_count)'),
  }),
  z.object({
    op: z.enum(['sum', 'mean', 'min', 'max']).describe('sum and mean: numbers; min and max: in the sort order'),
    column: z.string().max(1000).describe('The column aggregated'),
    as: z.string().min(1).max(1000).optional().describe('Name of the result column (default: <column>_<op>)'),
  }),
]);

interface GroupStep {
  keys: string[];
  aggregates: Array<z.output<typeof Aggregate>>;
}

/** Running state of one aggregate in one group. */
interface State {
  n: number;
  sum: number;
  comp: number;
  best: unknown;
}

/** Neumaier's compensated addition, so sums of many decimals do not drift. */
function add(s: State, x: number): void {
  const t = s.sum + x;
  s.comp += Math.abs(s.sum) >= Math.abs(x) ? s.sum - t + x : x - t + s.sum;
  s.sum = t;
  s.n++;
}

function numberOf(v: unknown, i: number, row: number, column: string, op: string): number | null {
  if (v === null || v === undefined) return null;
  const k = keyOf(v);
  if (k !== null && k.kind === 0) return k.n;
  throw new ToolError('PARSE_ERROR', cutText(`steps.${i}: row ${row + 1}, column ${JSON.stringify(column)}: ${JSON.stringify(v)} is not a number (${op} needs numbers; filter such rows out first)`, 1000), {
    step: i,
    row: row + 1,
    column,
  });
}

function result(op: string, s: State, rows: number): unknown {
  switch (op) {
    case 'count':
      return rows;
    case 'sum': {
      if (s.n === 0) return null;
      const v = s.sum + s.comp;
      return Number.isFinite(v) ? v : null;
    }
    case 'mean': {
      if (s.n === 0) return null;
      const v = (s.sum + s.comp) / s.n;
      return Number.isFinite(v) ? v : null;
    }
    default:
      return s.best ?? null;
  }
}

/** The grouped table: key columns, then one column per aggregate. */
export function groupRows(table: Table, step: GroupStep, i: number): Table {
  const keyAts = step.keys.map((k, j) => columnIndex(table, k, i, `keys.${j}`));
  const aggs = step.aggregates.map((a, k) => {
    const at = a.column === undefined ? -1 : columnIndex(table, a.column, i, `aggregates.${k}.column`);
    return { op: a.op, at, column: a.column ?? '', name: a.as ?? (a.column === undefined ? 'count' : `${a.column}_${a.op}`) };
  });
  const columns = [...step.keys, ...aggs.map((a) => a.name)];
  const seen = new Set<string>();
  columns.forEach((c, k) => {
    if (seen.has(c)) throw stepError(i, k < step.keys.length ? `keys.${k}` : `aggregates.${k - step.keys.length}.as`, `the column ${JSON.stringify(c)} would appear twice`);
    seen.add(c);
  });
  const groups = new Map<string, { first: unknown[]; rows: number; states: State[] }>();
  table.records.forEach((r, row) => {
    const key = tupleKey(r, keyAts);
    let g = groups.get(key);
    if (g === undefined) {
      g = { first: r, rows: 0, states: aggs.map(() => ({ n: 0, sum: 0, comp: 0, best: null })) };
      groups.set(key, g);
    }
    g.rows++;
    for (let k = 0; k < aggs.length; k++) {
      const a = aggs[k]!;
      const s = g.states[k]!;
      if (a.at < 0) continue;
      const v = r[a.at];
      if (a.op === 'sum' || a.op === 'mean') {
        const x = numberOf(v, i, row, a.column, a.op);
        if (x !== null) add(s, x);
      } else if (v !== null && v !== undefined) {
        s.n++;
        if (a.op === 'min' || a.op === 'max') {
          const d = s.best === null ? 0 : compareKeys(keyOf(v)!, keyOf(s.best)!);
          if (s.best === null || (a.op === 'min' ? d < 0 : d > 0)) s.best = v;
        }
      }
    }
  });
  const records: unknown[][] = [];
  for (const g of groups.values()) {
    records.push([...keyAts.map((a) => g.first[a] ?? null), ...aggs.map((a, k) => (a.op === 'count' && a.at >= 0 ? g.states[k]!.n : result(a.op, g.states[k]!, g.rows)))]);
  }
  return { columns, records };
}
