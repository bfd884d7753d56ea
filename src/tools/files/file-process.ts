import { z } from 'zod';
import { ToolError } from '../../errors.js';
import { defineTool, type ToolContext } from '../../registry.js';
import { depthExceeds, MAX_DEPTH } from '../shared.js';
import { analyzeTable, type ColumnProfile } from './analyze.js';
import { decodeContent, detectFormat, encodeContent, type Encoding, type Format } from './content.js';
import { generateDelimited, guessDelimiter, parseDelimited } from './delimited.js';
import { generateJson, parseJson } from './json.js';
import { applySteps, MAX_STEPS, Step } from './transform.js';
import { MAX_CONTENT_CHARS, MAX_OUTPUT_CHARS, MAX_ROWS, outputTooLarge, rowObjects, tableFromObjects, type Table } from './table.js';
import { generateXml, parseXml } from './xml.js';

const Action = z.enum(['parse', 'generate', 'analyze', 'convert', 'transform']);
const FormatIn = z.enum(['csv', 'tsv', 'json', 'xml', 'auto']);
const FormatOut = z.enum(['csv', 'tsv', 'json', 'xml']);
const CellValue = z.union([z.string(), z.number(), z.boolean(), z.null()]);

const isRow = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v);

// Rows pass through as the very objects given (z.record would copy them and drop a
// `__proto__` key), with a JSON Schema that still says "object of cells".
const RowIn = z
  .any()
  .refine(isRow, 'Each row must be a JSON object')
  .meta({ type: 'object', additionalProperties: {}, description: 'One row: column name → value (string, number, boolean or null; nested values are written as JSON text)' });
const RowOut = z
  .any()
  .refine(isRow, 'Each row must be an object')
  .meta({ type: 'object', additionalProperties: {}, description: 'One row: column name → typed value (string, number, boolean or null; nested JSON values as given)' });

const NumericStats = z.object({
  min: z.number(),
  max: z.number(),
  mean: z.number(),
  median: z.number(),
  stddev: z.number().nullable().describe('Sample standard deviation (divides by n − 1); 0 for one value; null if it exceeds the range of a double (±1.8e308)'),
  sum: z.number().nullable().describe('The sum; null if it exceeds the range of a double (±1.8e308) — min, max, mean and median are still given'),
});
const TextStats = z.object({
  minLength: z.number().int(),
  maxLength: z.number().int(),
  top: z.array(z.object({ value: CellValue, count: z.number().int() })).describe('The 5 most frequent values, most frequent first'),
});
const DateStats = z.object({ min: z.string().describe('Earliest date, as written'), max: z.string().describe('Latest date, as written') });
const BooleanStats = z.object({ trueCount: z.number().int(), falseCount: z.number().int() });

const ColumnProfileSchema = z.object({
  name: z.string(),
  type: z.enum(['integer', 'number', 'boolean', 'date', 'string', 'empty', 'mixed']),
  nullCount: z.number().int(),
  uniqueCount: z.number().int().describe('Distinct non-null values'),
  stats: z
    .union([NumericStats, DateStats, BooleanStats, TextStats, z.null()])
    .describe('integer/number: min, max, mean, median, stddev, sum; string/mixed: minLength, maxLength, top; date: min, max; boolean: trueCount, falseCount; empty: null'),
});

const B64 = '[A-Za-z0-9+/_-][\\t\\n\\r ]*';
const QUADS = `(?:(?:${B64}){4})*`;
/**
 * What `decodeContent` accepts as base64, as a JSON Schema pattern: base64 or base64url
 * characters with tabs, line breaks and spaces anywhere, then up to two `=`, in a total count
 * (padding included) that is not 1 more than a multiple of 4. A test checks it against the decoder.
 */
export const BASE64_CONTENT_PATTERN =
  `^[\\t\\n\\r ]*(?:${QUADS}(?:(?:${B64}){2,3})?|${QUADS}(?:${B64}){1,3}=[\\t\\n\\r ]*|` +
  `${QUADS}(?:(?:${B64}){1,2})?=[\\t\\n\\r ]*=[\\t\\n\\r ]*)$`;
/** The delimiter's refinement as a pattern: one character, not a quote or a line break. */
const DELIMITER_PATTERN = '^[^"\\r\\n]$';

const Input = z.object({
  action: Action.describe('parse: content → rows; analyze: content → per-column profile; convert: content in one format → another; generate: data rows → content; transform: content → steps (select, filter, sort, dedupe, group, limit) → content'),
  content: z
    .string()
    .max(MAX_CONTENT_CHARS)
    .optional()
    .describe('The CSV, TSV, JSON or XML text (base64 when encoding is base64). Required for parse, analyze, convert and transform'),
  data: z
    .array(RowIn)
    .max(MAX_ROWS)
    .optional()
    .describe('Rows to write. Required for generate. The union of their keys, in first-seen order, becomes the columns'),
  format: FormatIn.default('auto').describe('Format of content (parse, analyze; auto detects it) or of the output (generate; auto means csv)'),
  from: FormatIn.optional().describe('convert, transform: the format of content (default: format, else auto-detected)'),
  to: FormatOut.optional().describe('convert: the format to produce (required); transform: the format to produce (default: the format read)'),
  steps: z
    .array(Step)
    .min(1)
    .max(MAX_STEPS)
    .optional()
    .describe(`transform: the steps, applied in order, each to the table the previous one left (required for transform, at most ${MAX_STEPS})`),
  encoding: z.enum(['utf-8', 'base64']).default('utf-8').describe('How content is encoded, in the input and in the output content'),
  delimiter: z
    .string()
    .length(1)
    .refine((d) => d !== '"' && d !== '\r' && d !== '\n', 'The delimiter cannot be a quote or a line break')
    .optional()
    .meta({
      pattern: DELIMITER_PATTERN,
      description: 'CSV field delimiter, one character, not a quote or a line break (default: guessed among , ; | tab when reading, , when writing)',
    }),
  header: z.boolean().default(true).describe('CSV/TSV: the first line holds the column names (reading) / write a header line (writing)'),
}).meta({
  // content is base64 exactly when encoding says so: JSON Schema's if/then.
  allOf: [{ if: { properties: { encoding: { const: 'base64' } }, required: ['encoding'] }, then: { properties: { content: { pattern: BASE64_CONTENT_PATTERN } } } }],
});

const Output = z.object({
  action: Action.describe('The action performed'),
  format: FormatOut.optional().describe('parse/analyze: the format read (the detected one with auto); generate: the format written'),
  delimiter: z.string().optional().describe('parse/analyze of CSV or TSV: the delimiter used'),
  from: FormatOut.optional().describe('convert, transform: the format read'),
  to: FormatOut.optional().describe('convert, transform: the format written'),
  columns: z
    .union([z.array(z.string()), z.array(ColumnProfileSchema)])
    .optional()
    .describe('parse, transform: the column names in order (transform: of the result); analyze: one profile per column'),
  rows: z.array(RowOut).optional().describe('parse: the rows, every column present, values typed'),
  content: z.string().optional().describe('generate/convert/transform: the produced text (base64 when encoding is base64)'),
  rowCount: z.number().int().describe('Number of data rows (transform: of the result)'),
  columnCount: z.number().int().optional().describe('analyze: number of columns'),
});

type In = z.output<typeof Input>;
type Out = z.output<typeof Output>;

interface Read {
  table: Table;
  format: Format;
  delimiter?: string;
}

async function read(text: string, format: z.output<typeof FormatIn>, input: In, report: (p: number, msg: string) => Promise<void>): Promise<Read> {
  let fmt = format === 'auto' ? detectFormat(text) : format;
  // A given delimiter decides between CSV and TSV for delimited text.
  if (format === 'auto' && (fmt === 'csv' || fmt === 'tsv') && input.delimiter) fmt = input.delimiter === '\t' ? 'tsv' : 'csv';
  await report(10, `reading ${fmt}`);
  switch (fmt) {
    case 'json':
      return { table: parseJson(text), format: fmt };
    case 'xml':
      return { table: parseXml(text), format: fmt };
    default: {
      const delimiter = fmt === 'tsv' ? '\t' : (input.delimiter ?? guessDelimiter(text));
      const table = await parseDelimited(text, {
        delimiter,
        header: input.header,
        untyped: input.action === 'analyze',
        onRows: (done, total) => report(40 + Math.floor((done / Math.max(total, 1)) * 40), `typed ${done} of ${total} rows`),
      });
      return { table, format: fmt, delimiter };
    }
  }
}

/** Characters per cell a format spends on the column name, to refuse an answer too large to build. */
function nameOverhead(table: Table, perName: (name: string) => number): number {
  let chars = 0;
  for (const c of table.columns) chars += perName(c);
  return table.records.length * chars;
}

function write(table: Table, format: Format, input: In): string {
  switch (format) {
    case 'csv':
      return generateDelimited(table, input.delimiter ?? ',', input.header);
    case 'tsv':
      return generateDelimited(table, '\t', input.header);
    case 'json':
      if (nameOverhead(table, (c) => c.length + 8) > MAX_OUTPUT_CHARS) throw outputTooLarge();
      return generateJson(table);
    case 'xml':
      if (nameOverhead(table, (c) => 2 * c.length + 10) > MAX_OUTPUT_CHARS) throw outputTooLarge();
      return generateXml(table);
  }
}

async function run(input: In, ctx: ToolContext): Promise<Out> {
  const report = async (p: number, msg: string): Promise<void> => {
    try {
      await ctx.progress(p, 100, msg);
    } catch {
      // Progress is best effort; a client that went away does not fail the call.
    }
  };
  const { action } = input;
  const encoding: Encoding = input.encoding;
  // The input rules (below) guarantee data for generate, content for the others and to for convert.
  if (action === 'generate') {
    const data = input.data!;
    if (depthExceeds(data, MAX_DEPTH)) throw new ToolError('INVALID_INPUT', `data is nested too deeply (limit ${MAX_DEPTH} levels)`);
    const table = tableFromObjects(data, 'data row');
    const format: Format = input.format === 'auto' ? 'csv' : input.format;
    await report(50, `writing ${format}`);
    const content = encodeContent(write(table, format, input), encoding);
    await report(100, 'done');
    return { action, format, content, rowCount: table.records.length };
  }
  const text = decodeContent(input.content!, encoding);
  await report(5, 'decoded');
  const source = action === 'convert' || action === 'transform' ? (input.from ?? input.format) : input.format;
  const { table, format, delimiter } = await read(text, source, input, report);
  await report(80, `read ${table.records.length} rows`);
  const rowCount = table.records.length;
  const withDelimiter = delimiter === undefined ? {} : { delimiter };
  let out: Out;
  switch (action) {
    case 'parse': {
      if (nameOverhead(table, (c) => c.length + 6) + text.length > MAX_OUTPUT_CHARS) throw outputTooLarge();
      out = { action, format, ...withDelimiter, columns: table.columns, rows: rowObjects(table), rowCount };
      break;
    }
    case 'analyze': {
      const columns: ColumnProfile[] = analyzeTable(table);
      out = { action, format, ...withDelimiter, rowCount, columnCount: table.columns.length, columns };
      break;
    }
    case 'convert': {
      const to = input.to!;
      out = { action, from: format, to, content: encodeContent(write(table, to, input), encoding), rowCount };
      break;
    }
    case 'transform': {
      await report(85, `applying ${input.steps!.length} steps`);
      const result = applySteps(table, input.steps!);
      const to = input.to ?? format;
      await report(95, `writing ${to}`);
      out = { action, from: format, to, columns: result.columns, content: encodeContent(write(result, to, input), encoding), rowCount: result.records.length };
      break;
    }
  }
  await report(100, 'done');
  return out;
}

export const fileProcess = defineTool({
  name: 'file_process',
  view: 'table',
  title: 'CSV / TSV / JSON / XML processor',
  description:
    'Parse, analyze, convert or generate tabular data in CSV, TSV, JSON (array of objects) and XML (<rows><row>…</row></rows> or any repeated element under a root). ' +
    'parse returns typed rows (numbers and booleans typed, empty cells null, leading-zero values such as 007 kept as strings); ' +
    'analyze profiles each column (type, nulls, distinct values, numeric or text statistics); convert turns any format into any other; ' +
    'generate writes rows (the union of their keys becomes the columns); transform applies declarative steps in order — select (columns, renames), filter (column, operator, value), sort (keys, numeric-aware), dedupe, group (count/sum/min/max/mean), limit — and writes any format. The input format is auto-detected by default. ' +
    `Limits: ${MAX_ROWS} rows, 1000 columns, 10 MiB of content.`,
  input: Input,
  output: Output,
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  longRunning: true,
  cost: 'cpu',
  rest: { method: 'POST', path: '/api/file-process', bodyLimit: 'large' },
  inputRules: [
    { when: { field: 'action', in: ['parse', 'analyze', 'convert', 'transform'] }, require: ['content'] },
    { when: { field: 'action', in: ['transform'] }, require: ['steps'] },
    { when: { field: 'action', in: ['generate'] }, require: ['data'] },
    { when: { field: 'action', in: ['convert'] }, require: ['to'] },
  ],
  example: { action: 'parse', content: 'name,age,zip\nAda,36,02134\nLinus,,94105\n', format: 'auto' },
  handler: run,
});
