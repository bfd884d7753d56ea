import { createRequire } from 'node:module';
import path from 'node:path';
import type { DialectOptions, FormatOptionsWithLanguage, SqlLanguage } from 'sql-formatter';
import { z } from 'zod';
import { ToolError } from '../../errors.js';
import { defineTool } from '../../registry.js';

/** Largest input accepted (characters): sql-formatter's parser needs ~0.5 s for 100 KB. */
export const SQL_MAX_INPUT = 100_000;
/** Most statements in one input: the parser's memory grows with the square of this count. */
export const SQL_MAX_STATEMENTS = 1000;
/** Deepest nesting of parentheses / CASE … END: the parser recurses and overflows past ~2,000. */
export const SQL_MAX_DEPTH = 100;
/**
 * Most nesting per call, each parenthesis or CASE counted at its depth (a chain of d costs
 * d(d+1)/2). sql-formatter's parser spends time on a statement in proportion to the square of its
 * nesting (≈ 9 µs of CPU per unit here: ten 99-deep statements, 49,500, ≈ 0.45 s), so 467
 * statements 99 deep — 100 KB, within every other limit — took 12 s; this bound keeps the
 * nesting part of any call near the ≈ 0.3-0.4 s that lexing and parsing 100 KB of flat SQL cost.
 */
export const SQL_MAX_NESTING = 50_000;
/** Longest result (characters): beautify indents every line by its depth. */
export const SQL_MAX_OUTPUT = 4 * 1024 * 1024;

const DIALECTS = ['sql', 'mysql', 'postgresql', 'sqlite', 'mariadb', 'bigquery', 'tsql', 'plsql'] as const;
type Dialect = (typeof DIALECTS)[number];

interface Token {
  type: string;
  raw: string;
  start: number;
  precedingWhitespace?: string;
}
interface TokenizerClass {
  new (cfg: DialectOptions['tokenizerOptions'], dialectName: string): { tokenize(input: string, params: object): Token[] };
}

/** What the tool uses of sql-formatter. */
interface SqlEngine {
  format: (typeof import('sql-formatter'))['format'];
  tokenize(input: string, dialect: Dialect): Token[];
}

let engine: SqlEngine | undefined;

/**
 * sql-formatter, loaded by the first call: ≈ 0.09 s that start-up need not spend (issue 18).
 * Its CommonJS build, required synchronously, so that the tool stays synchronous (and the
 * OpenAPI document can show its real answer to the example).
 */
function sqlEngine(): SqlEngine {
  return (engine ??= loadEngine());
}

function loadEngine(): SqlEngine {
  const requireFromHere = createRequire(import.meta.url);
  const lib = requireFromHere('sql-formatter') as typeof import('sql-formatter');
  const options: Record<Dialect, DialectOptions> = {
    sql: lib.sql,
    mysql: lib.mysql,
    postgresql: lib.postgresql,
    sqlite: lib.sqlite,
    mariadb: lib.mariadb,
    bigquery: lib.bigquery,
    tsql: lib.transactsql,
    plsql: lib.plsql,
  };
  // sql-formatter's own lexer (per-dialect strings, quoted names, comments) is what minify
  // needs, but the package exports only format(). Loaded by file path from the installed
  // package; the shape is checked here so an upgrade that moves it fails the first call and the tests.
  const Tokenizer = (requireFromHere(path.join(path.dirname(requireFromHere.resolve('sql-formatter')), 'lexer', 'Tokenizer.js')) as { default: TokenizerClass }).default;
  if (typeof Tokenizer !== 'function') throw new Error('sql-formatter internals changed: lexer/Tokenizer.js has no default export');
  const tokenizers = new Map<Dialect, InstanceType<TokenizerClass>>();
  return {
    format: lib.format,
    tokenize(input, dialect) {
      let t = tokenizers.get(dialect);
      if (!t) {
        const opts = options[dialect];
        t = new Tokenizer(opts.tokenizerOptions, opts.name);
        tokenizers.set(dialect, t);
      }
      return t.tokenize(input, {});
    },
  };
}

function sqlError(err: unknown, dialect: Dialect): ToolError {
  if (err instanceof RangeError) return new ToolError('PARSE_ERROR', 'The SQL is nested too deeply to format');
  const message = err instanceof Error ? err.message : String(err);
  const first = (message.split('\n')[0] ?? message).slice(0, 300);
  const m = /at line (\d+) column (\d+)/.exec(first);
  const hint = dialect === 'sql' ? ' (if the query is written for one database, set dialect)' : '';
  return new ToolError('PARSE_ERROR', `Invalid SQL: ${first}${hint}`, m ? { line: Number(m[1]), column: Number(m[2]) } : undefined);
}

/** Refuses inputs that would exhaust sql-formatter's parser (see the limits above). */
function checkShape(tokens: Token[]): void {
  let statements = 0;
  let depth = 0;
  let nesting = 0;
  for (const t of tokens) {
    if (t.type === 'DELIMITER' && ++statements > SQL_MAX_STATEMENTS) {
      const message = `At most ${SQL_MAX_STATEMENTS} statements per call`;
      throw new ToolError('INVALID_INPUT', message, [{ path: 'input', message }]);
    }
    if (t.type === 'OPEN_PAREN' || t.type === 'CASE') {
      if (++depth > SQL_MAX_DEPTH) throw new ToolError('PARSE_ERROR', `SQL nested deeper than ${SQL_MAX_DEPTH} levels (parentheses or CASE) is not supported`);
      nesting += depth;
    } else if (t.type === 'CLOSE_PAREN' || t.type === 'END') depth = Math.max(0, depth - 1);
  }
  if (nesting > SQL_MAX_NESTING) {
    const message = `Too much nesting for one call: each parenthesis or CASE counted at its depth adds up to ${nesting} (limit ${SQL_MAX_NESTING}); split the statements over several calls`;
    throw new ToolError('INVALID_INPUT', message, [{ path: 'input', message }]);
  }
}

const isComment = (t: Token) => t.type === 'LINE_COMMENT' || t.type === 'BLOCK_COMMENT';
// MySQL executable comments (/*! … */) and optimizer hints (/*+ … */) change what a query does.
const isDirective = (t: Token) => t.type === 'BLOCK_COMMENT' && /^\/\*[!+]/.test(t.raw);
const NO_SPACE_AFTER = new Set(['OPEN_PAREN', 'COMMA']);
const NO_SPACE_BEFORE = new Set(['CLOSE_PAREN', 'COMMA', 'DELIMITER']);

/** One line: comments dropped, whitespace squeezed, every other token byte for byte. */
export function minifySql(tokens: Token[]): string {
  let out = '';
  let prev: Token | undefined;
  let gap = false;
  for (const t of tokens) {
    if (t.type === 'EOF') continue;
    if (isComment(t) && !isDirective(t)) {
      gap = true;
      continue;
    }
    const spaced = gap || Boolean(t.precedingWhitespace);
    if (prev && spaced && !NO_SPACE_AFTER.has(prev.type) && !NO_SPACE_BEFORE.has(t.type)) out += ' ';
    // Multi-word keywords ("LEFT   JOIN", "ORDER\nBY") are one token: squeeze their inside too.
    out += t.type.startsWith('RESERVED_') ? t.raw.replace(/\s+/g, ' ') : t.raw;
    prev = t;
    gap = false;
  }
  return out;
}

function nonSpace(s: string): { chars: string[]; at: number[] } {
  const chars: string[] = [];
  const at: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (!/\s/.test(c)) {
      chars.push(c);
      at.push(i);
    }
  }
  return { chars, at };
}

/**
 * Upper-cases keywords where they stand. sql-formatter decides what is a keyword (context
 * included: `t.select` is a name); the query formatted with keywordCase upper has the input's
 * non-blank characters, one for one, differing only in the case of keywords, and those
 * characters are copied onto the input. If the formatter changed anything but blanks and case,
 * the formatted upper-case text is returned instead. (One format, not two: formatting is the
 * whole cost of this tool.)
 */
export function uppercaseInPlace(input: string, upper: string): string {
  const o = nonSpace(input);
  const u = nonSpace(upper);
  if (o.chars.length !== u.chars.length) return upper;
  const out = input.split('');
  for (let k = 0; k < o.chars.length; k++) {
    const a = o.chars[k]!;
    const b = u.chars[k]!;
    if (a === b) continue;
    if (a.toUpperCase() !== b.toUpperCase()) return upper;
    out[o.at[k]!] = b;
  }
  return out.join('');
}

/**
 * Operator keywords that some sql-formatter dialects list only as function names (mysql: `like`,
 * `rlike`, `regexp`, `is null`, `is not`, `sounds like`; sqlite: `like`, `glob`), so its
 * keywordCase leaves them lower-case. Used as an operator (after a value, or after NOT, and not
 * called with `(`) they are keywords; a bare `year` or `count` column name is never touched.
 */
const OPERATOR_WORDS = new Set(['LIKE', 'RLIKE', 'REGEXP', 'GLOB', 'MATCH', 'SOUNDS', 'IS', 'NOT', 'NULL']);
const VALUE_END = new Set(['IDENTIFIER', 'QUOTED_IDENTIFIER', 'STRING', 'NUMBER', 'VARIABLE', 'CLOSE_PAREN', 'NAMED_PARAMETER', 'QUOTED_PARAMETER', 'NUMBERED_PARAMETER', 'POSITIONAL_PARAMETER', 'CUSTOM_PARAMETER']);
export function upperOperatorWords(input: string, tokens: Token[]): string {
  const code = tokens.filter((t) => !isComment(t));
  let out = input;
  for (let i = 1; i < code.length; i++) {
    const t = code[i]!;
    if (t.type !== 'RESERVED_FUNCTION_NAME' || code[i + 1]?.type === 'OPEN_PAREN') continue;
    if (!t.raw.split(/\s+/).every((w) => OPERATOR_WORDS.has(w.toUpperCase()))) continue;
    const prev = code[i - 1]!;
    if (!VALUE_END.has(prev.type) && prev.raw.toUpperCase() !== 'NOT') continue;
    if (out.slice(t.start, t.start + t.raw.length) !== t.raw) continue;
    out = out.slice(0, t.start) + t.raw.toUpperCase() + out.slice(t.start + t.raw.length);
  }
  return out;
}

const Action = z.enum(['beautify', 'minify', 'uppercase']);

export const sqlFormat = defineTool({
  name: 'sql_format',
  title: 'SQL formatter',
  description:
    'Beautify SQL (sql-formatter), minify it to one line without comments, or upper-case its keywords in place. Identifiers, quoted names, string literals and comments are never changed. Dialects: sql, mysql, postgresql, sqlite, mariadb, bigquery, tsql, plsql.',
  input: z.object({
    input: z.string().max(SQL_MAX_INPUT).describe('The SQL text (one or more statements)'),
    action: Action.default('beautify').describe('beautify (re-layout), minify (one line, comments dropped) or uppercase (keywords upper-cased, layout kept)'),
    dialect: z.enum(DIALECTS).default('sql').describe('SQL dialect: sql (standard), mysql, postgresql, sqlite, mariadb, bigquery, tsql, plsql'),
    indent: z.number().int().min(1).max(8).default(2).describe('Spaces per level for beautify, 1-8 (default 2)'),
  }),
  output: z.object({
    action: Action.describe('The action applied'),
    result: z.string().describe('The resulting SQL'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  cost: 'cpu',
  rest: { method: 'POST', path: '/api/sql-format' },
  example: { input: "select id, name from users where status = 'active' order by name", action: 'beautify', dialect: 'postgresql' },
  handler: ({ input, action, dialect, indent }) => {
    const { tokenize, format } = sqlEngine();
    let tokens: Token[];
    try {
      tokens = tokenize(input, dialect);
    } catch (err) {
      throw sqlError(err, dialect);
    }
    checkShape(tokens);
    const options: FormatOptionsWithLanguage = { language: (dialect === 'tsql' ? 'transactsql' : dialect) as SqlLanguage, tabWidth: indent, keywordCase: 'preserve' };
    let result: string;
    try {
      // Every action parses the whole input once, so all three refuse the same broken SQL.
      if (action === 'uppercase') {
        const pre = upperOperatorWords(input, tokens);
        result = uppercaseInPlace(pre, format(pre, { ...options, keywordCase: 'upper', dataTypeCase: 'upper' }));
      } else {
        const formatted = format(input, options);
        result = action === 'beautify' ? formatted : minifySql(tokens);
      }
    } catch (err) {
      throw sqlError(err, dialect);
    }
    if (result.length > SQL_MAX_OUTPUT) {
      throw new ToolError('INVALID_INPUT', `The result would be ${result.length} characters; the limit is ${SQL_MAX_OUTPUT} (4 MiB): use a smaller indent or split the statements`, { limit: SQL_MAX_OUTPUT });
    }
    return { action, result };
  },
});
