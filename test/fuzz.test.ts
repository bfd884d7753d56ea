// Property-based fuzzing of every tool in the registry, over REST (app.request) and MCP (a real
// SDK client in memory). Inputs come from each tool's own JSON Schema: valid, nearly valid
// (one field broken) and garbage. FUZZ_RUNS sets the runs per tool and kind (default small);
// a failure prints the seed (FUZZ_SEED=… replays it). The tools whose schemas state every limit
// the schema can state are held to more: a schema-valid input is never refused as INVALID_INPUT.
import { fc, test } from '@fast-check/vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { Ajv } from 'ajv';
import { beforeAll, describe, expect } from 'vitest';
import { ERROR_STATUS } from '../src/errors.js';
import { toolSchemas, type JsonSchema } from '../src/json-schema.js';
import { createFetcher } from '../src/net/fetch.js';
import { allTools } from '../src/tools/index.js';
import { testConfig, useTestApp } from './harness.js';
import { acceptedInputs } from './schema-values.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 20);
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined;
const params = { numRuns: RUNS, ...(SEED !== undefined ? { seed: SEED } : {}), endOnFailure: true, interruptAfterTimeLimit: 60_000 };

// The fetcher refuses everything without touching the network: DNS is stubbed to a private
// address and private addresses are not allowed.
const t = useTestApp({ overrides: { fetcher: createFetcher(testConfig(), { allowPrivate: false, resolver: async () => [{ address: '10.0.0.1', family: 4 }] }) } });
let mcp: Client;
const protoKeys = Object.getOwnPropertyNames(Object.prototype).sort();

beforeAll(async () => {
  mcp = await t.mcpClient();
});

const urls = fc.oneof(
  fc.webUrl({ validSchemes: ['http', 'https'], withQueryParameters: true }),
  fc.constantFrom('javascript:alert(1)', 'data:text/html,x', 'file:///etc/passwd', 'http://[::1]/', 'http://127.0.0.1:22/', 'http://2130706433/', 'ftp://x.example/', 'http://user:pw@x.example/', 'not a url', ''),
);

const weirdStrings = fc.oneof(
  fc.constantFrom('', ' ', '\u0000', '\uD800', '\uFEFF', '💥'.repeat(50), '\u202E', '../../../etc/passwd', '<!DOCTYPE x [<!ENTITY a "b">]><x>&a;</x>', "'; DROP TABLE x; --", '{{7*7}}', '${x}', 'null', 'NaN'),
  fc.string({ unit: 'binary', maxLength: 64 }),
  fc.string({ unit: 'grapheme', maxLength: 64 }),
);

const hugeString = fc.integer({ min: 10_000, max: 300_000 }).map((n) => 'x'.repeat(n));
const protoObject = fc.constantFrom<unknown>(JSON.parse('{"__proto__":{"polluted":true}}'), JSON.parse('{"constructor":{"prototype":{"polluted":true}}}'), { prototype: { polluted: true } });
const deep = fc.integer({ min: 100, max: 1500 }).map((n) => JSON.parse('['.repeat(n) + ']'.repeat(n)) as unknown);

/** An arbitrary for values that a JSON Schema accepts (approximately: formats and patterns aside). */
function fromSchema(schema: JsonSchema, key = '', depth = 0): fc.Arbitrary<unknown> {
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  if ('const' in schema) return fc.constant(schema.const);
  const alts = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  if (alts) return fc.oneof(...alts.map((s) => fromSchema(s, key, depth)));
  const type = Array.isArray(schema.type) ? (schema.type as string[])[0] : (schema.type as string | undefined);
  switch (type) {
    case 'string': {
      if (/url/i.test(key)) return urls;
      const max = Math.min((schema.maxLength as number | undefined) ?? 80, 300);
      const min = Math.min((schema.minLength as number | undefined) ?? 0, max);
      return fc.oneof(fc.string({ minLength: min, maxLength: max }), weirdStrings.filter((s) => s.length >= min && s.length <= max));
    }
    case 'integer':
      return fc.integer({ min: Math.max((schema.minimum as number | undefined) ?? -1e6, -1e9), max: Math.min((schema.maximum as number | undefined) ?? 1e6, 1e9) });
    case 'number':
      return fc.double({ min: (schema.minimum as number | undefined) ?? -1e6, max: (schema.maximum as number | undefined) ?? 1e6, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      if (depth > 3) return fc.constant([]);
      const items = (schema.items as JsonSchema | undefined) ?? {};
      return fc.array(fromSchema(items, key, depth + 1), { maxLength: Math.min((schema.maxItems as number | undefined) ?? 5, 5), minLength: Math.min((schema.minItems as number | undefined) ?? 0, 5) });
    }
    case 'object': {
      const props = (schema.properties ?? {}) as Record<string, JsonSchema>;
      if (depth > 3 || Object.keys(props).length === 0) return fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
      const record: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, s] of Object.entries(props)) record[k] = fromSchema(s, k, depth + 1);
      return fc.record(record, { requiredKeys: ((schema.required as string[] | undefined) ?? []).filter((k) => k in props) });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

const badValue = fc.oneof(fc.integer(), fc.double(), fc.boolean(), fc.constant(null), weirdStrings, hugeString, protoObject, deep, fc.array(fc.jsonValue(), { maxLength: 3 }));

/** A valid input with one field replaced by something wrong. */
function nearlyValid(schema: JsonSchema): fc.Arbitrary<Record<string, unknown>> {
  const keys = Object.keys((schema.properties ?? {}) as object);
  return fc.tuple(fromSchema(schema) as fc.Arbitrary<Record<string, unknown>>, fc.constantFrom(...(keys.length ? keys : ['x'])), badValue).map(([v, k, bad]) => ({ ...v, [k]: bad }));
}

const garbage = fc.oneof(
  fc.anything({ maxDepth: 4, withObjectString: true, key: fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom('__proto__', 'constructor', 'prototype')) }),
  protoObject,
  deep,
);

const codes = new Set(Object.keys(ERROR_STATUS));

async function checkRest(name: string, input: unknown, binaryTypes: string[]): Promise<void> {
  let body: string;
  try {
    body = JSON.stringify(input) ?? 'null';
  } catch {
    return; // not representable as JSON (e.g. BigInt): nothing a client could send
  }
  const r = await t.app.request(`/api/tools/${name}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  expect(r.status, `REST ${name} answered ${r.status} for ${body.slice(0, 300)}`).toBeLessThan(500);
  const ct = r.headers.get('content-type') ?? '';
  if (ct.includes('application/json')) {
    const j = (await r.json()) as { success?: unknown; error?: { code?: string; message?: unknown } };
    if (r.status >= 400) {
      expect(j.success).toBe(false);
      expect(codes.has(j.error?.code ?? ''), `unknown code ${j.error?.code}`).toBe(true);
      expect(typeof j.error?.message).toBe('string');
    } else expect(j.success).toBe(true);
  } else {
    expect(binaryTypes.some((b) => ct.startsWith(b)), `${name} answered content-type ${ct}`).toBe(true);
    expect(r.status).toBeLessThan(300);
  }
}

async function checkMcp(name: string, input: unknown): Promise<void> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return;
  try {
    const r = await mcp.callTool({ name, arguments: input as Record<string, unknown> });
    if (r.isError) {
      const text = (r.content as Array<{ type: string; text: string }>)[0]!.text;
      const e = (JSON.parse(text) as { error: { code: string } }).error;
      expect(codes.has(e.code)).toBe(true);
      expect(e.code, `MCP ${name} INTERNAL for ${JSON.stringify(input).slice(0, 300)}`).not.toBe('INTERNAL');
      expect(r.structuredContent).toBeUndefined();
    } else {
      expect(r.structuredContent).toBeDefined();
    }
  } catch (err) {
    const code = (err as { code?: number }).code;
    expect(code, `MCP ${name} threw ${String(err)} for ${JSON.stringify(input).slice(0, 300)}`).not.toBe(-32603);
    // -32602 (the SDK refusing non-JSON-able arguments) is a protocol answer, not a crash.
    if (code === undefined) throw err;
  }
}

function checkPrototype(): void {
  expect(Object.getOwnPropertyNames(Object.prototype).sort()).toStrictEqual(protoKeys);
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
}

describe.each(allTools.map((tool) => [tool.name, tool] as const))('fuzz %s', (name, tool) => {
  const schema = toolSchemas(tool).input;
  const binaryTypes = tool.binary?.contentTypes ?? [];

  test.prop([fromSchema(schema)], params)('valid inputs: REST < 500, MCP result or isError', async (input) => {
    await checkRest(name, input, binaryTypes);
    await checkMcp(name, input);
    checkPrototype();
  });

  test.prop([nearlyValid(schema)], params)('nearly valid inputs: never 5xx, never -32603', async (input) => {
    await checkRest(name, input, binaryTypes);
    await checkMcp(name, input);
    checkPrototype();
  });

  test.prop([garbage], params)('garbage: never 5xx, never -32603, no prototype pollution', async (input) => {
    await checkRest(name, input, binaryTypes);
    await checkMcp(name, input);
    checkPrototype();
  });
});

/**
 * Tools held to "schema-valid ⇒ accepted" (issue 29: a schema-driven client had every generated
 * timezone_convert date refused, values over the digit limit, equal colours, missing fields).
 * The refusals listed are the ones that depend on the content in ways JSON Schema cannot state
 * (the QR code's capacity by mode and level, its width in modules against size; which
 * characters XML 1.0 can carry); the tools' descriptions name them.
 */
const STRICT: Record<string, RegExp | null> = {
  timezone_convert: null,
  base_convert: null,
  html_entity: null,
  qrcode_generate: /^(Content is too long for a QR code|size \d+ is too small for this content)/,
  image_convert: null,
  file_process: /which XML 1\.0 cannot represent$/,
};
const ajv7 = new Ajv({ strict: false, allErrors: false });

/** The INVALID_INPUT refusals of one input over REST and over MCP, except the content limits listed. */
async function invalidInput(name: string, input: Record<string, unknown>, contentLimits: RegExp | null): Promise<string[]> {
  const errors: Array<[string, { code: string; message: string; details?: unknown } | undefined]> = [];
  const r = await t.app.request(`/api/tools/${name}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(input) });
  if (r.headers.get('content-type')?.includes('json')) errors.push(['REST', ((await r.json()) as { error?: { code: string; message: string } }).error]);
  const m = await mcp.callTool({ name, arguments: input });
  if (m.isError) errors.push(['MCP', (JSON.parse((m.content as Array<{ text: string }>)[0]!.text) as { error: { code: string; message: string } }).error]);
  return errors
    .filter(([, e]) => e?.code === 'INVALID_INPUT' && !contentLimits?.test(e.message))
    .map(([via, e]) => `${via}: ${e!.message} ${JSON.stringify(e!.details ?? null)}`);
}

describe.each(Object.entries(STRICT))('schema-valid inputs of %s are accepted', (name, contentLimits) => {
  const tool = allTools.find((x) => x.name === name)!;
  test.prop([acceptedInputs(tool, toolSchemas(tool).input, ajv7)], params)('never INVALID_INPUT over REST and MCP', async (input) => {
    expect(await invalidInput(name, input, contentLimits), JSON.stringify(input).slice(0, 300)).toStrictEqual([]);
  });
});
