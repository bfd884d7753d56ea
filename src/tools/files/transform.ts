/**
 * file_process's `transform`: declarative steps applied in order to a parsed table — select,
 * filter, sort, dedupe, group, limit. Data only: operators come from fixed lists, there is no
 * expression language, nothing is evaluated. Every step is linear or n·log n in the rows
 * (bounded by the parse limits: 200,000 rows × 1,000 columns) and builds new arrays, so the
 * parsed table is never mutated.
 */
import { z } from 'zod';
import { cellText } from './cells.js';
import { compareKeys, keyOf, type Key } from './order.js';
import { MAX_COLUMNS, MAX_ROWS, type Table } from './table.js';
import { columnIndex, stepError, tupleKey } from './transform-columns.js';
import { Aggregate, groupRows } from './transform-group.js';

/** Most steps in one transform. */
export const MAX_STEPS = 32;
/** Most sort, dedupe or group keys in one step. */
export const MAX_KEYS = 32;
/** Most values in an `in` / `not_in` list. */
export const MAX_IN_VALUES = 1000;

const ColumnName = z.string().max(1000);
const Value = z.union([z.string().max(10_000), z.number(), z.boolean()]);
const Scalar = z.union([Value, z.null()]);

const Select = z.object({
  op: z.literal('select'),
  columns: z
    .array(z.union([ColumnName, z.object({ column: ColumnName.describe('Column to keep'), as: ColumnName.min(1).describe('Its new name') })]))
    .min(1)
    .max(MAX_COLUMNS)
    .describe('Columns to keep, in this order: a name, or {column, as} to rename'),
});
// One schema per family of operators, so the value each needs (one, none, a list; null or not)
// is stated in the schema: a schema-valid filter is never refused for its shape.
const filterBase = {
  op: z.literal('filter'),
  column: ColumnName.describe('Column to test'),
  ignore_case: z.boolean().default(false).describe('Fold case when comparing text'),
};
const Filter = z.discriminatedUnion('operator', [
  z.object({ ...filterBase, operator: z.enum(['eq', 'ne']).describe('eq, ne: equal in the one order (36 equals "36"); value null tests for null'), value: Scalar.describe('The value to compare with') }),
  z.object({ ...filterBase, operator: z.enum(['lt', 'le', 'gt', 'ge']).describe('lt le gt ge: numbers numerically, text in natural order; only values of the same kind compare'), value: Value.describe('The value to compare with') }),
  z.object({ ...filterBase, operator: z.enum(['contains', 'not_contains', 'starts_with', 'ends_with']).describe('On the text of the cell; null cells never match (the not_ forms keep them)'), value: Value.describe('The text to look for') }),
  z.object({ ...filterBase, operator: z.enum(['in', 'not_in']).describe('in, not_in: equal (as eq) to one of the values'), value: z.array(Scalar).max(MAX_IN_VALUES).describe(`The values, at most ${MAX_IN_VALUES}`) }),
  z.object({ ...filterBase, operator: z.enum(['is_null', 'not_null']).describe('is_null, not_null: the cell has no value / has one') }),
]);
type FilterIn = z.output<typeof Filter>;
const Sort = z.object({
  op: z.literal('sort'),
  keys: z
    .array(z.object({ column: ColumnName, direction: z.enum(['asc', 'desc']).default('asc') }))
    .min(1)
    .max(MAX_KEYS)
    .describe('Sort keys, most significant first. Stable; numbers numerically, text naturally (file2 < file10), nulls last in either direction'),
});
const Dedupe = z.object({
  op: z.literal('dedupe'),
  keys: z.array(ColumnName).max(MAX_KEYS).optional().describe('Columns that make a row a duplicate (default: all); the first row of each is kept'),
});
const Group = z.object({
  op: z.literal('group'),
  keys: z.array(ColumnName).max(MAX_KEYS).default([]).describe('Columns to group by (none: one group of all rows); groups come in first-seen order'),
  aggregates: z.array(Aggregate).min(1).max(64).describe('What to compute per group'),
});
const Limit = z.object({
  op: z.literal('limit'),
  count: z.number().int().min(0).max(MAX_ROWS).describe('Rows to keep'),
  offset: z.number().int().min(0).max(MAX_ROWS).default(0).describe('Rows to skip first'),
});

/** One transform step (`op` says which). */
export const Step = z.discriminatedUnion('op', [Select, Filter, Sort, Dedupe, Group, Limit]);
export type StepIn = z.output<typeof Step>;

function select(table: Table, step: z.output<typeof Select>, i: number): Table {
  const picks = step.columns.map((c, k) => {
    const [name, as] = typeof c === 'string' ? [c, c] : [c.column, c.as];
    return { at: columnIndex(table, name, i, `columns.${k}`), as };
  });
  const seen = new Set<string>();
  for (const [k, p] of picks.entries()) {
    if (seen.has(p.as)) throw stepError(i, `columns.${k}`, `the column ${JSON.stringify(p.as)} would appear twice`);
    seen.add(p.as);
  }
  return { columns: picks.map((p) => p.as), records: table.records.map((r) => picks.map((p) => r[p.at])) };
}

type Test = (cell: unknown) => boolean;

function textOf(v: unknown, fold: boolean): string {
  const s = cellText(v);
  return fold ? s.toLowerCase() : s;
}

/** The equality of filter and in: the same value in the one order (36 equals "36"), text folded when asked. */
function equalsTest(value: unknown, fold: boolean): Test {
  if (value === null) return (c) => c === null || c === undefined;
  const k = keyOf(value)!;
  if (fold && k.kind === 2) {
    const want = k.s.toLowerCase();
    return (c) => typeof c === 'string' && c.toLowerCase() === want;
  }
  return (c) => {
    const ck = keyOf(c);
    return ck !== null && compareKeys(ck, k) === 0;
  };
}

function filterTest(step: FilterIn): Test {
  const fold = step.ignore_case;
  switch (step.operator) {
    case 'is_null':
      return (c) => c === null || c === undefined;
    case 'not_null':
      return (c) => c !== null && c !== undefined;
    case 'eq':
      return equalsTest(step.value, fold);
    case 'ne': {
      const eq = equalsTest(step.value, fold);
      return (c) => !eq(c);
    }
    case 'in':
    case 'not_in': {
      const tests = step.value.map((v) => equalsTest(v, fold));
      const any: Test = (c) => tests.some((t) => t(c));
      return step.operator === 'in' ? any : (c) => !any(c);
    }
    case 'contains':
    case 'not_contains':
    case 'starts_with':
    case 'ends_with': {
      const op = step.operator;
      const want = textOf(step.value, fold);
      const has: Test =
        op === 'starts_with'
          ? (c) => c !== null && c !== undefined && textOf(c, fold).startsWith(want)
          : op === 'ends_with'
            ? (c) => c !== null && c !== undefined && textOf(c, fold).endsWith(want)
            : (c) => c !== null && c !== undefined && textOf(c, fold).includes(want);
      return op === 'not_contains' ? (c) => !has(c) : has;
    }
    default: {
      // lt le gt ge: only values of the same kind compare (a number with a number, text with
      // text); null and other kinds never match.
      const op = step.operator;
      const k = keyOf(step.value)!;
      const ok = op === 'lt' ? (d: number) => d < 0 : op === 'le' ? (d: number) => d <= 0 : op === 'gt' ? (d: number) => d > 0 : (d: number) => d >= 0;
      return (c) => {
        const ck = keyOf(c);
        return ck !== null && ck.kind === k.kind && ok(compareKeys(ck, k));
      };
    }
  }
}

function filter(table: Table, step: FilterIn, i: number): Table {
  const at = columnIndex(table, step.column, i, 'column');
  const test = filterTest(step);
  return { columns: table.columns, records: table.records.filter((r) => test(r[at])) };
}

function sort(table: Table, step: z.output<typeof Sort>, i: number): Table {
  const cols = step.keys.map((k, j) => ({ at: columnIndex(table, k.column, i, `keys.${j}.column`), sign: k.direction === 'desc' ? -1 : 1 }));
  // Keys computed once per row, not once per comparison.
  const rows = table.records.map((r, index) => ({ r, index, keys: cols.map((c) => keyOf(r[c.at])) }));
  rows.sort((a, b) => {
    for (let k = 0; k < cols.length; k++) {
      const x: Key = a.keys[k]!;
      const y: Key = b.keys[k]!;
      if (x === null || y === null) {
        if (x !== y) return x === null ? 1 : -1; // nulls last, whatever the direction
        continue;
      }
      const d = compareKeys(x, y);
      if (d !== 0) return d * cols[k]!.sign;
    }
    return a.index - b.index;
  });
  return { columns: table.columns, records: rows.map((x) => x.r) };
}

function dedupe(table: Table, step: z.output<typeof Dedupe>, i: number): Table {
  const ats = step.keys === undefined ? table.columns.map((_, k) => k) : step.keys.map((k, j) => columnIndex(table, k, i, `keys.${j}`));
  const seen = new Set<string>();
  return {
    columns: table.columns,
    records: table.records.filter((r) => {
      const key = tupleKey(r, ats);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    }),
  };
}

/** Applies the steps in order. Each step sees the columns the previous one left. */
export function applySteps(table: Table, steps: readonly StepIn[]): Table {
  let t = table;
  steps.forEach((step, i) => {
    switch (step.op) {
      case 'select':
        t = select(t, step, i);
        break;
      case 'filter':
        t = filter(t, step, i);
        break;
      case 'sort':
        t = sort(t, step, i);
        break;
      case 'dedupe':
        t = dedupe(t, step, i);
        break;
      case 'group':
        t = groupRows(t, step, i);
        break;
      case 'limit':
        t = { columns: t.columns, records: t.records.slice(step.offset, step.offset + step.count) };
        break;
    }
  });
  return t;
}
