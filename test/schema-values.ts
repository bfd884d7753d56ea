// Inputs a published JSON Schema accepts, for tests that hold the server to "schema-valid ⇒
// accepted": patterns (fc.stringMatching), lengths, ranges, the object's if/then (a field the
// `then` requires or constrains is drawn again from the merged schema) and, by filtering, its
// anyOf/not and the input rules JSON Schema cannot state (`distinct`, judged with defaults applied).
import { fc } from '@fast-check/vitest';
import { inputRuleSchema, ruleIssues } from '../src/input-rules.js';
import type { AnyTool } from '../src/registry.js';

type Json = Record<string, unknown>;

/** What the tests need of an Ajv instance (draft-7 for MCP, 2020-12 for OpenAPI). */
export interface SchemaCompiler {
  compile(schema: Json): (value: unknown) => boolean;
}

// Open sets a schema names only in words: an http(s) URL, an IANA zone known to this runtime.
const ZONES = Intl.supportedValuesOf('timeZone');
function hinted(key: string): fc.Arbitrary<unknown> | undefined {
  if (/url/i.test(key)) return fc.webUrl({ validSchemes: ['http', 'https'], withQueryParameters: true });
  if (/zone/i.test(key)) return fc.constantFrom(...ZONES);
  return undefined;
}

const codePoints = (s: string) => [...s].length;

/** Values of one property schema, all of them valid against it. */
export function valueOf(schema: Json, key = '', depth = 0): fc.Arbitrary<unknown> {
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  if ('const' in schema) return fc.constant(schema.const);
  const alts = (schema.anyOf ?? schema.oneOf) as Json[] | undefined;
  if (alts) return fc.oneof(...alts.map((s) => valueOf(s, key, depth)));
  const type = Array.isArray(schema.type) ? (schema.type as string[])[0] : (schema.type as string | undefined);
  switch (type) {
    case 'string': {
      const min = (schema.minLength as number | undefined) ?? 0;
      const max = (schema.maxLength as number | undefined) ?? Infinity;
      const pattern = schema.pattern as string | undefined;
      const text = pattern
        ? fc.stringMatching(new RegExp(pattern, 'u'))
        : (hinted(key) ?? fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 40 })));
      return text.filter((s) => typeof s === 'string' && codePoints(s) >= min && codePoints(s) <= max);
    }
    case 'integer':
      return fc.integer({ min: Math.max((schema.minimum as number | undefined) ?? -1e6, -1e9), max: Math.min((schema.maximum as number | undefined) ?? 1e6, 1e9) });
    case 'number':
      return fc.double({ min: (schema.minimum as number | undefined) ?? -1e6, max: (schema.maximum as number | undefined) ?? 1e6, noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const items = depth > 2 ? { type: 'object' } : ((schema.items as Json | undefined) ?? {});
      const minLength = (schema.minItems as number | undefined) ?? 0;
      return fc.array(valueOf(items, key, depth + 1), { minLength, maxLength: Math.max(minLength, Math.min((schema.maxItems as number | undefined) ?? 4, 4)) });
    }
    case 'object': {
      const props = (schema.properties ?? {}) as Record<string, Json>;
      if (depth > 2 || !Object.keys(props).length) return fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean(), fc.constant(null)), { maxKeys: 4 });
      const required = ((schema.required as string[] | undefined) ?? []).filter((k) => k in props);
      return fc.record(Object.fromEntries(Object.entries(props).map(([k, s]) => [k, valueOf(s, k, depth + 1)])), { requiredKeys: required });
    }
    default:
      return fc.jsonValue({ maxDepth: 1 });
  }
}

/** The defaults a schema states for its properties (what the server fills in). */
export function defaultsOf(schema: Json): Json {
  const props = (schema.properties ?? {}) as Record<string, Json>;
  return Object.fromEntries(Object.entries(props).filter(([, s]) => 'default' in s).map(([k, s]) => [k, s.default]));
}

/** True when `input` breaks one of the tool's rules that JSON Schema cannot state (the field descriptions say them). */
export function breaksUnstatedRule(tool: AnyTool, schema: Json, input: Json): boolean {
  const unstated = (tool.inputRules ?? []).filter((r) => inputRuleSchema(r) === null);
  return ruleIssues(unstated, { ...defaultsOf(schema), ...input }).length > 0;
}

/** Inputs that the tool's published object schema accepts, and its unstated rules too. */
export function acceptedInputs(tool: AnyTool, schema: Json, ajv: SchemaCompiler): fc.Arbitrary<Json> {
  const props = (schema.properties ?? {}) as Record<string, Json>;
  const conditions = ((schema.allOf ?? []) as Json[]).filter((s) => s.if && s.then).map((s) => ({ test: ajv.compile(s.if as Json), then: s.then as Json }));
  const validate = ajv.compile(schema);
  return (valueOf(schema) as fc.Arbitrary<Json>)
    .chain((v) => {
      const again: Record<string, fc.Arbitrary<unknown>> = {};
      for (const c of conditions) {
        if (!c.test(v)) continue;
        const constrained = (c.then.properties ?? {}) as Record<string, Json>;
        const fields = new Set([...((c.then.required as string[] | undefined) ?? []), ...Object.keys(constrained).filter((k) => Object.keys(constrained[k]!).length)]);
        for (const f of fields) again[f] = valueOf({ ...props[f], ...constrained[f] }, f);
      }
      return fc.record(again).map((r) => ({ ...v, ...r }));
    })
    .filter((v) => validate(v) && !breaksUnstatedRule(tool, schema, v));
}
