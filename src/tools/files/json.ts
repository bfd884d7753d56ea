/** JSON rows: an array of objects, or one object (one row). */
import { ToolError } from '../../errors.js';
import { parseJsonText } from '../shared.js';
import { outputTooLarge, MAX_OUTPUT_CHARS, rowObjects, tableFromObjects, type Table } from './table.js';

/** Parses JSON text into a table; the union of the rows' keys, in first-seen order, are the columns. */
export function parseJson(text: string): Table {
  const value = parseJsonText(text);
  if (Array.isArray(value)) return tableFromObjects(value, 'JSON array element');
  if (typeof value === 'object' && value !== null) return tableFromObjects([value], 'JSON value');
  throw new ToolError('PARSE_ERROR', 'JSON content must be an array of objects or a single object');
}

/** The table as a JSON array of objects, indented by two spaces. */
export function generateJson(table: Table): string {
  let out: string;
  try {
    out = JSON.stringify(rowObjects(table), null, 2);
  } catch (err) {
    // V8 throws RangeError ("Invalid string length") past its string limit.
    if (err instanceof RangeError) throw outputTooLarge();
    throw err;
  }
  if (out.length > MAX_OUTPUT_CHARS) throw outputTooLarge();
  return out + '\n';
}
