import { z } from 'zod';
import type { Ajv as AjvCore } from 'ajv';
import type { ErrorObject, Options } from 'ajv';
import { ToolError } from '../../errors.js';
import { lazyRequire } from '../../lib/lazy-require.js';
import { defineTool } from '../../registry.js';
import { RegexSandbox } from './bounded-regex.js';
import { parseJsonField } from './json-text.js';

/** Largest `schema` or `instance` accepted (characters each). */
export const SCHEMA_MAX_INPUT = 1_000_000;
/** Most errors answered (`error_count` says how many there were). */
export const SCHEMA_MAX_ERRORS = 100;

type AjvClass = new (opts: Options) => AjvCore;
const ajv2020 = lazyRequire<{ default: AjvClass }>('ajv/dist/2020');
const ajv2019 = lazyRequire<{ default: AjvClass }>('ajv/dist/2019');
const ajv7 = lazyRequire<{ default: AjvClass }>('ajv');
const addFormats = lazyRequire<{ default: (ajv: AjvCore) => AjvCore }>('ajv-formats');

const Draft = z.enum(['2020-12', '2019-09', '7']);
type Draft = z.infer<typeof Draft>;

/** The draft a schema's `$schema` names, if it names one of ours. */
function draftOf(schema: unknown): Draft | undefined {
  const uri = typeof schema === 'object' && schema !== null ? (schema as { $schema?: unknown }).$schema : undefined;
  if (typeof uri !== 'string') return undefined;
  if (uri.includes('2020-12')) return '2020-12';
  if (uri.includes('2019-09')) return '2019-09';
  if (/draft-0?7/.test(uri)) return '7';
  return undefined;
}

/**
 * A validator for one call. Never fetches: `loadSchema` is not given and only `compile` (never
 * `compileAsync`) is used, so a remote `$ref` is an unresolved reference (422), not a request.
 * Each `pattern` runs in the call's RegexSandbox (a schema can carry `(a+)+$`).
 */
function newAjv(draft: Draft, sandbox: RegexSandbox): AjvCore {
  const Ajv = draft === '2020-12' ? ajv2020().default : draft === '2019-09' ? ajv2019().default : ajv7().default;
  const regExp = Object.assign((pattern: string, flags: string) => sandbox.compile(pattern, flags), { code: 'sandboxed' });
  const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: true, code: { regExp } });
  addFormats().default(ajv);
  return ajv;
}

const ValidationError = z.object({
  instance_path: z.string().describe('JSON Pointer to the failing part of the instance ("" = the whole)'),
  schema_path: z.string().describe('URI fragment of the failing keyword in the schema, e.g. "#/properties/age/minimum"'),
  keyword: z.string().describe('The keyword that failed'),
  message: z.string(),
  params: z.record(z.string(), z.unknown()).describe('The keyword\'s parameters (e.g. {"limit": 0})'),
});

function toError(e: ErrorObject): z.infer<typeof ValidationError> {
  return { instance_path: e.instancePath, schema_path: e.schemaPath, keyword: e.keyword, message: e.message ?? e.keyword, params: { ...e.params } };
}

/** A problem with the schema itself (not the instance), as a 422 naming the schema. */
function schemaError(err: unknown): ToolError {
  if (err instanceof ToolError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new ToolError('PARSE_ERROR', `Invalid schema: ${message.split('\n')[0] ?? message}`, { field: 'schema' });
}

export const jsonSchemaValidate = defineTool({
  name: 'json_schema_validate',
  title: 'JSON Schema validator',
  description:
    'Validate a JSON instance against a JSON Schema (drafts 2020-12, 2019-09 and 7; formats checked): valid, and every error with its instance path, schema path, keyword and message. The draft is the one named by the schema\'s $schema, else the one asked (default 2020-12). Remote $ref are never fetched.',
  input: z.object({
    schema: z.string().max(SCHEMA_MAX_INPUT).describe('The JSON Schema (JSON text)'),
    instance: z.string().max(SCHEMA_MAX_INPUT).describe('The JSON value to validate (JSON text)'),
    draft: Draft.optional().describe("2020-12, 2019-09 or 7; default: the schema's $schema, else 2020-12"),
  }),
  output: z.object({
    valid: z.boolean(),
    draft: Draft.describe('The draft the schema was read as'),
    error_count: z.number().int().describe('How many errors'),
    errors: z.array(ValidationError).describe(`The errors, at most ${SCHEMA_MAX_ERRORS}`),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  cost: 'cpu',
  rest: { method: 'POST', path: '/api/json-schema-validate' },
  example: { schema: '{"type":"object","properties":{"age":{"type":"integer","minimum":0}},"required":["age"]}', instance: '{"age":-1}' },
  handler: ({ schema, instance, draft }) => {
    const s = parseJsonField(schema, 'schema');
    const value = parseJsonField(instance, 'instance');
    if (typeof s !== 'object' && typeof s !== 'boolean') throw new ToolError('PARSE_ERROR', 'schema must be a JSON object or boolean', { field: 'schema' });
    const named = draftOf(s);
    if (draft && named && draft !== named) throw new ToolError('INVALID_INPUT', `draft is ${draft} but the schema's $schema names ${named}`, { field: 'draft' });
    const used = draft ?? named ?? '2020-12';
    const sandbox = new RegexSandbox();
    let validate: ReturnType<AjvCore['compile']>;
    try {
      validate = newAjv(used, sandbox).compile(s as object);
    } catch (err) {
      if (err instanceof RangeError) throw new ToolError('PARSE_ERROR', 'The schema is nested or recursive too deeply', { field: 'schema' });
      throw schemaError(err);
    }
    let valid: boolean;
    try {
      valid = validate(value) as boolean;
    } catch (err) {
      if (err instanceof RangeError) throw new ToolError('PARSE_ERROR', 'Validation recursed too deeply (a schema that refers to itself on every level of a deep instance)');
      throw err;
    }
    const errors = validate.errors ?? [];
    return { valid, draft: used, error_count: errors.length, errors: errors.slice(0, SCHEMA_MAX_ERRORS).map(toError) };
  },
});
