import { z } from 'zod';
import YAML from 'yaml';
import { ToolError } from '../../errors.js';
import { defineTool } from '../../registry.js';
import { depthExceeds, lineColumn, MAX_DEPTH } from '../shared.js';
import { jsonErrorOffset } from '../../lib/json-locate.js';

const Direction = z.enum(['auto', 'json2yaml', 'yaml2json']);

/** Largest input accepted (characters); well under the 1 MiB body limit's worst case. */
export const JSON_YAML_MAX_INPUT = 1_000_000;

function parseJson(input: string): unknown {
  try {
    return JSON.parse(input);
  } catch (err) {
    const off = jsonErrorOffset(input);
    const at = lineColumn(input, off < 0 ? input.length : off);
    const msg = err instanceof Error ? err.message : 'Invalid JSON';
    throw new ToolError('PARSE_ERROR', `Invalid JSON at line ${at.line}, column ${at.column}: ${msg}`, at);
  }
}

/**
 * Nesting depth of a YAML text, read from yaml's CST parser (a stack machine, not recursive)
 * with an explicit stack. The composer that builds values IS recursive: on 10k-deep input it
 * overflows the stack, and an overflow that lands inside V8's regexp compiler kills the whole
 * process (seen here). So depth is checked before composing.
 */
export function yamlDepth(src: string): number {
  let max = 0;
  for (const token of new YAML.Parser().parse(src)) {
    const stack: Array<[unknown, number]> = [[token, 0]];
    while (stack.length) {
      const [v, d] = stack.pop()!;
      if (typeof v !== 'object' || v === null) continue;
      const t = (v as { type?: string }).type;
      const depth = t === 'block-map' || t === 'block-seq' || t === 'flow-collection' ? d + 1 : d;
      if (depth > max) max = depth;
      if (max > MAX_DEPTH) return max;
      for (const c of Array.isArray(v) ? v : Object.values(v)) if (typeof c === 'object' && c !== null) stack.push([c, depth]);
    }
  }
  return max;
}

/**
 * Refuses a map with two equal scalar keys (yaml's own `uniqueKeys` check compares every new key
 * with every earlier one: 40k keys took 6 s of blocked event loop). One Set per map instead;
 * same rule as yaml's: scalar keys with `===` values (so NaN never collides), other keys never.
 */
function duplicateKey(doc: YAML.Document.Parsed): YAML.Scalar | undefined {
  let found: YAML.Scalar | undefined;
  YAML.visit(doc, {
    Map(_key, map) {
      const seen = new Set<unknown>();
      for (const pair of map.items) {
        const k = pair.key;
        if (!YAML.isScalar(k) || Number.isNaN(k.value)) continue;
        if (seen.has(k.value)) {
          found = k;
          return YAML.visit.BREAK;
        }
        seen.add(k.value);
      }
      return undefined;
    },
  });
  return found;
}

function parseYaml(input: string): unknown {
  if (yamlDepth(input) > MAX_DEPTH) throw new ToolError('PARSE_ERROR', `YAML is nested too deeply (limit ${MAX_DEPTH} levels)`);
  let docs: YAML.Document.Parsed[];
  try {
    // Not prettyErrors: it copies the whole source line for every error, quadratic on a long
    // line full of errors ('&a '.repeat(80_000) took 14 s). Only the first error is reported,
    // and its position is computed once below. Not uniqueKeys either: see duplicateKey().
    // yaml makes an Error per problem, up to one per character: without stack traces
    // ('}'.repeat(1e6) went from 6.8 s to 1.8 s). Synchronous, so restored before anyone else runs.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      docs = YAML.parseAllDocuments(input, { uniqueKeys: false, prettyErrors: false }) as YAML.Document.Parsed[];
    } finally {
      Error.stackTraceLimit = limit;
    }
  } catch (err) {
    throw yamlError(err, input);
  }
  if (!Array.isArray(docs)) docs = [docs];
  const values: unknown[] = [];
  for (const doc of docs) {
    const e = doc.errors[0];
    if (e) throw yamlError(e, input);
    const dup = duplicateKey(doc);
    if (dup) throw yamlError(new YAML.YAMLParseError([dup.range?.[0] ?? 0, dup.range?.[1] ?? 0], 'DUPLICATE_KEY', 'Map keys must be unique'), input);
    try {
      // maxAliasCount bounds alias expansion: a "billion laughs" document is refused, not expanded.
      values.push(doc.toJS({ maxAliasCount: 100 }));
    } catch (err) {
      throw yamlError(err, input);
    }
  }
  // Several documents (`---`) become an array of documents; one document is its value.
  return values.length === 1 ? values[0] : values.length === 0 ? null : values;
}

function yamlError(err: unknown, input: string): ToolError {
  if (err instanceof RangeError) return new ToolError('PARSE_ERROR', `YAML is nested too deeply (limit ${MAX_DEPTH})`);
  if (err instanceof YAML.YAMLError) {
    const pos = lineColumn(input, err.pos[0]);
    const first = `${err.message.split('\n')[0] ?? err.message} at line ${pos.line}, column ${pos.column}`;
    if (/alias/i.test(err.message) && /count|limit|resource/i.test(err.message)) {
      return new ToolError('PARSE_ERROR', `YAML alias expansion refused: ${first}`, pos);
    }
    return new ToolError('PARSE_ERROR', `Invalid YAML: ${first}`, pos);
  }
  if (err instanceof Error && /alias/i.test(err.message)) {
    return new ToolError('PARSE_ERROR', `YAML alias expansion refused: ${err.message}`);
  }
  return new ToolError('PARSE_ERROR', 'Invalid YAML');
}

function checkDepth(value: unknown): void {
  if (depthExceeds(value, MAX_DEPTH)) throw new ToolError('PARSE_ERROR', `Input is nested too deeply (limit ${MAX_DEPTH} levels)`);
}

export const jsonYamlConvert = defineTool({
  name: 'json_yaml_convert',
  title: 'JSON ⇄ YAML converter',
  description:
    'Convert JSON to YAML or YAML to JSON. With direction "auto" the input is treated as JSON if it parses as JSON, otherwise as YAML. Parse errors report line and column. Several YAML documents become a JSON array.',
  input: z.object({
    input: z.string().max(JSON_YAML_MAX_INPUT).describe('The JSON or YAML text to convert'),
    direction: Direction.default('auto').describe('auto (detect), json2yaml or yaml2json'),
    indent: z.number().int().min(1).max(8).default(2).describe('Indentation width of the output, 1-8 spaces'),
  }),
  output: z.object({
    result: z.string().describe('The converted text'),
    direction: z.enum(['json2yaml', 'yaml2json']).describe('The direction that was applied'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  cost: 'cpu',
  rest: { method: 'POST', path: '/api/json-yaml' },
  example: { input: '{"name":"devtoolbox","tags":["mcp","rest"]}', direction: 'auto' },
  handler: ({ input, direction, indent }) => {
    let applied: 'json2yaml' | 'yaml2json';
    let value: unknown;
    if (direction === 'json2yaml') {
      applied = 'json2yaml';
      value = parseJson(input);
    } else if (direction === 'yaml2json') {
      applied = 'yaml2json';
      value = parseYaml(input);
    } else {
      try {
        value = JSON.parse(input);
        applied = 'json2yaml';
      } catch {
        applied = 'yaml2json';
        value = parseYaml(input);
      }
    }
    checkDepth(value);
    try {
      const result =
        applied === 'json2yaml'
          ? YAML.stringify(value, { indent, lineWidth: 0, aliasDuplicateObjects: false })
          : (JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), indent) ?? 'null');
      return { result, direction: applied };
    } catch (err) {
      if (err instanceof RangeError) throw new ToolError('PARSE_ERROR', `Input is nested too deeply (limit ${MAX_DEPTH} levels)`);
      throw err;
    }
  },
});
