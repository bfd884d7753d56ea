/**
 * The data family over real HTTP (REST) and real MCP clients (SDK v1, legacy era; SDK v2,
 * 2026-07-28), checked against outside vectors: RFC 9535's own examples, the JMESPath site's,
 * GNU `diff -u`, JavaScript's own String.prototype.replace and matchAll, RFC 6902's examples.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { afterAll, describe, expect, it } from 'vitest';
import { mcpError, tempDir, useListeningApp } from './harness.js';
import { jsonWithoutRequestId } from './request-ids.js';

const t = useListeningApp();
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of closers.splice(0)) await c().catch(() => {});
});

async function post(p: string, body: unknown): Promise<{ status: number; body: any }> {
  const r = await fetch(`${t.url}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, body: await jsonWithoutRequestId(r) };
}

/** RFC 9535 §1.5's example document. */
const STORE = {
  store: {
    book: [
      { category: 'reference', author: 'Nigel Rees', title: 'Sayings of the Century', price: 8.95 },
      { category: 'fiction', author: 'Evelyn Waugh', title: 'Sword of Honour', price: 12.99 },
      { category: 'fiction', author: 'Herman Melville', title: 'Moby Dick', isbn: '0-553-21311-3', price: 8.99 },
      { category: 'fiction', author: 'J. R. R. Tolkien', title: 'The Lord of the Rings', isbn: '0-395-19395-8', price: 22.99 },
    ],
    bicycle: { color: 'red', price: 399 },
  },
};

describe('json_query over REST', () => {
  it('RFC 9535 Table 2: the authors of all books, and the books cheaper than 10 with their normalized paths', async () => {
    expect(await post('/api/json-query', { input: JSON.stringify(STORE), query: '$.store.book[*].author' })).toStrictEqual({
      status: 200,
      body: {
        success: true,
        language: 'jsonpath',
        result: ['Nigel Rees', 'Evelyn Waugh', 'Herman Melville', 'J. R. R. Tolkien'],
        paths: ["$['store']['book'][0]['author']", "$['store']['book'][1]['author']", "$['store']['book'][2]['author']", "$['store']['book'][3]['author']"],
        count: 4,
      },
    });
    const cheap = await post('/api/json-query', { input: JSON.stringify(STORE), query: '$..book[?@.price<10].title' });
    expect(cheap.body.result).toStrictEqual(['Sayings of the Century', 'Moby Dick']);
    expect(cheap.body.paths).toStrictEqual(["$['store']['book'][0]['title']", "$['store']['book'][2]['title']"]);
  });

  it('three && operands mean all three (jsonpath-rfc9535 1.3.0 read them as a && (b || c))', async () => {
    const doc = [{ a: 1, b: 1 }, { a: 1, c: 1 }, { a: 1, b: 1, c: 1 }];
    const r = await post('/api/json-query', { input: JSON.stringify(doc), query: '$[?@.a && @.b && @.c]' });
    expect([r.body.result, r.body.paths]).toStrictEqual([[{ a: 1, b: 1, c: 1 }], ['$[2]']]);
    const strings = await post('/api/json-query', { input: JSON.stringify([{ a: 'x&&y', b: 1, c: 1 }]), query: "$[?@.a == 'x&&y' && @.b && (@.c || @.d)]" });
    expect(strings.body.paths).toStrictEqual(['$[0]']);
  });

  it('JMESPath: the example of jmespath.org', async () => {
    const input = JSON.stringify({ locations: [{ name: 'Seattle', state: 'WA' }, { name: 'New York', state: 'NY' }, { name: 'Bellevue', state: 'WA' }, { name: 'Olympia', state: 'WA' }] });
    expect(await post('/api/json-query', { input, query: "locations[?state == 'WA'].name | sort(@) | {WashingtonCities: join(', ', @)}", language: 'jmespath' })).toStrictEqual({
      status: 200,
      body: { success: true, language: 'jmespath', result: { WashingtonCities: 'Bellevue, Olympia, Seattle' } },
    });
  });

  it('a bad query, bad JSON and a too-deep document are 422s that say where', async () => {
    const q = await post('/api/json-query', { input: '{}', query: '$[?' });
    expect([q.status, q.body.error.code, q.body.error.message.startsWith('Invalid JSONPath (RFC 9535) query: ')]).toStrictEqual([422, 'PARSE_ERROR', true]);
    const j = await post('/api/json-query', { input: '{"a":\n x}', query: '$' });
    expect([j.status, j.body.error.details]).toStrictEqual([422, { field: 'input', line: 2, column: 2 }]);
    const deep = await post('/api/json-query', { input: '['.repeat(300) + ']'.repeat(300), query: '$' });
    expect([deep.status, deep.body.error.message]).toStrictEqual([422, 'input is nested too deeply (limit 256 levels)']);
    const fn = await post('/api/json-query', { input: '[]', query: '$[?length(@.*)<3]' });
    expect([fn.status, fn.body.error.message]).toStrictEqual([422, 'Invalid JSONPath (RFC 9535) query: argument 1 of length() is not of its type (value)']);
  });

  it('a result far larger than the document is refused before it is built', async () => {
    // 12 levels of two-item arrays: `$..*` lists every subtree under each of its ancestors.
    let doc: unknown = 'x'.repeat(60);
    for (let i = 0; i < 14; i++) doc = [doc, doc];
    const r = await post('/api/json-query', { input: JSON.stringify(doc), query: '$..*' });
    expect([r.status, r.body.error.code, r.body.error.details]).toStrictEqual([422, 'PARSE_ERROR', { limit: 8_000_000 }]);
  });
});

describe('json_patch over REST', () => {
  it('diff: the RFC 6902 operations from a to b, applied back they give b', async () => {
    const a = { title: 'Goodbye!', author: { givenName: 'John', familyName: 'Doe' }, tags: ['example', 'sample'], content: 'This will be unchanged' };
    const b = { title: 'Hello!', author: { givenName: 'John' }, tags: ['example'], content: 'This will be unchanged', phoneNumber: '+01-123-456-7890' };
    const d = await post('/api/json-patch', { action: 'diff', a: JSON.stringify(a), b: JSON.stringify(b) });
    expect(d.status).toBe(200);
    expect(d.body.equal).toBe(false);
    const back = await post('/api/json-patch', { action: 'apply', document: JSON.stringify(a), patch: JSON.stringify(d.body.patch), indent: 0 });
    expect(JSON.parse(back.body.result)).toStrictEqual(b);
    expect((await post('/api/json-patch', { action: 'diff', a: '{"x":[1,2]}', b: '{ "x": [1, 2] }' })).body).toStrictEqual({ success: true, action: 'diff', patch: [], equal: true });
  });

  it('apply: RFC 6902 A.8 (test passes) and A.9 (test fails → 422 naming operation 1); a missing path names its index; the root can be replaced', async () => {
    const doc = JSON.stringify({ baz: 'qux', foo: ['a', 2, 'c'] });
    const ok = await post('/api/json-patch', { action: 'apply', document: doc, patch: JSON.stringify([{ op: 'test', path: '/baz', value: 'qux' }, { op: 'test', path: '/foo/1', value: 2 }]), indent: 0 });
    expect(ok.body).toStrictEqual({ success: true, action: 'apply', result: doc });
    const bad = await post('/api/json-patch', { action: 'apply', document: doc, patch: JSON.stringify([{ op: 'replace', path: '/baz', value: 'x' }, { op: 'test', path: '/baz', value: 'bar' }]) });
    expect(bad).toStrictEqual({
      status: 422,
      body: { success: false, error: { code: 'PARSE_ERROR', message: 'Operation 1 (test "/baz") failed: the "test" value does not equal the value at "path"', details: { operation: 1, reason: 'test_failed' } } },
    });
    const missing = await post('/api/json-patch', { action: 'apply', document: doc, patch: '[{"op":"add","path":"/a/b","value":1}]' });
    expect([missing.status, missing.body.error.details]).toStrictEqual([422, { operation: 0, reason: 'missing' }]);
    const root = await post('/api/json-patch', { action: 'apply', document: doc, patch: '[{"op":"replace","path":"","value":[1]}]', indent: 0 });
    expect(root.body.result).toBe('[1]');
  });

  it('no operation reaches a prototype: __proto__, constructor and prototype tokens are refused', async () => {
    for (const p of ['/__proto__/polluted', '/constructor/prototype/polluted', '/a/prototype']) {
      const r = await post('/api/json-patch', { action: 'apply', document: '{"a":{}}', patch: JSON.stringify([{ op: 'add', path: p, value: 1 }]) });
      expect([r.status, r.body.error.details]).toStrictEqual([422, { operation: 0 }]);
    }
    const from = await post('/api/json-patch', { action: 'apply', document: '{"a":{}}', patch: '[{"op":"copy","from":"/__proto__","path":"/b"}]' });
    expect(from.status).toBe(422);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('a missing field for the action is a 400 naming it; a patch that is not an array is a 422', async () => {
    const r = await post('/api/json-patch', { action: 'apply', document: '{}' });
    expect([r.status, r.body.error.code]).toStrictEqual([400, 'INVALID_INPUT']);
    expect(JSON.stringify(r.body.error)).toContain('patch');
    expect((await post('/api/json-patch', { action: 'apply', document: '{}', patch: '{"op":"add"}' })).status).toBe(422);
  });
});

describe('text_diff over REST', () => {
  it('the hunks are those of GNU diff -u, context 0 to 5', async () => {
    const a = Array.from({ length: 40 }, (_, i) => `line ${i}`).join('\n') + '\n';
    const b = a.replace('line 3\n', 'line three\n').replace('line 20\n', '').replace('line 35\n', 'line 35\nnew line\n');
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'a'), a);
    fs.writeFileSync(path.join(dir, 'b'), b);
    for (const context of [0, 1, 3, 5]) {
      let gnu = '';
      try {
        execFileSync('diff', [`-U${context}`, 'a', 'b'], { cwd: dir, encoding: 'utf8' });
      } catch (err) {
        gnu = (err as { stdout: string }).stdout; // diff exits 1 when the files differ
      }
      const r = await post('/api/text-diff', { a, b, context });
      expect(r.status).toBe(200);
      // The --- / +++ lines carry dates in GNU's output; the hunks must be identical.
      const hunksOf = (u: string) => u.split('\n').slice(2).join('\n');
      expect(hunksOf(r.body.unified)).toBe(hunksOf(gnu));
      expect(r.body.unified.split('\n').slice(0, 2)).toStrictEqual(['--- a', '+++ b']);
    }
    const r = await post('/api/text-diff', { a, b });
    expect(r.body.stats).toStrictEqual({ added: 2, removed: 2, unchanged: 38 });
    expect(r.body.hunks[0]).toStrictEqual({ old_start: 1, old_lines: 7, new_start: 1, new_lines: 7, lines: [' line 0', ' line 1', ' line 2', '-line 3', '+line three', ' line 4', ' line 5', ' line 6'] });
  });

  it('words and chars modes count their own units; equal texts answer equal with no hunks', async () => {
    const w = await post('/api/text-diff', { a: 'the quick brown fox', b: 'the slow brown fox', mode: 'words' });
    expect([w.body.stats, w.body.changes]).toStrictEqual([
      { added: 1, removed: 1, unchanged: 6 },
      [
        { type: 'unchanged', value: 'the ' },
        { type: 'removed', value: 'quick' },
        { type: 'added', value: 'slow' },
        { type: 'unchanged', value: ' brown fox' },
      ],
    ]);
    const c = await post('/api/text-diff', { a: 'kitten', b: 'sitting', mode: 'chars' });
    // Levenshtein distance 3: k→s, e→i, +g.
    expect(c.body.stats).toStrictEqual({ added: 3, removed: 2, unchanged: 4 });
    expect((await post('/api/text-diff', { a: 'A\n', b: 'a\n', ignore_case: true })).body).toStrictEqual({
      success: true,
      equal: true,
      unified: '',
      hunks: [],
      stats: { added: 0, removed: 0, unchanged: 1 },
      changes: [{ type: 'unchanged', value: 'a\n' }],
      changes_truncated: false,
    });
    expect((await post('/api/text-diff', { a: '', b: '', context: 21 })).status).toBe(400);
  });
});

describe('regex_test over REST', () => {
  const cases: Array<[string, string, string, string]> = [
    ['(\\d{4})-(?<month>\\d{2})', 'g', 'on 2026-11 and 1999-01.', '$<month>/$1 [$&] $$'],
    ['', 'g', 'ab😀', '-'],
    ['', 'gu', 'ab😀', '-'],
    ['(a)|(b)', 'g', 'abc', "<$2|$1|$'|$`>"],
    ['x*', 'gy', 'xxaxx', '[$&]'],
    ['(?<n>o)', 'i', 'fOo', '$<n>$<none>$10$1$2'],
    ['\\bfoo\\b', 'gim', 'Foo\nfoo bar\nfood', 'X'],
  ];
  it('matches and groups equal matchAll / exec, and replaced equals String.prototype.replace, for JavaScript\'s own semantics', async () => {
    for (const [pattern, flags, input, replacement] of cases) {
      const r = await post('/api/regex-test', { pattern, flags, input, replacement });
      expect(r.status, pattern).toBe(200);
      const re = new RegExp(pattern, flags);
      const native = re.global ? [...input.matchAll(re)] : [re.exec(input)].filter((m) => m !== null);
      expect(r.body.matches, pattern).toStrictEqual(
        native.map((m) => ({ match: m[0], index: m.index, end: m.index + m[0].length, groups: m.slice(1).map((g) => g ?? null), named: { ...(m.groups ?? {}) } })),
      );
      expect(r.body.replaced, pattern).toBe(input.replace(new RegExp(pattern, flags), replacement));
      expect(r.body.match_count).toBe(native.length);
    }
  });

  it('an invalid pattern answers valid:false with V8\'s message and where it goes wrong; bad flags are refused', async () => {
    expect((await post('/api/regex-test', { pattern: 'ab(c', input: 'x' })).body).toStrictEqual({
      success: true,
      valid: false,
      error: { message: 'Invalid regular expression: /ab(c/g: Unterminated group', position: 4 },
    });
    expect((await post('/api/regex-test', { pattern: 'a{2,1}b', input: 'x' })).body.error.position).toBe(5);
    expect((await post('/api/regex-test', { pattern: 'a)b', input: 'x' })).body.error.position).toBe(1);
    expect((await post('/api/regex-test', { pattern: '(?<n>a)\\k<m>', flags: 'u', input: 'x' })).body.valid).toBe(false);
    expect((await post('/api/regex-test', { pattern: 'a', flags: 'uv', input: 'x' })).body.error).toStrictEqual({ message: "Invalid flags supplied to RegExp constructor 'uv'", position: null });
    expect((await post('/api/regex-test', { pattern: 'a', flags: 'x', input: 'x' })).status).toBe(400);
  });

  it('catastrophic backtracking is cut off: 422 with the reason; a replacement that would explode is refused', async () => {
    const r = await post('/api/regex-test', { pattern: '(a+)+$', input: `${'a'.repeat(40)}!` });
    expect([r.status, r.body.error.details]).toStrictEqual([422, { reason: 'timeout', limitMs: 1000 }]);
    const big = await post('/api/regex-test', { pattern: '', input: 'a'.repeat(90_000), replacement: '$`' });
    expect([big.status, big.body.error.details]).toStrictEqual([422, { limit: 1_000_000 }]);
  });
});

describe('json_schema_validate over REST', () => {
  const schema = JSON.stringify({
    type: 'object',
    properties: { age: { type: 'integer', minimum: 0 }, email: { type: 'string', format: 'email' } },
    required: ['age'],
    additionalProperties: false,
  });
  it('every error with instance path, schema path, keyword and message', async () => {
    expect(await post('/api/json-schema-validate', { schema, instance: '{"age":-1,"email":"nope","x":1}' })).toStrictEqual({
      status: 200,
      body: {
        success: true,
        valid: false,
        draft: '2020-12',
        error_count: 3,
        errors: [
          { instance_path: '', schema_path: '#/additionalProperties', keyword: 'additionalProperties', message: 'must NOT have additional properties', params: { additionalProperty: 'x' } },
          { instance_path: '/age', schema_path: '#/properties/age/minimum', keyword: 'minimum', message: 'must be >= 0', params: { comparison: '>=', limit: 0 } },
          { instance_path: '/email', schema_path: '#/properties/email/format', keyword: 'format', message: 'must match format "email"', params: { format: 'email' } },
        ],
      },
    });
    expect((await post('/api/json-schema-validate', { schema, instance: '{"age":3}' })).body).toStrictEqual({ success: true, valid: true, draft: '2020-12', error_count: 0, errors: [] });
  });

  it('the draft: from $schema, or asked; draft 7 reads items as a tuple, 2020-12 prefixItems', async () => {
    const d7 = await post('/api/json-schema-validate', { schema: '{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}]}', instance: '[1]' });
    expect([d7.body.draft, d7.body.valid]).toStrictEqual(['7', false]);
    const d2020 = await post('/api/json-schema-validate', { schema: '{"prefixItems":[{"type":"string"}]}', instance: '[1]' });
    expect([d2020.body.draft, d2020.body.valid]).toStrictEqual(['2020-12', false]);
    const d2019 = await post('/api/json-schema-validate', { schema: '{"dependentRequired":{"a":["b"]}}', instance: '{"a":1}', draft: '2019-09' });
    expect([d2019.body.draft, d2019.body.valid]).toStrictEqual(['2019-09', false]);
    const clash = await post('/api/json-schema-validate', { schema: '{"$schema":"http://json-schema.org/draft-07/schema#"}', instance: '1', draft: '2020-12' });
    expect(clash.status).toBe(400);
  });

  it('a remote $ref is never fetched: an unresolved reference (422), and the server it names gets no request', async () => {
    let hits = 0;
    const http = await import('node:http');
    const srv = http.createServer((_q, res) => {
      hits++;
      res.end('{"type":"string"}');
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    closers.push(() => new Promise((r) => srv.close(r)));
    const port = (srv.address() as { port: number }).port;
    const r = await post('/api/json-schema-validate', { schema: JSON.stringify({ $ref: `http://127.0.0.1:${port}/s.json` }), instance: '1' });
    expect([r.status, r.body.error.code, r.body.error.details]).toStrictEqual([422, 'PARSE_ERROR', { field: 'schema' }]);
    expect(hits).toBe(0);
  });

  it('a pattern that backtracks catastrophically is cut off (422), as in regex_test', async () => {
    const r = await post('/api/json-schema-validate', { schema: '{"pattern":"^(a+)+$"}', instance: JSON.stringify(`${'a'.repeat(40)}!`) });
    expect([r.status, r.body.error.details]).toStrictEqual([422, { reason: 'timeout', limitMs: 1000 }]);
  });
});

describe('the data tools over MCP', () => {
  const calls: Array<[string, Record<string, unknown>]> = [
    ['json_query', { input: JSON.stringify(STORE), query: '$..bicycle.color' }],
    ['json_patch', { action: 'diff', a: '[1,2]', b: '[1,3]' }],
    ['text_diff', { a: 'a\nb\n', b: 'a\nc\n', context: 1 }],
    ['regex_test', { pattern: '(?<d>\\d)', input: 'a1b2', replacement: '<$<d>>' }],
    ['json_schema_validate', { schema: '{"type":"string"}', instance: '1' }],
  ];

  async function rest(name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
    const { body } = await post(`/api/tools/${name}`, args);
    const { success: _, ...fields } = body as Record<string, unknown>;
    return fields;
  }

  it('SDK v1 client (legacy era, HTTP): each tool listed read-only and closed-world, its structuredContent equal to the REST answer; a failing test op is an isError naming the index', async () => {
    const c = await t.httpClient();
    const { tools } = await c.listTools();
    for (const [name, args] of calls) {
      const listed = tools.find((x) => x.name === name);
      expect(listed?.annotations).toMatchObject({ readOnlyHint: true, idempotentHint: true, openWorldHint: false });
      const r = await c.callTool({ name, arguments: args });
      expect(r.structuredContent, name).toStrictEqual(await rest(name, args));
    }
    const bad = await c.callTool({ name: 'json_patch', arguments: { action: 'apply', document: '{}', patch: '[{"op":"test","path":"/a","value":1}]' } });
    expect([bad.isError, mcpError(bad).details]).toStrictEqual([true, { operation: 0, reason: 'test_failed' }]);
  });

  it('SDK v2 client pinned to 2026-07-28 (HTTP): the same answers', async () => {
    const c = new ClientV2({ name: 'data-tests', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    closers.push(() => c.close());
    await c.connect(new HttpV2(new URL(`${t.url}/mcp`)));
    expect(c.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    for (const [name, args] of calls) {
      const r = await c.callTool({ name, arguments: args });
      expect(r.structuredContent, name).toStrictEqual(await rest(name, args));
    }
    const slow = await c.callTool({ name: 'regex_test', arguments: { pattern: '(a|aa)+$', input: `${'a'.repeat(60)}!` } });
    expect([slow.isError, mcpError(slow).code]).toStrictEqual([true, 'PARSE_ERROR']);
  });
});
