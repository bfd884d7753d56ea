import { z } from 'zod';
import type * as JsonPath from 'jsonpath-rfc9535';
import { ToolError } from '../../errors.js';
import { lazyRequire } from '../../lib/lazy-require.js';
import { defineTool } from '../../registry.js';
import { checkJsonSize, parseJsonField } from './json-text.js';
import { checkWellTyped, groupAndChains } from './jsonpath-checks.js';

/** Largest `input` accepted (characters): a 2 MB API answer fits, on the large body limit. */
export const JSON_QUERY_MAX_INPUT = 5_000_000;
/** Longest query (characters). */
export const JSON_QUERY_MAX_QUERY = 4_096;
/** Largest result, as JSON text (characters): measured before it is built. */
export const JSON_QUERY_MAX_OUTPUT = 8_000_000;

/** The subset of jmespath 0.16 used here (it ships no types). */
interface JmesPath {
  search(data: unknown, expression: string): unknown;
}

// Both evaluate a parsed syntax tree over the data: neither ever turns a string into code
// (unlike jsonpath-plus and jsonpath, CVE-2024-21534 and CVE-2025-1302).
const jsonpath = lazyRequire<typeof JsonPath>('jsonpath-rfc9535');
const jmespath = lazyRequire<JmesPath>('jmespath');
const jsonpathParser = lazyRequire<{ default: (query: string) => unknown }>('jsonpath-rfc9535/parser');

const Language = z.enum(['jsonpath', 'jmespath']);

/**
 * A node's location as an RFC 9535 normalized path (`$['store']['book'][0]`): the library hands
 * the keys already escaped as §2.7 requires (its own joiner is not exported).
 */
export function normalizedPath(path: ReadonlyArray<string | number>): string {
  let out = '$';
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : `['${seg}']`;
  return out;
}

/** A query error of either library as a 422 naming the language (their messages say where). */
function queryError(language: string, err: unknown): ToolError {
  const message = err instanceof Error ? err.message : String(err);
  return new ToolError('PARSE_ERROR', `Invalid ${language === 'jsonpath' ? 'JSONPath (RFC 9535)' : 'JMESPath'} query: ${message.split('\n')[0] ?? message}`, { language });
}

/** RFC 9535 nodelist: the values and their normalized paths, in document order. */
export function runJsonPath(document: unknown, query: string): { values: unknown[]; paths: string[] } {
  const values: unknown[] = [];
  const paths: string[] = [];
  const fixed = groupAndChains(query);
  checkWellTyped(jsonpathParser().default(fixed));
  jsonpath().exec(document as JsonPath.JsonValue, fixed, (v, p) => {
    values.push(v);
    paths.push(normalizedPath(p));
  });
  return { values, paths };
}

export const jsonQuery = defineTool({
  name: 'json_query',
  title: 'JSON query (JSONPath RFC 9535 / JMESPath)',
  description:
    'Pull values out of a JSON document with a JSONPath query (RFC 9535, the default: answers the list of matched values and their normalized paths) or a JMESPath expression (answers its one value). Use it instead of reading a large JSON answer by eye. Queries are parsed, never run as code.',
  input: z.object({
    input: z.string().max(JSON_QUERY_MAX_INPUT).describe('The JSON document (text)'),
    query: z.string().min(1).max(JSON_QUERY_MAX_QUERY).describe('The query, e.g. "$.store.book[?@.price < 10].title" (JSONPath) or "store.book[?price < `10`].title" (JMESPath)'),
    language: Language.default('jsonpath').describe('jsonpath (RFC 9535, default) or jmespath'),
  }),
  output: z.object({
    language: Language.describe('The query language applied'),
    result: z.unknown().describe('JSONPath: the list of matched values (document order); JMESPath: the expression\'s value (null when nothing matched)'),
    paths: z.array(z.string()).optional().describe('JSONPath only: the normalized path of each matched value (RFC 9535 section 2.7), e.g. "$[\'a\'][0]"'),
    count: z.number().int().optional().describe('JSONPath only: how many nodes matched'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  cost: 'cpu',
  rest: { method: 'POST', path: '/api/json-query', bodyLimit: 'large' },
  example: { input: '{"store":{"book":[{"title":"A","price":8},{"title":"B","price":22}]}}', query: '$.store.book[?@.price < 10].title', language: 'jsonpath' },
  handler: ({ input, query, language }) => {
    const document = parseJsonField(input, 'input');
    if (language === 'jmespath') {
      let value: unknown;
      try {
        value = jmespath().search(document, query);
      } catch (err) {
        if (err instanceof RangeError) throw new ToolError('PARSE_ERROR', 'The query is nested too deeply');
        throw queryError(language, err);
      }
      checkJsonSize(value, 0, JSON_QUERY_MAX_OUTPUT, 'result');
      return { language, result: value ?? null };
    }
    let found: { values: unknown[]; paths: string[] };
    try {
      found = runJsonPath(document, query);
    } catch (err) {
      if (err instanceof ToolError) throw err;
      if (err instanceof RangeError) throw new ToolError('PARSE_ERROR', 'The query is nested too deeply');
      throw queryError(language, err);
    }
    checkJsonSize([found.values, found.paths], 0, JSON_QUERY_MAX_OUTPUT, 'result');
    return { language, result: found.values, paths: found.paths, count: found.values.length };
  },
});
