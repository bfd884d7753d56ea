// The OpenAPI document says everything the server does. A client generated from /openapi.json
// (one deserializer per declared response) must handle every answer: here every answer the
// server gives to a set of REST scenarios and to a bounded schema-driven fuzzer is checked
// against the document — the operation exists, the status is declared, the content type is
// declared for that status, and a JSON body validates against the declared schema.
import { fc } from '@fast-check/vitest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_STATUS } from '../src/errors.js';
import { LICENSE } from '../src/openapi/document.js';
import { buildOpenApi } from '../src/openapi/index.js';
import { restBindings, type AnyTool } from '../src/registry.js';
import { createMemoryStore, StoreError, type Store } from '../src/state/index.js';
import { createRegistry } from '../src/tools/index.js';
import { useTestApp, type TestApp } from './harness.js';
import { breaksUnstatedRule } from './schema-values.js';

type Json = Record<string, unknown>;
type Doc = { paths: Record<string, Record<string, Json>>; components: Json; info: Json; tags: Array<{ name: string }> };

const registry = createRegistry();
const doc = buildOpenApi(registry, { serverUrl: 'http://short.test' }) as unknown as Doc;
const METHODS = ['get', 'post', 'delete', 'head', 'put', 'patch'];
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;
const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
addFormats(ajv);
ajv.addFormat('binary', true);
ajv.addSchema(doc as unknown as Json, 'openapi');

/** One answer of the server: what a generated client has to deserialize. */
interface Seen {
  method: string;
  path: string;
  status: number;
  contentType: string | null;
  body: string;
  note: string;
}

/** The document's path template of a concrete path (exact paths before templates). */
function templateOf(p: string): string | undefined {
  const pathname = p.split('?')[0]!;
  if (doc.paths[pathname]) return pathname;
  return Object.keys(doc.paths).find((tpl) => tpl.includes('{') && new RegExp(`^${tpl.replace(/\{\w+\}/g, '[^/]+')}$`).test(pathname));
}

const pointer = (...parts: string[]) => parts.map((x) => x.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/** Why an answer is not what the document declares, or null. */
function undeclared(s: Seen): string | null {
  const tpl = templateOf(s.path);
  const method = s.method.toLowerCase();
  const where = `${s.method} ${s.path.slice(0, 80)} → ${s.status} ${s.contentType ?? ''} (${s.note})`;
  if (!tpl || !doc.paths[tpl]![method]) return `no operation: ${where}`;
  const responses = doc.paths[tpl]![method]!.responses as Record<string, Json>;
  const key = [String(s.status), `${String(s.status)[0]}XX`, 'default'].find((k) => responses[k]);
  if (!key) return `status not declared: ${where}`;
  const content = responses[key]!.content as Record<string, Json> | undefined;
  if (s.method === 'HEAD' || s.status === 302 || s.status === 204) return null;
  const type = (s.contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (!content || !content[type]) return `content type not declared: ${where}`;
  if (type === 'application/json') {
    const validate = ajv.getSchema(`openapi#/${pointer('paths', tpl, method, 'responses', key, 'content', type, 'schema')}`);
    if (!validate) return `no schema: ${where}`;
    if (!validate(JSON.parse(s.body))) return `body does not match the schema: ${where}: ${ajv.errorsText(validate.errors)} in ${s.body.slice(0, 200)}`;
  }
  return null;
}

let fixture: http.Server;
let fixtureUrl: string;
let failWrites = false;
let png: Buffer;
const ENV = { FETCH_TIMEOUT_MS: '400' };
const t = useTestApp({ env: ENV });
const limited = useTestApp({ env: { ...ENV, RATE_LIMITS: 'on' } });
const failing = useTestApp({ env: ENV, overrides: { store: flakyStore(createMemoryStore()) } });
const seen: Seen[] = [];

async function send(app: TestApp, method: string, p: string, body?: unknown, headers: Record<string, string> = {}, note = ''): Promise<Response> {
  const r = await app.request(method, p, body, headers);
  const buf = Buffer.from(await r.arrayBuffer());
  seen.push({ method, path: p, status: r.status, contentType: r.headers.get('content-type'), body: buf.toString('utf8'), note });
  return new Response(method === 'HEAD' || r.status === 204 || r.status === 304 ? null : buf, { status: r.status, headers: r.headers });
}

/** A store whose writes fail (UNAVAILABLE) while `failWrites` is set, as a failing disk makes them. */
function flakyStore(inner: Store): Store {
  const WRITES = new Set(['put', 'insert', 'insertCapped', 'delete', 'update', 'compareAndSet', 'increment']);
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== 'collection' || typeof v !== 'function') return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      return (def: unknown) => {
        const col = (v as (d: unknown) => object).call(target, def);
        return new Proxy(col, {
          get(c, name, rc) {
            const f = Reflect.get(c, name, rc) as unknown;
            if (typeof f !== 'function') return f;
            if (WRITES.has(String(name))) {
              return (...args: unknown[]) => (failWrites ? Promise.reject(new StoreError('UNAVAILABLE', 'disk full (test)')) : (f as (...a: unknown[]) => unknown).apply(c, args));
            }
            return (f as (...a: unknown[]) => unknown).bind(c);
          },
        });
      };
    },
  });
}

beforeAll(async () => {
  png = await sharp({ create: { width: 8, height: 6, channels: 3, background: '#3366cc' } }).png().toBuffer();
  // Upstream fixtures on loopback: a page, an image, an error, and a URL that never answers.
  fixture = http.createServer((req, res) => {
    if (req.url === '/page') {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html lang="en"><head><title>Fixture page</title></head><body><h1>x</h1></body></html>');
    } else if (req.url === '/image.png') {
      res.writeHead(200, { 'content-type': 'image/png' }).end(png);
    } else if (req.url === '/slow') {
      setTimeout(() => res.destroyed || res.end('late'), 5_000).unref();
    } else res.writeHead(500, { 'content-type': 'text/plain' }).end('upstream broke');
  });
  await new Promise<void>((r) => fixture.listen(0, '127.0.0.1', r));
  fixtureUrl = `http://127.0.0.1:${(fixture.address() as AddressInfo).port}`;
});
afterAll(async () => {
  fixture?.closeAllConnections();
  await new Promise<void>((r) => fixture?.close(() => r()));
});

/** The operations of the document, with a concrete path and a body built from their examples. */
function operations(pathValues: Record<string, string> = {}): Array<{ tpl: string; method: string; op: Json; path: string; body: unknown }> {
  const out = [];
  for (const [tpl, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      if (!METHODS.includes(method)) continue;
      const params = (op.parameters ?? []) as Array<{ name: string; in: string; example?: unknown }>;
      let p = tpl.replace(/\{(\w+)\}/g, (_, n: string) => encodeURIComponent(pathValues[n] ?? String(params.find((x) => x.name === n)?.example ?? 'x')));
      const query = params.filter((x) => x.in === 'query' && x.example !== undefined).map((x) => `${x.name}=${encodeURIComponent(String(x.example))}`);
      if (query.length) p += `?${query.join('&')}`;
      const rb = op.requestBody as { content: Record<string, { example?: unknown }> } | undefined;
      out.push({ tpl, method: method.toUpperCase(), op, path: p, body: rb?.content['application/json']?.example });
    }
  }
  return out;
}

function check(from: number): void {
  const problems = seen.slice(from).map(undeclared).filter((x): x is string => x !== null);
  expect(problems).toStrictEqual([]);
}

describe('the OpenAPI document against the server', () => {
  it('every answer to each operation (its example, a foreign origin, an unknown key, bad bodies) is declared', async () => {
    const from = seen.length;
    // Things the examples refer to.
    await send(t, 'POST', '/api/shorten', { url: 'https://example.com/', code: 'docs-demo' }, {}, 'setup');
    const created = (await (await send(t, 'POST', '/api/cron-task', { name: 'x', schedule: '0 9 * * *' }, {}, 'setup')).json()) as { task: { task_id: string } };
    const taskId = created.task.task_id;
    for (const o of operations({ task_id: taskId })) {
      const p = o.path;
      const body = o.method === 'POST' ? (o.body ?? {}) : undefined;
      await send(t, o.method, p, body, {}, 'example');
      await send(t, o.method, p, body, { origin: 'https://evil.example' }, 'foreign origin');
      await send(t, o.method, p + (p.includes('?') ? '&' : '?') + 'api_key=dtb_' + 'x'.repeat(32), body, {}, 'unknown key');
      if (o.method === 'POST') {
        await send(t, o.method, p, 'just text', { 'content-type': 'text/plain' }, 'text body');
        await send(t, o.method, p, '[1,2]', {}, 'array body');
        await send(t, o.method, p, '{"oops":', {}, 'broken JSON');
        await send(t, o.method, p, JSON.stringify({ pad: 'x'.repeat(11 * 1024 * 1024) }), {}, 'huge body');
      }
    }
    check(from);
  });

  it('success answers: 201 creates, every binary content type, on the own path and POST /api/tools/{name}', async () => {
    const from = seen.length;
    const b64 = png.toString('base64');
    for (const prefix of ['own', 'uniform'] as const) {
      const call = (tool: string, own: string, body: unknown) => send(t, 'POST', prefix === 'own' ? own : `/api/tools/${tool}`, body, {}, `${prefix} success`);
      for (const format of ['svg', 'png', 'bmp', 'dataurl']) await call('qrcode_generate', '/api/qrcode', { content: 'hello', format });
      for (const format of ['webp', 'avif', 'png', 'jpeg']) expect((await call('image_convert', '/api/image-convert', { data: b64, format })).status).toBe(200);
      expect((await call('image_convert', '/api/image-convert', { url: `${fixtureUrl}/image.png` })).status).toBe(200);
      expect((await call('url_shorten', '/api/shorten', { url: 'https://example.com/x' })).status).toBe(201);
      expect((await call('cron_task_create', '/api/cron-task', { name: 'n', schedule: '*/5 * * * *' })).status).toBe(201);
      await call('meta_extract', '/api/meta-extract', { url: `${fixtureUrl}/page` });
      await call('seo_check', '/api/seo-check', { url: `${fixtureUrl}/page`, format: 'summary' });
    }
    await send(t, 'GET', `/api/seo-check?url=${encodeURIComponent(`${fixtureUrl}/page`)}`, undefined, {}, 'GET seo');
    await send(t, 'POST', '/api/auth/register', { email: 'conformance@example.com' }, {}, 'register');
    await send(t, 'HEAD', '/s/docs-demo', undefined, {}, 'HEAD redirect');
    const types = new Set(seen.slice(from).map((s) => (s.contentType ?? '').split(';')[0]));
    for (const ct of ['image/svg+xml', 'image/png', 'image/bmp', 'image/webp', 'image/avif', 'image/jpeg']) expect(types).toContain(ct);
    check(from);
  });

  it('error answers: 404, 409, 422, 502, 504, 429 and 503 STORAGE_UNAVAILABLE are declared where they happen', async () => {
    const from = seen.length;
    for (const prefix of ['own', 'uniform'] as const) {
      const call = (app: TestApp, tool: string, own: string, body: unknown, note: string) =>
        send(app, 'POST', prefix === 'own' ? own : `/api/tools/${tool}`, body, {}, `${prefix} ${note}`);
      expect((await call(t, 'url_shorten', '/api/shorten', { url: 'https://example.com/', code: 'docs-demo' }, 'taken')).status).toBe(409);
      expect((await call(t, 'json_yaml_convert', '/api/json-yaml', { input: '{"a":', direction: 'json2yaml' }, 'parse')).status).toBe(422);
      expect((await call(t, 'image_convert', '/api/image-convert', { data: 'bm90IGFuIGltYWdl' }, 'not an image')).status).toBe(422);
      expect((await call(t, 'cron_parse', '/api/cron-parse', { expression: '61 * * * *' }, 'bad cron')).status).toBeGreaterThanOrEqual(400);
      expect((await call(t, 'meta_extract', '/api/meta-extract', { url: `${fixtureUrl}/broken` }, 'upstream 500')).status).toBe(502);
      expect((await call(t, 'image_convert', '/api/image-convert', { url: `${fixtureUrl}/slow` }, 'upstream slow')).status).toBe(504);
      expect((await call(t, 'cron_task_done', '/api/cron-task/nope/done', { task_id: 'nope' }, 'unknown task')).status).toBe(404);
      for (let i = 0; i < 7; i++) await call(limited, 'base_convert', '/api/base-convert', { value: '1' }, 'limits');
      failWrites = true;
      try {
        expect((await call(failing, 'url_shorten', '/api/shorten', { url: 'https://example.com/' }, 'disk fails')).status).toBe(503);
        expect((await call(failing, 'cron_task_create', '/api/cron-task', { name: 'n', schedule: '0 * * * *' }, 'disk fails')).status).toBe(503);
      } finally {
        failWrites = false;
      }
    }
    expect(seen.slice(from).some((s) => s.status === 429)).toBe(true);
    await send(t, 'POST', '/api/tools/no_such_tool', {}, {}, 'unknown tool');
    await send(t, 'GET', '/s/unknown-code', undefined, {}, 'unknown code');
    await send(t, 'HEAD', '/s/unknown-code', undefined, {}, 'unknown code');
    await send(t, 'GET', '/api/shorten?code=unknown-code', undefined, {}, 'unknown code');
    await send(t, 'POST', '/api/auth/register', { email: 'conformance2@example.com' }, {}, 'register');
    await send(t, 'POST', '/api/auth/register', { email: 'conformance2@example.com' }, {}, 'register again');
    for (let i = 0; i < 7; i++) await send(limited, 'POST', '/api/auth/register', { email: `r${i}@example.com` }, {}, 'register limit');
    await send(t, 'GET', '/healthz', undefined, { host: 'attacker.example' }, 'rebinding');
    check(from);
  });

  it('a bounded schema-driven fuzzer: every answer to generated inputs is declared', async () => {
    const from = seen.length;
    const runs = Number(process.env.OPENAPI_FUZZ_RUNS ?? 6);
    for (const o of operations()) {
      if (o.tpl === '/api/auth/register' || o.method === 'HEAD') continue;
      const schema = ((o.op.requestBody as { content?: Record<string, { schema?: Json }> } | undefined)?.content?.['application/json']?.schema ?? {}) as Json;
      const params = (o.op.parameters ?? []) as Array<{ name: string; in: string; schema: Json }>;
      const arb = fc.record({
        body: fromSchema(schema),
        query: fc.record(Object.fromEntries(params.filter((x) => x.in === 'query').map((x) => [x.name, fromSchema(x.schema)])), { requiredKeys: [] }),
        pathValue: fc.oneof(fc.constantFrom('x', 'abc', 'nope-nope'), fc.string({ minLength: 1, maxLength: 12 })),
      });
      for (const sample of fc.sample(arb, { numRuns: runs, seed: 20 })) {
        let p = o.tpl.replace(/\{(\w+)\}/g, (_, n: string) => encodeURIComponent(n === 'name' && sample.pathValue.length % 2 ? 'base_convert' : sample.pathValue));
        const q = Object.entries(sample.query as Json).map(([k, v]) => `${k}=${encodeURIComponent(typeof v === 'string' ? v : JSON.stringify(v))}`);
        if (q.length) p += `?${q.join('&')}`;
        await send(t, o.method, p, o.method === 'POST' ? sample.body : undefined, {}, 'fuzz');
      }
    }
    check(from);
  });
});

/** Values for a JSON Schema, roughly valid (wrong ones are welcome too: every answer must be declared). */
function fromSchema(schema: Json, depth = 0): fc.Arbitrary<unknown> {
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  if ('const' in schema) return fc.constant(schema.const);
  const alts = (schema.anyOf ?? schema.oneOf) as Json[] | undefined;
  if (alts) return fc.oneof(...alts.map((s) => fromSchema(s, depth)));
  const type = Array.isArray(schema.type) ? (schema.type as string[])[0] : (schema.type as string | undefined);
  switch (type) {
    case 'string':
      return fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('https://example.com/', '0 9 * * *', 'a,b\n1,2\n', '{"a":1}', '<a/>', 'SELECT 1'));
    case 'integer':
      return fc.integer({ min: Math.max((schema.minimum as number | undefined) ?? -10, -1e6), max: Math.min((schema.maximum as number | undefined) ?? 1000, 1e6) });
    case 'number':
      return fc.double({ min: -1e6, max: 1e6, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return depth > 2 ? fc.constant([]) : fc.array(fromSchema((schema.items as Json | undefined) ?? {}, depth + 1), { maxLength: 3 });
    case 'object': {
      const props = (schema.properties ?? {}) as Record<string, Json>;
      if (depth > 2 || !Object.keys(props).length) return fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 });
      return fc.record(Object.fromEntries(Object.entries(props).map(([k, s]) => [k, fromSchema(s, depth + 1)])), { requiredKeys: [] });
    }
    default:
      return fc.jsonValue({ maxDepth: 1 });
  }
}

describe('what the document declares', () => {
  const uniform = doc.paths['/api/tools/{name}']!.post!;
  const responses = uniform.responses as Record<string, { content?: Record<string, unknown> }>;

  it('POST /api/tools/{name} declares 201, 502/504, 503 and the binary bodies of every tool (from their binary.contentTypes)', () => {
    for (const tool of registry.tools) {
      const status = String(restBindings(tool)[0]?.status ?? 200);
      expect(responses[status], `${tool.name} answers ${status}`).toBeDefined();
      for (const ct of tool.binary?.contentTypes ?? []) expect(Object.keys(responses[status]!.content ?? {}), `${tool.name} ${ct}`).toContain(ct);
    }
    expect(Object.keys(responses)).toEqual(expect.arrayContaining(['200', '201', '400', '401', '403', '404', '409', '413', '415', '422', '429', '500', '502', '503', '504']));
    expect(registry.tools.filter((x) => restBindings(x)[0]?.status === 201).map((x) => x.name)).toEqual(expect.arrayContaining(['url_shorten', 'cron_task_create']));
  });

  it('401 on GET /api/tools, GET /openapi.json and POST /api/auth/register; 4XX and 503 on /healthz; HEAD /s/{code}', () => {
    expect(Object.keys(doc.paths['/api/tools']!.get!.responses as object)).toContain('401');
    expect(Object.keys(doc.paths['/openapi.json']!.get!.responses as object)).toContain('401');
    expect(Object.keys(doc.paths['/api/auth/register']!.post!.responses as object)).toContain('401');
    const health = Object.keys(doc.paths['/healthz']!.get!.responses as object);
    expect(health.some((s) => s.startsWith('4'))).toBe(true);
    expect(health).toContain('503');
    expect(Object.keys(doc.paths['/s/{code}']!.head!.responses as object)).toEqual(expect.arrayContaining(['302', '404']));
  });

  it('states the license of package.json', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, '..', 'package.json'), 'utf8')) as { license: string; version: string };
    expect(doc.info.license).toStrictEqual(LICENSE);
    expect(LICENSE.identifier).toBe(pkg.license);
    expect(doc.info.version).toBe(pkg.version);
  });

  it('names no "CONTRACT §n": the rule itself or a link to docs/', () => {
    expect(JSON.stringify(doc)).not.toMatch(/§/);
  });

  it('passes the main lint rules (operationId unique, summary, tags, 2xx and 4xx, path parameters, examples valid)', () => {
    const ids = new Set<string>();
    const tagNames = new Set(doc.tags.map((x) => x.name));
    const problems: string[] = [];
    for (const [tpl, ops] of Object.entries(doc.paths)) {
      const pathParams = [...tpl.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      for (const [method, op] of Object.entries(ops)) {
        const at = `${method.toUpperCase()} ${tpl}`;
        const id = op.operationId as string;
        if (!id || ids.has(id)) problems.push(`${at}: operationId missing or repeated`);
        ids.add(id);
        if (!op.summary) problems.push(`${at}: no summary`);
        for (const tag of (op.tags ?? []) as string[]) if (!tagNames.has(tag)) problems.push(`${at}: undeclared tag ${tag}`);
        const codes = Object.keys(op.responses as object);
        // A redirect is the success of /s/{code} (Redocly's operation-2xx-response is ignored there, see .redocly.lint-ignore.yaml).
        if (!codes.some((c) => /^2|^3/.test(c))) problems.push(`${at}: no 2xx response`);
        if (!codes.some((c) => c.startsWith('4'))) problems.push(`${at}: no 4xx response`);
        const declared = ((op.parameters ?? []) as Array<{ name: string; in: string }>).filter((x) => x.in === 'path').map((x) => x.name);
        if (pathParams.sort().join() !== declared.sort().join()) problems.push(`${at}: path parameters ${declared.join()} ≠ ${pathParams.join()}`);
        // Examples validate against their schemas (no-invalid-media-type-examples).
        const media: Array<[string, Json]> = [];
        const rb = op.requestBody as { content: Record<string, Json> } | undefined;
        for (const [type, m] of Object.entries(rb?.content ?? {})) media.push([pointer('paths', tpl, method, 'requestBody', 'content', type), m]);
        for (const [status, r] of Object.entries(op.responses as Record<string, { content?: Record<string, Json> }>)) {
          for (const [type, m] of Object.entries(r.content ?? {})) media.push([pointer('paths', tpl, method, 'responses', status, 'content', type), m]);
        }
        for (const [ptr, m] of media) {
          const examples = [...('example' in m ? [m.example] : []), ...Object.values((m.examples ?? {}) as Record<string, { value: unknown }>).map((e) => e.value)];
          const validate = examples.length ? ajv.getSchema(`openapi#/${ptr}/schema`) : undefined;
          for (const ex of examples) if (validate && !validate(ex)) problems.push(`${at} ${ptr}: example invalid: ${ajv.errorsText(validate.errors)}`);
        }
      }
    }
    expect(problems).toStrictEqual([]);
    expect(Object.keys(ERROR_STATUS).length).toBeGreaterThan(0);
  });
});

describe('request rules as strict as the server', () => {
  /** Whether the document accepts a body: its schema, and the rules it states only in words (equal colours). */
  function documentAccepts(tool: string, body: Json): boolean {
    const own = restBindings(registry.get(tool) as AnyTool)[0]!.path;
    const ptr = pointer('paths', own, 'post', 'requestBody', 'content', 'application/json', 'schema');
    const schema = doc.paths[own]!.post!.requestBody as { content: Record<string, { schema: Json }> };
    return ajv.getSchema(`openapi#/${ptr}`)!(body) && !breaksUnstatedRule(registry.get(tool) as AnyTool, schema.content['application/json']!.schema, body);
  }
  async function refusedAsInvalid(tool: string, body: Json): Promise<{ refused: boolean; why: string }> {
    const r = await t.request('POST', restBindings(registry.get(tool) as AnyTool)[0]!.path, body);
    const answer = r.headers.get('content-type')?.includes('json') ? ((await r.json()) as { error?: { code: string } }) : {};
    return { refused: answer.error?.code === 'INVALID_INPUT', why: `server ${r.status} ${answer.error?.code ?? ''}` };
  }

  // Presence combinations of the fields a rule names, on top of the tool's example: the body
  // schema accepts a combination exactly when the server does not refuse it as INVALID_INPUT.
  const cases: Array<{ tool: string; base: Json; fields: Json }> = [
    { tool: 'html_entity', base: { action: 'encode' }, fields: { input: 'a<b', content: 'c>d' } },
    { tool: 'image_convert', base: { format: 'png' }, fields: { url: 'http://127.0.0.1:9/x.png', data: 'PNG' } },
    ...['parse', 'analyze', 'convert', 'generate'].map((action) => ({ tool: 'file_process', base: { action }, fields: { content: 'a,b\n1,2\n', data: [{ a: 1 }], to: 'json' } })),
    // Equal colours, given or by default (ffffff on 000000).
    { tool: 'qrcode_generate', base: { content: 'x', format: 'dataurl' }, fields: { fgColor: 'FFF', bgColor: '#000' } },
    { tool: 'qrcode_generate', base: { content: 'x', format: 'dataurl' }, fields: { fgColor: '#abc', bgColor: 'AABBCC' } },
  ];
  it.each(cases)('$tool $base: the body schema and the server agree on every combination', async ({ tool, base, fields }) => {
    const names = Object.keys(fields);
    for (let mask = 0; mask < 1 << names.length; mask++) {
      const body: Json = { ...base };
      names.forEach((n, i) => {
        if (mask & (1 << i)) body[n] = n === 'data' && tool === 'image_convert' ? png.toString('base64') : fields[n];
      });
      const { refused, why } = await refusedAsInvalid(tool, body);
      expect(documentAccepts(tool, body), `${tool} ${JSON.stringify(body)}: ${why}`).toBe(!refused);
    }
  });

  // Values at the limits the schemas state (issue 29: each was schema-valid and refused).
  const digits = (d: string, n: number) => d.repeat(n);
  const limits: Array<[string, Json]> = [
    ...['1899-12-31T23:59', '1900-01-01T00:00', '2199-12-31T23:59:59', '2200-01-01T00:00', '2100-02-29T00:00', '2000-02-29T12:00', '2026-04-31T00:00'].map(
      (datetime): [string, Json] => ['timezone_convert', { datetime, fromZone: 'UTC', toZone: 'UTC' }],
    ),
    ['base_convert', { value: digits('7', 100_000) }],
    ['base_convert', { value: digits('7', 100_001) }],
    ['base_convert', { value: `-${digits('1_', 99_999)}1 ` }],
    ['base_convert', { value: `0b${digits('1', 100_000)}`, from: 'bin' }],
    ['base_convert', { value: `0b${digits('1', 100_000)}`, from: 'hex' }],
    ['image_convert', { data: 'not base64 at all!' }],
    ['image_convert', { data: 'data:image/png;base64,PNG' }],
    ['file_process', { action: 'parse', content: 'abcde', encoding: 'base64' }],
    ['file_process', { action: 'parse', content: 'YSxi\nCjEsMgo=', encoding: 'base64' }],
    ['file_process', { action: 'parse', content: 'a"b\n1"2\n', delimiter: '"' }],
    ['file_process', { action: 'parse', content: 'a;b\n1;2\n', delimiter: ';' }],
  ];
  const titled = limits.map(([tool, body]) => [tool, JSON.stringify(body).slice(0, 70), body] as const);
  it.each(titled)('%s %s: the body schema and the server agree', async (tool, _title, given) => {
    const body = tool === 'image_convert' && typeof given.data === 'string' ? { data: given.data.replace('PNG', png.toString('base64')) } : given;
    const { refused, why } = await refusedAsInvalid(tool, body);
    expect(documentAccepts(tool, body), `${tool} ${JSON.stringify(body).slice(0, 80)}: ${why}`).toBe(!refused);
  });
});
