/** What the transform steps share: naming a step's field in an error, finding a column, keying a row. */
import { cutText, ToolError } from '../../errors.js';
import type { Table } from './table.js';

/**
 * Steps that do not fit the content (a column it lacks, an output column named twice): 422, as
 * for content that does not parse — the input is schema-valid; what is wrong shows only against
 * the table. `details.path` names the step's field (`steps.2.column`).
 */
export function stepError(i: number, field: string, message: string): ToolError {
  const path = `steps.${i}${field ? `.${field}` : ''}`;
  return new ToolError('PARSE_ERROR', `${path}: ${message}`, { step: i, path });
}

/** The index of `name` in the table's columns, or a 400 listing the columns there are. */
export function columnIndex(table: Table, name: string, i: number, field: string): number {
  const at = table.columns.indexOf(name);
  if (at < 0) throw stepError(i, field, cutText(`no column ${JSON.stringify(name)} (the columns here are ${table.columns.map((c) => JSON.stringify(c)).join(', ')})`, 500));
  return at;
}

/** A string naming a row's values at `ats` exactly (1 and "1" differ). */
export function tupleKey(r: readonly unknown[], ats: readonly number[]): string {
  return JSON.stringify(ats.map((a) => r[a] ?? null));
}

