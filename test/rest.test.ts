import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenTestApp, startTestApp, useTestApp, type TestApp } from './harness.js';
import { jsonWithoutRequestId } from './request-ids.js';

const t = useTestApp();

/** The JSON body, its request id checked against X-Request-Id and taken out (./request-ids.ts). */
async function json(r: Response): Promise<unknown> {
  expect(r.headers.get('content-type')).toContain('application/json');
  return jsonWithoutRequestId(r);
}

describe('REST projection', () => {
  it('answers a tool call with the flat success body', async () => {
    const r = await t.request('POST', '/api/base-convert', { value: '0b1010', from: 'bin' });
    expect(r.status).toBe(200);
    expect(await json(r)).toStrictEqual({ success: true, input: '0b1010', from: 'bin', dec: '10', bin: '1010', oct: '12', hex: 'a' });
  });

  it('serves every tool at POST /api/tools/{name} too', async () => {
    const r = await t.request('POST', '/api/tools/html_entity', { content: '<b>' });
    expect(await json(r)).toStrictEqual({ success: true, result: '&lt;b&gt;', action: 'encode' });
    const u = await t.request('POST', '/api/tools/nope', {});
    expect(u.status).toBe(404);
    expect(await json(u)).toStrictEqual({ success: false, error: { code: 'NOT_FOUND', message: 'Unknown tool: nope' } });
  });

  it('400 INVALID_INPUT with the failing fields', async () => {
    const r = await t.request('POST', '/api/json-yaml', { input: 5, indent: 9 });
    expect(r.status).toBe(400);
    expect(await json(r)).toStrictEqual({
      success: false,
      error: {
        code: 'INVALID_INPUT',
        message: 'Invalid input for json_yaml_convert',
        details: [
          { path: 'input', message: 'Invalid input: expected string, received number' },
          { path: 'indent', message: 'Too big: expected number to be <=8' },
        ],
      },
    });
  });

  it('400 when the body is not a JSON object or not JSON at all', async () => {
    for (const body of ['[1,2]', '"x"', '17', 'null']) {
      const r = await t.request('POST', '/api/base-convert', body);
      expect(r.status).toBe(400);
      expect(((await json(r)) as { error: { code: string } }).error.code).toBe('INVALID_INPUT');
    }
    const r = await t.request('POST', '/api/base-convert', '{"value": ');
    expect(r.status).toBe(400);
    expect(await json(r)).toStrictEqual({ success: false, error: { code: 'INVALID_INPUT', message: 'The request body is not valid JSON' } });
  });

  it('rejects out-of-range values instead of clamping them', async () => {
    const r = await t.request('POST', '/api/json-yaml', { input: '{}', indent: 0 });
    expect(r.status).toBe(400);
  });

  it('ignores unknown body fields', async () => {
    const r = await t.request('POST', '/api/base-convert', { value: '7', extra: { deep: true } });
    expect(r.status).toBe(200);
  });

  it('404 NOT_FOUND for an unknown route', async () => {
    const r = await t.request('GET', '/api/nope');
    expect(r.status).toBe(404);
    expect(await json(r)).toStrictEqual({ success: false, error: { code: 'NOT_FOUND', message: 'No route for GET /api/nope' } });
  });

  // A wrong method on a served path was a 404 NOT_FOUND, as if the path did not exist.
  const WRONG_METHODS: Array<[string, string, string]> = [
    ['PUT', '/api/json-yaml', 'POST'],
    ['GET', '/api/base-convert', 'POST'],
    ['POST', '/healthz', 'GET, HEAD'],
    ['DELETE', '/api/shorten', 'GET, HEAD, POST'],
    ['PUT', '/api/cron-task/task_x', 'PATCH, DELETE'],
    ['PUT', '/api/cron-task/logs', 'GET, HEAD, PATCH, DELETE'],
    ['POST', '/s/my-link', 'GET, HEAD'],
    ['GET', '/api/tools/base_convert', 'POST'],
    ['POST', '/api/tasks/some-id', 'GET, HEAD, DELETE'],
  ];
  const methodNotAllowed = (method: string, path: string, allow: string) => ({
    status: 405,
    allow,
    body: { success: false, error: { code: 'METHOD_NOT_ALLOWED', message: `${method} is not served on ${path}; allowed: ${allow}` } },
  });
  const answerOf = async (r: Response) => ({ status: r.status, allow: r.headers.get('allow'), body: await json(r) });

  it('405 METHOD_NOT_ALLOWED with Allow for a wrong method on a served path (in process)', async () => {
    for (const [method, path, allow] of WRONG_METHODS) {
      expect([method, path, await answerOf(await t.request(method, path))]).toStrictEqual([method, path, methodNotAllowed(method, path, allow)]);
    }
    // HEAD: the same status and Allow, no body.
    const head = await t.request('HEAD', '/api/json-yaml');
    expect([head.status, head.headers.get('allow'), await head.text()]).toStrictEqual([405, 'POST', '']);
    // An unknown path stays a 404, whatever the method.
    const unknown = await t.request('PUT', '/api/nope');
    expect(await answerOf(unknown)).toStrictEqual({ status: 404, allow: null, body: { success: false, error: { code: 'NOT_FOUND', message: 'No route for PUT /api/nope' } } });
  });

  it('405 with Allow over a socket too (the direct routes decline a wrong method to the router)', async () => {
    const s = await listenTestApp();
    try {
      for (const [method, path, allow] of WRONG_METHODS) {
        expect([method, path, await answerOf(await fetch(`${s.url}${path}`, { method }))]).toStrictEqual([method, path, methodNotAllowed(method, path, allow)]);
      }
      const mcp = await fetch(`${s.url}/mcp`, { method: 'PUT' });
      expect([mcp.status, mcp.headers.get('allow')]).toStrictEqual([405, 'POST']);
      const unknown = await fetch(`${s.url}/api/nope`, { method: 'PUT' });
      expect(unknown.status).toBe(404);
    } finally {
      await s.close();
    }
  });

  it('413 PAYLOAD_TOO_LARGE past the body limit, by header and by stream', async () => {
    const big = JSON.stringify({ input: 'x'.repeat(1024 * 1024 + 10) });
    const r = await t.request('POST', '/api/html-entity', big);
    expect(r.status).toBe(413);
    expect(await json(r)).toStrictEqual({
      success: false,
      error: { code: 'PAYLOAD_TOO_LARGE', message: 'Request body is larger than 1048576 bytes', details: { limit: 1048576 } },
    });
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < 20; i++) c.enqueue(new TextEncoder().encode('x'.repeat(100_000)));
        c.close();
      },
    });
    const r2 = await t.app.request('/api/html-entity', { method: 'POST', headers: { 'content-type': 'application/json' }, body: stream, duplex: 'half' } as RequestInit);
    expect(r2.status).toBe(413);
  });

  it('415 UNSUPPORTED_MEDIA_TYPE for a non-JSON body', async () => {
    const r = await t.request('POST', '/api/base-convert', 'value=1', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(r.status).toBe(415);
    expect(((await json(r)) as { error: { code: string } }).error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('422 PARSE_ERROR with line and column', async () => {
    const r = await t.request('POST', '/api/json-yaml', { input: '{\n  "a": 1,\n}', direction: 'json2yaml' });
    expect(r.status).toBe(422);
    const body = (await json(r)) as { error: { code: string; details: unknown } };
    expect(body.error.code).toBe('PARSE_ERROR');
    expect(body.error.details).toStrictEqual({ line: 3, column: 1 });
  });

  it('REST and MCP return the same fields for the same input', async () => {
    const client = await t.mcpClient();
    const cases: Array<[string, string, Record<string, unknown>]> = [
      ['base_convert', '/api/base-convert', { value: '-0x1f', from: 'hex' }],
      ['json_yaml_convert', '/api/json-yaml', { input: 'a: [1, 2]' }],
      ['html_entity', '/api/html-entity', { input: '&amp;&eacute;' }],
    ];
    for (const [name, path, input] of cases) {
      const rest = (await json(await t.request('POST', path, input))) as Record<string, unknown>;
      const mcp = await client.callTool({ name, arguments: input });
      expect({ success: true, ...(mcp.structuredContent as object) }).toStrictEqual(rest);
    }
  });

  it('serves /healthz, /api/tools and /openapi.json', async () => {
    expect(await json(await t.request('GET', '/healthz'))).toStrictEqual({ status: 'ok' });
    const tools = (await json(await t.request('GET', '/api/tools'))) as { tools: Array<{ name: string; inputSchema: unknown }> };
    expect(tools.tools.map((x) => x.name)).toStrictEqual(t.registry.tools.map((x) => x.name));
    const doc = (await json(await t.request('GET', '/openapi.json'))) as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toContain('/api/base-convert');
  });

  describe('browser safety', () => {
    it('403 for a foreign Origin, allowed for same origin', async () => {
      const r = await t.request('POST', '/api/base-convert', { value: '1' }, { origin: 'https://evil.example' });
      expect(r.status).toBe(403);
      const same = await t.request('POST', '/api/base-convert', { value: '1' }, { origin: 'http://localhost', host: 'localhost' });
      expect(same.status).toBe(200);
      const mcp = await t.request('POST', '/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { origin: 'https://evil.example', accept: 'application/json, text/event-stream' });
      expect(mcp.status).toBe(403);
    });

    it('403 for Origin: null (sandboxed frames, file: pages) unless any origin is allowed', async () => {
      const r = await t.request('POST', '/api/base-convert', { value: '1' }, { origin: 'null' });
      expect(r.status).toBe(403);
      expect(await json(r)).toStrictEqual({ success: false, error: { code: 'FORBIDDEN', message: 'Origin not allowed' } });
      const any = await startTestApp({ env: { ALLOWED_ORIGINS: '*' } });
      try {
        expect((await any.request('POST', '/api/base-convert', { value: '1' }, { origin: 'null' })).status).toBe(200);
      } finally {
        await any.close();
      }
    });

    it('403 for a foreign Host when bound to loopback (DNS rebinding)', async () => {
      const r = await t.request('GET', '/healthz', undefined, { host: 'attacker.example:3000' });
      expect(r.status).toBe(403);
      for (const host of ['localhost:3000', '127.0.0.1:3000', '[::1]:3000']) {
        expect((await t.request('GET', '/healthz', undefined, { host })).status).toBe(200);
      }
    });

    it('allows a listed origin with CORS headers', async () => {
      const t2 = await startTestApp({ env: { ALLOWED_ORIGINS: 'https://app.example' } });
      try {
        const r = await t2.request('POST', '/api/base-convert', { value: '1' }, { origin: 'https://app.example' });
        expect(r.status).toBe(200);
        expect(r.headers.get('access-control-allow-origin')).toBe('https://app.example');
        const pre = await t2.request('OPTIONS', '/api/base-convert', undefined, { origin: 'https://app.example' });
        expect(pre.status).toBe(204);
        expect((await t2.request('POST', '/api/base-convert', { value: '1' }, { origin: 'https://other.example' })).status).toBe(403);
      } finally {
        await t2.close();
      }
    });
  });
});
