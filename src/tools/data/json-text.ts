/** Reading the JSON texts the data tools take, with errors that name the field and the place. */
import { ToolError } from '../../errors.js';
import { jsonErrorOffset, jsonParseMessage } from '../../lib/json-locate.js';
import { textSize } from '../formatting/json-yaml-convert.js';
import { depthExceeds, lineColumn, MAX_DEPTH } from '../shared.js';

/**
 * `text` parsed as JSON; a 422 naming `field`, line and column when it is not JSON, or when it
 * nests deeper than MAX_DEPTH (every library here recurses: 100k levels would overflow the stack).
 */
export function parseJsonField(text: string, field: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const off = jsonErrorOffset(text);
    const at = lineColumn(text, off < 0 ? text.length : off);
    const msg = err instanceof Error ? jsonParseMessage(err.message, text, off) : 'Invalid JSON';
    throw new ToolError('PARSE_ERROR', `${field} is not valid JSON at line ${at.line}, column ${at.column}: ${msg}`, { field, ...at });
  }
  if (depthExceeds(value, MAX_DEPTH)) throw new ToolError('PARSE_ERROR', `${field} is nested too deeply (limit ${MAX_DEPTH} levels)`, { field });
  return value;
}

/**
 * Refuses a value whose JSON text (indented by `indent`) would pass `max` characters, measured
 * exactly without building it: a query or patch can make a 1 MB document far larger (`$..*`
 * repeats every subtree at every level above it).
 */
export function checkJsonSize(value: unknown, indent: number, max: number, what: string): void {
  const size = textSize(value, indent);
  if (size > max) throw new ToolError('PARSE_ERROR', `The ${what} would be ${size} characters of JSON; the limit is ${max}. Ask for less`, { limit: max });
}

/** `value` as JSON text indented by `indent`, refused past `max` characters before it is built. */
export function jsonText(value: unknown, indent: number, max: number, what: string): string {
  checkJsonSize(value, indent, max, what);
  return JSON.stringify(value, null, indent) ?? 'null';
}
