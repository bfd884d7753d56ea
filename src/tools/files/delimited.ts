/** CSV and TSV: parsing with papaparse (RFC 4180) and generation with RFC 4180 quoting. */
import Papa from 'papaparse';
import { ToolError } from '../../errors.js';
import { lineColumn } from '../shared.js';
import { cellText, typeCell } from './cells.js';
import { MAX_COLUMNS, MAX_OUTPUT_CHARS, MAX_ROWS, outputTooLarge, positionalColumns, tooManyColumns, tooManyRows, uniqueColumns, type Table } from './table.js';

/** Delimiters tried, in order of preference, when a CSV's delimiter is not given. */
const GUESSES = [',', ';', '|', '\t'];

export interface DelimitedOptions {
  delimiter: string;
  header: boolean;
  /** Leave the cells as text (see Table.untyped); analyze types them itself. */
  untyped?: boolean;
  /** Called every few thousand rows with (done, total). */
  onRows?: (done: number, total: number) => void | Promise<void>;
}

/**
 * The delimiter of a CSV text: the candidate that splits the first lines into the same
 * number (more than one) of fields, preferring `,` then `;`, `|`, tab. Defaults to `,`.
 */
export function guessDelimiter(text: string): string {
  const sample = text.slice(0, 64 * 1024);
  let best = ',';
  let bestFields = 1;
  for (const d of GUESSES) {
    const r = Papa.parse<string[]>(sample, { delimiter: d, preview: 10, skipEmptyLines: true });
    const rows = r.data.length > 1 && text.length > sample.length ? r.data.slice(0, -1) : r.data;
    const first = rows[0]?.length ?? 0;
    if (first <= 1 || !rows.every((row) => row.length === first)) continue;
    if (first > bestFields) {
      best = d;
      bestFields = first;
    }
  }
  return best;
}

/**
 * Parses CSV/TSV text into a table of typed cells. With `header`, the first row names the
 * columns (empty names become `column_N`, repeats get `_2`…). Short rows are padded with null;
 * a row with extra non-empty fields is a PARSE_ERROR, as are malformed quotes.
 */
export async function parseDelimited(text: string, opts: DelimitedOptions): Promise<Table> {
  refuseWideLines(text, opts.delimiter);
  const headerRows = opts.header ? 1 : 0;
  const result = Papa.parse<string[]>(text, {
    delimiter: opts.delimiter,
    quoteChar: '"',
    header: false,
    dynamicTyping: false,
    // Stop reading past the limit instead of materialising a million rows first.
    preview: MAX_ROWS + headerRows + 1,
  });
  for (const e of result.errors) {
    if (e.type !== 'Quotes') continue;
    // papaparse points just past the opening quote of the faulty field.
    const at = lineColumn(text, Math.max((e.index ?? 1) - 1, 0));
    const what = e.code === 'MissingQuotes' ? 'the quoted field starting here is never closed' : 'the quoted field starting here has characters after its closing quote';
    throw new ToolError('PARSE_ERROR', `Invalid CSV at line ${at.line}, column ${at.column}: ${what}`, { ...at, record: (e.row ?? 0) + 1 });
  }
  const data = result.data;
  // The line break that ends the text leaves a last empty row behind.
  const lastRow = data[data.length - 1];
  if (lastRow && lastRow.length === 1 && lastRow[0] === '') data.pop();
  if (data.length - headerRows > MAX_ROWS) throw tooManyRows(`more than ${MAX_ROWS}`);
  let width = 0;
  for (let r = 0; r < data.length; r++) {
    const len = data[r]!.length;
    if (len > width) width = len;
  }
  if (width > MAX_COLUMNS) throw tooManyColumns(width);

  let columns: string[];
  if (opts.header) {
    const head = data[0] ?? [];
    columns = uniqueColumns(head);
  } else {
    columns = positionalColumns(width);
  }
  const n = columns.length;
  const total = data.length - headerRows;
  // papaparse's row arrays are typed in place and become the records: no second allocation.
  const records: unknown[][] = [];
  for (let r = headerRows; r < data.length; r++) {
    const raw = data[r] as unknown[];
    const len = raw.length;
    // A blank line between rows is skipped; in a one-column table it is a null value.
    if (len === 1 && n > 1 && raw[0] === '') continue;
    if (len > n) {
      for (let j = n; j < len; j++) {
        if (raw[j] !== '') {
          throw new ToolError('PARSE_ERROR', `Record ${r + 1} has ${len} fields but the header names ${n} columns`, {
            record: r + 1,
          });
        }
      }
      raw.length = n;
    }
    if (!opts.untyped) for (let j = 0; j < len && j < n; j++) raw[j] = typeCell(raw[j] as string);
    for (let j = len; j < n; j++) raw.push(null);
    records.push(raw);
    if (opts.onRows && (r & 0x3fff) === 0) await opts.onRows(r, total);
  }
  return opts.untyped ? { columns, records, untyped: true } : { columns, records };
}

/**
 * Refuses, before papaparse materialises them, lines with more fields than MAX_COLUMNS. Only
 * lines long enough to hold that many are counted, and only unquoted ones (where a delimiter
 * always separates fields); quoted ones are left to the exact check after parsing.
 */
function refuseWideLines(text: string, delimiter: string): void {
  const dc = delimiter.charCodeAt(0);
  const len = text.length;
  let nextLf = -1;
  let nextCr = -1;
  for (let start = 0; start < len; ) {
    // Lines end at LF, CRLF or a lone CR; each indexOf result is reused until passed.
    if (nextLf < start) nextLf = text.indexOf('\n', start) >>> 0;
    if (nextCr < start) nextCr = text.indexOf('\r', start) >>> 0;
    const end = Math.min(nextLf, nextCr, len);
    if (end - start >= MAX_COLUMNS) {
      let fields = 1;
      let quoted = false;
      for (let i = start; i < end; i++) {
        const c = text.charCodeAt(i);
        if (c === dc) fields++;
        else if (c === 34) {
          quoted = true;
          break;
        }
      }
      if (!quoted && fields > MAX_COLUMNS) throw tooManyColumns(fields);
    }
    start = end + 1;
  }
}

/**
 * RFC 4180 text of a table: fields holding the delimiter, a quote, CR or LF (or starting or
 * ending with a space) are quoted, quotes doubled; records end with CRLF.
 */
export function generateDelimited(table: Table, delimiter: string, header: boolean): string {
  const parts: string[] = [];
  let size = 0;
  const dc = delimiter.charCodeAt(0);
  const line = (cells: readonly unknown[]): void => {
    let s = '';
    for (let j = 0; j < cells.length; j++) {
      if (j > 0) s += delimiter;
      s += quote(cellText(cells[j]), dc);
    }
    s += '\r\n';
    size += s.length;
    if (size > MAX_OUTPUT_CHARS) throw outputTooLarge();
    parts.push(s);
  };
  if (header) line(table.columns);
  for (const rec of table.records) line(rec);
  return parts.join('');
}

function quote(s: string, dc: number): string {
  const len = s.length;
  if (len === 0) return s;
  let needs = s.charCodeAt(0) === 32 || s.charCodeAt(len - 1) === 32;
  if (!needs) {
    for (let i = 0; i < len; i++) {
      const c = s.charCodeAt(i);
      if (c === dc || c === 34 || c === 10 || c === 13) {
        needs = true;
        break;
      }
    }
  }
  return needs ? `"${s.replaceAll('"', '""')}"` : s;
}
