/** The `encoding` field: `content` as text or base64 bytes, and format detection. */
import { ToolError } from '../../errors.js';

export type Encoding = 'utf-8' | 'base64';
export type Format = 'csv' | 'tsv' | 'json' | 'xml';

/**
 * The text of `content`. base64 (standard or URL-safe alphabet, padding optional, whitespace
 * ignored) is decoded to bytes, then read as UTF-8, or UTF-16 when it starts with a UTF-16 BOM.
 * Invalid base64 → 400; bytes that are not valid text → 422. A leading BOM is dropped.
 */
export function decodeContent(content: string, encoding: Encoding): string {
  if (encoding === 'utf-8') return stripBom(content);
  const compact = content.replace(/[\t\n\r ]+/g, '');
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(compact) || compact.length % 4 === 1) {
    throw new ToolError('INVALID_INPUT', 'content is not valid base64', [{ path: 'content', message: 'Invalid base64' }]);
  }
  const bytes = Buffer.from(compact, compact.includes('-') || compact.includes('_') ? 'base64url' : 'base64');
  let label = 'utf-8';
  if (bytes[0] === 0xff && bytes[1] === 0xfe) label = 'utf-16le';
  else if (bytes[0] === 0xfe && bytes[1] === 0xff) label = 'utf-16be';
  try {
    return stripBom(new TextDecoder(label, { fatal: true }).decode(bytes));
  } catch {
    throw new ToolError('PARSE_ERROR', `The decoded content is not valid ${label.toUpperCase()} text`);
  }
}

/** `text` in the requested encoding (base64 of its UTF-8 bytes, or as is). */
export function encodeContent(text: string, encoding: Encoding): string {
  return encoding === 'base64' ? Buffer.from(text, 'utf8').toString('base64') : text;
}

function stripBom(s: string): string {
  return s.charCodeAt(0) === 0xfeff ? s.slice(1) : s;
}

/**
 * The format of a text: JSON when it starts with `[` or `{` and ends with `]` or `}`, XML when
 * it starts with `<`, otherwise delimited text: TSV when the first line has tabs and none of
 * `,` `;` `|` outnumber them, else CSV.
 */
export function detectFormat(text: string): Format {
  let i = 0;
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  const first = text.charCodeAt(i);
  if (first === 60) return 'xml';
  if (first === 91 || first === 123) {
    let j = text.length - 1;
    while (j > i && isSpace(text.charCodeAt(j))) j--;
    const last = text.charCodeAt(j);
    if (last === 93 || last === 125) return 'json';
  }
  let end = text.indexOf('\n');
  if (end < 0) end = text.length;
  const line = text.slice(0, Math.min(end, 64 * 1024));
  const tabs = count(line, '\t');
  if (tabs > 0 && tabs >= count(line, ',') && tabs >= count(line, ';') && tabs >= count(line, '|')) return 'tsv';
  return 'csv';
}

function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13;
}

function count(s: string, ch: string): number {
  let n = 0;
  for (let i = s.indexOf(ch); i >= 0; i = s.indexOf(ch, i + 1)) n++;
  return n;
}
