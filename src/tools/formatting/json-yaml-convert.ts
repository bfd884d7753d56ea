import { z } from 'zod';
import type YAML from 'yaml';
import { ToolError } from '../../errors.js';
import { lazyRequire } from '../../lib/lazy-require.js';
import { defineTool } from '../../registry.js';
import { depthExceeds, lineColumn, MAX_DEPTH } from '../shared.js';
import { wholeCodePoints } from '../../lib/code-points.js';
import { jsonErrorOffset, jsonParseMessage } from '../../lib/json-locate.js';

const Direction = z.enum(['auto', 'json2yaml', 'yaml2json']);

/** yaml, loaded by the first call (≈ 0.02–0.05 s that start-up need not spend). */
const yaml = lazyRequire<typeof YAML>('yaml');

/** Largest input accepted (characters); well under the 1 MiB body limit's worst case. */
export const JSON_YAML_MAX_INPUT = 1_000_000;
/**
 * Largest result (characters). Without it, 1 MB of nested flow YAML (`[`×255, 500k items,
 * `]`×255) became 259 MB of indented JSON: indentation grows with depth, aliases repeat what
 * they name. The size is computed before the text is built (see textSize).
 */
export const JSON_YAML_MAX_OUTPUT = 16 * 1024 * 1024;

/** Size of a value's text at depth 0, and how many of its lines the parent's indentation prefixes. */
interface TextSize {
  chars: number;
  lines: number;
}

/**
 * The length of `JSON.stringify(value, bigints as strings, indent)` — exactly — or, with `yaml`,
 * an estimate of YAML.stringify's block output (the same layout: a line per item, `indent` more
 * spaces per level; multi-line strings become block scalars with every line indented), computed
 * without building either text. A value's text at depth d is `chars + indent·d·lines`, so each
 * object is measured once however many aliases share it: the result counts every repetition
 * while the work stays linear in the parsed document.
 */
export function textSize(value: unknown, indent: number, yaml = false): number {
  const memo = new Map<object, TextSize>();
  const measure = (v: unknown): TextSize | undefined => {
    switch (typeof v) {
      case 'string': {
        const chars = JSON.stringify(v).length;
        if (!yaml) return { chars, lines: 0 };
        let breaks = 0;
        for (let i = v.indexOf('\n'); i >= 0; i = v.indexOf('\n', i + 1)) breaks++;
        return breaks === 0 ? { chars, lines: 0 } : { chars: chars + 4 + (breaks + 1) * indent, lines: breaks + 1 };
      }
      case 'number':
        return { chars: Number.isFinite(v) ? String(v).length : 4, lines: 0 };
      case 'bigint':
        return { chars: String(v).length + 2, lines: 0 };
      case 'boolean':
        return { chars: v ? 4 : 5, lines: 0 };
      case 'object': {
        if (v === null) return { chars: 4, lines: 0 };
        const known = memo.get(v);
        if (known) return known;
        let chars = 0;
        let lines = 0;
        let items = 0;
        const add = (size: TextSize, prefix: number) => {
          // The item's line: indentation one level deeper, its own text one level deeper.
          chars += indent + prefix + size.chars + indent * size.lines;
          lines += 1 + size.lines;
          items++;
        };
        if (Array.isArray(v)) {
          for (const item of v) add(measure(item) ?? { chars: 4, lines: 0 }, 0);
        } else {
          for (const key of Object.keys(v)) {
            const size = measure((v as Record<string, unknown>)[key]);
            if (size) add(size, JSON.stringify(key).length + 2);
          }
        }
        // "[\n" items joined by ",\n" "\n" indentation "]"; the closing line is indented too.
        const size = items === 0 ? { chars: 2, lines: 0 } : { chars: chars + 4 + 2 * (items - 1), lines: lines + 1 };
        memo.set(v, size);
        return size;
      }
      default:
        return undefined; // undefined, functions, symbols: left out of objects, null in arrays
    }
  };
  return (measure(value) ?? { chars: 4, lines: 0 }).chars;
}

function outputTooLarge(chars: number): ToolError {
  return new ToolError('INVALID_INPUT', `The result would be ${chars} characters; the limit is ${JSON_YAML_MAX_OUTPUT} (16 MiB). Convert smaller parts, or with a smaller indent`, {
    limit: JSON_YAML_MAX_OUTPUT,
  });
}

function parseJson(input: string): unknown {
  try {
    return JSON.parse(input);
  } catch (err) {
    const off = jsonErrorOffset(input);
    const at = lineColumn(input, off < 0 ? input.length : off);
    const msg = err instanceof Error ? jsonParseMessage(err.message, input, off) : 'Invalid JSON';
    throw new ToolError('PARSE_ERROR', `Invalid JSON at line ${at.line}, column ${at.column}: ${msg}`, at);
  }
}

/**
 * Nesting depth of one CST token of yaml's parser (a stack machine, not recursive), walked with
 * an explicit stack. The composer that builds values IS recursive: on 10k-deep input it
 * overflows the stack, and an overflow that lands inside V8's regexp compiler kills the whole
 * process (seen here). So each token's depth is checked before it is composed.
 */
function tokenDepth(token: unknown): number {
  let max = 0;
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
  return max;
}

/**
 * Refuses a map with two equal scalar keys (yaml's own `uniqueKeys` check compares every new key
 * with every earlier one: 40k keys took 6 s of blocked event loop). One Set per map instead;
 * same rule as yaml's: scalar keys with `===` values (so NaN never collides), other keys never.
 */
function duplicateKey(doc: YAML.Document.Parsed): YAML.Scalar | undefined {
  let found: YAML.Scalar | undefined;
  yaml().visit(doc, {
    Map(_key, map) {
      const seen = new Set<unknown>();
      for (const pair of map.items) {
        const k = pair.key;
        if (!yaml().isScalar(k) || Number.isNaN(k.value)) continue;
        if (seen.has(k.value)) {
          found = k;
          return yaml().visit.BREAK;
        }
        seen.add(k.value);
      }
      return undefined;
    },
  });
  return found;
}

/**
 * What yaml's Composer keeps between tokens: private in its types, plain fields at run time.
 * yaml has no public way to stop composing at the first error (its only per-error hook is the
 * private `onError`; `streamInfo()` shows the stream's errors but not those of the document
 * being composed, and only after a whole token), so this reads them, and package.json pins
 * yaml to a patch range (`~2.9.1`). yaml-composer-internals.test.ts fails when a release
 * changes the fields or what yamlDocuments reports; read it before widening the range.
 */
interface ComposerState {
  errors: YAML.YAMLError[];
  doc: YAML.Document.Parsed | null;
  onError: (source: unknown, code: string, message: string, warning?: boolean) => void;
}
const STOP = Symbol('first YAML error');

/** The first error so far, in the order yaml reports them (a document's own list first). */
function firstError(state: ComposerState, docs: YAML.Document.Parsed[]): YAML.YAMLError | undefined {
  for (const d of docs) if (d.errors[0]) return d.errors[0];
  return state.doc?.errors[0] ?? state.errors[0];
}

/**
 * The documents of a YAML text, in one pass of yaml's parser and composer (parseAllDocuments,
 * but stopping at the first error): yaml makes an error object per problem, up to one per
 * character, and only the first is ever reported ('}'.repeat(200_000) spent 1.3 s making
 * 200,000 of them). Each token's depth is checked before it is composed.
 */
export function yamlDocuments(input: string): YAML.Document.Parsed[] {
  // Not prettyErrors: it copies the whole source line for every error, quadratic on a long
  // line full of errors ('&a '.repeat(80_000) took 14 s); the first error's position is
  // computed once, in yamlError. Not uniqueKeys either: see duplicateKey().
  const composer = new (yaml().Composer)({ uniqueKeys: false });
  const state = composer as unknown as ComposerState;
  const record = state.onError;
  state.onError = (source, code, message, warning) => {
    record(source, code, message, warning);
    if (!warning) throw STOP;
  };
  const docs: YAML.Document.Parsed[] = [];
  const take = (it: Iterable<YAML.Document.Parsed>) => {
    try {
      for (const d of it) docs.push(d);
    } catch (err) {
      if (err !== STOP) throw err;
    }
    const e = firstError(state, docs);
    if (e) throw e;
  };
  for (const token of new (yaml().Parser)().parse(input)) {
    if (tokenDepth(token) > MAX_DEPTH) throw new ToolError('PARSE_ERROR', `YAML is nested too deeply (limit ${MAX_DEPTH} levels)`);
    take(composer.next(token) as Iterable<YAML.Document.Parsed>);
  }
  take(composer.end() as Iterable<YAML.Document.Parsed>);
  return docs;
}

function parseYaml(input: string): unknown {
  let docs: YAML.Document.Parsed[];
  // Errors without stack traces: synchronous, so restored before anyone else runs.
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    docs = yamlDocuments(input);
  } catch (err) {
    if (err instanceof ToolError) throw err;
    throw yamlError(err, input);
  } finally {
    Error.stackTraceLimit = limit;
  }
  const values: unknown[] = [];
  for (const doc of docs) {
    const dup = duplicateKey(doc);
    if (dup) throw yamlError(new (yaml().YAMLParseError)([dup.range?.[0] ?? 0, dup.range?.[1] ?? 0], 'DUPLICATE_KEY', 'Map keys must be unique'), input);
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
  if (err instanceof yaml().YAMLError) {
    const pos = lineColumn(input, err.pos[0]);
    const first = `${wholeCodePoints(err.message.split('\n')[0] ?? err.message)} at line ${pos.line}, column ${pos.column}`;
    if (/alias/i.test(err.message) && /count|limit|resource/i.test(err.message)) {
      return new ToolError('PARSE_ERROR', `YAML alias expansion refused: ${first}`, pos);
    }
    return new ToolError('PARSE_ERROR', `Invalid YAML: ${first}`, pos);
  }
  if (err instanceof Error && /alias/i.test(err.message)) {
    return new ToolError('PARSE_ERROR', `YAML alias expansion refused: ${wholeCodePoints(err.message)}`);
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
    // Measured before the text is built, and the built text checked too (the YAML size is an estimate).
    const expected = textSize(value, indent, applied === 'json2yaml');
    if (expected > JSON_YAML_MAX_OUTPUT) throw outputTooLarge(expected);
    try {
      const result =
        applied === 'json2yaml'
          ? yaml().stringify(value, { indent, lineWidth: 0, aliasDuplicateObjects: false })
          : (JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), indent) ?? 'null');
      if (result.length > JSON_YAML_MAX_OUTPUT) throw outputTooLarge(result.length);
      return { result, direction: applied };
    } catch (err) {
      if (err instanceof RangeError) throw new ToolError('PARSE_ERROR', `Input is nested too deeply (limit ${MAX_DEPTH} levels)`);
      throw err;
    }
  },
});
