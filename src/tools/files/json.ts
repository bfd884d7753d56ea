/** JSON rows: an array of objects, or one object (one row). */
import { ToolError } from '../../errors.js';
import { jsonErrorOffset, jsonParseMessage } from '../../lib/json-locate.js';
import { depthExceeds, lineColumn, MAX_DEPTH } from '../shared.js';
import { outputTooLarge, MAX_OUTPUT_CHARS, rowObjects, tableFromObjects, type Table } from './table.js';

/** Parses JSON text into a table; the union of the rows' keys, in first-seen order, are the columns. */
export function parseJson(text: string): Table {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const off = jsonErrorOffset(text);
    const at = lineColumn(text, off < 0 ? text.length : off);
    const msg = err instanceof Error ? jsonParseMessage(err.message, text, off) : 'Invalid JSON';
    throw new ToolError('PARSE_ERROR', `Invalid JSON at line ${at.line}, column ${at.column}: ${msg}`, at);
  }
  if (depthExceeds(value, MAX_DEPTH)) throw new ToolError('PARSE_ERROR', `JSON is nested too deeply (limit ${MAX_DEPTH} levels)`);
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
