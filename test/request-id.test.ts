/**
 * Request ids in error bodies and MCP errors (docs/operations.md, Request ids): by default, every
 * error answer names the request id of the HTTP answer that carried it — the REST error families,
 * and over MCP, seen by the real SDK clients, a failed tool call's error object and a JSON-RPC
 * error's data: SDK v1 on the legacy era (whose protocol errors come from the SDK server) and SDK
 * v2 pinned to 2026-07-28 (our dispatch). With request tracking on, the same. stdio: none.
 */
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import http from 'node:http';
import path from 'node:path';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { mcpErrorObject, tempDir, useListeningApp } from './harness.js';

const ID = /^[A-Za-z0-9]{8}-[0-9a-z]+$/;

/** A fetch that remembers the X-Request-Id of the last answer. */
function recordingFetch(): { fetch: typeof fetch; last(): string | null } {
  let last: string | null = null;
  return {
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      last = res.headers.get('x-request-id');
      return res;
    },
    last: () => last,
  };
}

const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closers.splice(0)) await close().catch(() => {});
});

/** A request over node's own client (a Host or Origin header fetch would not send), its answer whole. */
function raw(url: string, method: string, p: string, headers: Record<string, string>, body?: string): Promise<{ status: number; id: string | undefined; ids: string[]; body: string }> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: Number(port), method, path: p, headers, setHost: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      // Every X-Request-Id line of the raw head (a second one would show here).
      const ids = res.rawHeaders.filter((_v, i) => i % 2 === 1 && res.rawHeaders[i - 1]!.toLowerCase() === 'x-request-id');
      res.on('end', () => resolve({ status: res.statusCode!, id: res.headers['x-request-id'] as string | undefined, ids, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('request ids in every error body, by default (no request tracking)', () => {
  const t = useListeningApp({ env: { RATE_LIMITS: 'on', PLAN_KEYLESS: '6/200/50', PLAN_FREE: '60/1000/100', BODY_LIMIT: '2048', LOG_LEVEL: 'silent' } });
  const host = () => ({ host: `127.0.0.1:${new URL(t.url).port}` });
  const json = { 'content-type': 'application/json' };
  const mcpHeaders = { ...json, accept: 'application/json, text/event-stream' };

  it('a success carries no request_id in its body (the header only)', async () => {
    const ok = await fetch(`${t.url}/api/base-convert`, { method: 'POST', headers: json, body: '{"value":"255"}' });
    expect(ok.headers.get('x-request-id')).toMatch(ID);
    expect(await ok.text()).not.toContain('request_id');
  });

  it('each REST error family and /mcp’s own refusals: request_id, last, equal to X-Request-Id', async () => {
    const answers = {
      invalid: await raw(t.url, 'POST', '/api/base-convert', { ...host(), ...json }, '{"value":""}'),
      parse: await raw(t.url, 'POST', '/api/base-convert', { ...host(), ...json }, '{"value":"12z"}'),
      notJson: await raw(t.url, 'POST', '/api/base-convert', { ...host(), ...json }, '{"value":'),
      unknownRoute: await raw(t.url, 'GET', '/no/such/route', host()),
      wrongMethod: await raw(t.url, 'PUT', '/api/json-yaml', host()),
      tooLarge: await raw(t.url, 'POST', '/api/base-convert', { ...host(), ...json }, JSON.stringify({ value: '1'.repeat(4000) })),
      badKey: await raw(t.url, 'POST', '/api/base-convert', { ...host(), ...json, authorization: 'Bearer dtb_nope' }, '{"value":"1"}'),
      foreignHost: await raw(t.url, 'GET', '/healthz', { host: 'attacker.example' }),
      foreignOrigin: await raw(t.url, 'POST', '/api/base-convert', { ...host(), ...json, origin: 'https://evil.example' }, '{"value":"1"}'),
    };
    const codes = Object.fromEntries(Object.entries(answers).map(([k, a]) => [k, [a.status, (JSON.parse(a.body) as { error: { code: string } }).error.code]]));
    expect(codes).toStrictEqual({
      invalid: [400, 'INVALID_INPUT'],
      parse: [422, 'PARSE_ERROR'],
      notJson: [400, 'INVALID_INPUT'],
      unknownRoute: [404, 'NOT_FOUND'],
      wrongMethod: [405, 'METHOD_NOT_ALLOWED'],
      tooLarge: [413, 'PAYLOAD_TOO_LARGE'],
      badKey: [401, 'UNAUTHORIZED'],
      foreignHost: [403, 'FORBIDDEN'],
      foreignOrigin: [403, 'FORBIDDEN'],
    });
    for (const a of Object.values(answers)) {
      expect(a.id).toMatch(ID);
      const error = (JSON.parse(a.body) as { error: Record<string, unknown> }).error;
      expect(Object.keys(error).at(-1)).toBe('request_id');
      expect(error.request_id).toBe(a.id);
    }
    // A 429 once the budget is spent (the limit counts tool calls: six a minute, some spent above).
    let last = await raw(t.url, 'POST', '/api/base-convert', { ...host(), ...json }, '{"value":"1"}');
    for (let i = 0; i < 10 && last.status !== 429; i++) last = await raw(t.url, 'POST', '/api/base-convert', { ...host(), ...json }, '{"value":"1"}');
    expect(last.status).toBe(429);
    expect(JSON.parse(last.body)).toMatchObject({ success: false, error: { code: 'RATE_LIMITED', request_id: last.id } });

    // /mcp: its 413, its 401 and its 405 are JSON-RPC errors naming the request in their data.
    const mcp413 = await raw(t.url, 'POST', '/mcp', { ...host(), ...mcpHeaders }, JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/list', params: { pad: 'x'.repeat(4000) } }));
    const mcp401 = await raw(t.url, 'POST', '/mcp', { ...host(), ...mcpHeaders, authorization: 'Bearer dtb_nope' }, JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/list' }));
    const mcp405 = await raw(t.url, 'GET', '/mcp', host());
    expect([mcp413, mcp401, mcp405].map((a) => [a.status, JSON.parse(a.body)])).toStrictEqual([
      [413, { jsonrpc: '2.0', id: 4, error: { code: -32600, message: 'Request body is larger than 2048 bytes', data: { limit: 2048, request_id: mcp413.id } } }],
      [401, { jsonrpc: '2.0', id: 5, error: { code: -32600, message: expect.any(String), data: { request_id: mcp401.id } } }],
      [405, { jsonrpc: '2.0', error: { code: -32600, message: 'Method not allowed: this server is stateless; use POST', data: { request_id: mcp405.id } }, id: null }],
    ]);
    for (const a of [mcp413, mcp401, mcp405]) expect(a.id).toMatch(ID);
  });
});

for (const tracking of [false, true]) {
  describe(`one X-Request-Id on every kind of answer${tracking ? ', request tracking on' : ''} (issue 37: added with the head)`, () => {
    const t = useListeningApp({ env: { RATE_LIMITS: 'on', LOG_LEVEL: 'silent', ...(tracking ? { LOG_REQUESTS: 'on' } : {}) } });
    const json = { 'content-type': 'application/json' };
    const host = () => ({ host: `127.0.0.1:${new URL(t.url).port}` });

    it('limited successes, errors, redirects, HEAD, pages, preflights, MCP, unknown paths', async () => {
      const made = await fetch(`${t.url}/api/shorten`, { method: 'POST', headers: json, body: JSON.stringify({ url: 'https://example.com/id' }) });
      const { code } = (await made.json()) as { code: string };
      const cases: [string, string, Record<string, string>, string?][] = [
        ['POST', '/api/base-convert', json, '{"value":"255"}'],
        ['POST', '/api/base-convert', json, '{"value":"zz","from":"dec"}'],
        ['POST', '/api/base-convert', json, '{not json'],
        ['GET', `/s/${code}`, {}],
        ['HEAD', `/s/${code}`, {}],
        ['GET', '/s/nosuchcode', {}],
        ['GET', '/healthz', {}],
        ['GET', '/openapi.json', {}],
        ['GET', '/docs', {}],
        ['OPTIONS', '/api/base-convert', { origin: 'https://app.example', 'access-control-request-method': 'POST' }],
        ['POST', '/mcp', { ...json, accept: 'application/json, text/event-stream' }, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'id', version: '0' } } })],
        ['GET', '/no/such/path', {}],
      ];
      const seen = new Set<string>();
      for (const [method, p, headers, body] of cases) {
        const r = await raw(t.url, method, p, { ...host(), ...headers }, body);
        expect({ method, p, status: r.status, lines: r.ids.length }).toStrictEqual({ method, p, status: r.status, lines: 1 });
        expect(r.ids[0]).toMatch(ID);
        seen.add(r.ids[0]!);
      }
      // Each answer its own id.
      expect(seen.size).toBe(cases.length);
    });

    it("a trusted proxy's X-Request-Id is echoed once, not beside a new one", async () => {
      const r = await raw(t.url, 'POST', '/api/base-convert', { ...host(), ...json, 'x-request-id': 'from-a-client' }, '{"value":"1"}');
      // Not from a trusted proxy (TRUSTED_PROXIES is empty): a new id, and only it.
      expect(r.ids).toHaveLength(1);
      expect(r.ids[0]).toMatch(ID);
    });
  });
}

describe('request ids in MCP errors over HTTP, by default', () => {
  const t = useListeningApp({ env: { LOG_LEVEL: 'silent' } });
  mcpCases(() => t.url);
});

describe('request ids in MCP errors over HTTP, with request tracking on', () => {
  const t = useListeningApp({ env: { LOG_REQUESTS: 'on', LOG_LEVEL: 'silent' } });
  mcpCases(() => t.url);
});

describe('request ids over stdio: none (no HTTP request, no header to match)', () => {
  it('a failed call’s error object and a protocol error carry no request_id; the rest as before', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [path.join(import.meta.dirname, '..', 'dist', 'main.js'), 'stdio'],
      env: { ...process.env, DATA_DIR: tempDir(), LOG_LEVEL: 'silent', LOG_REQUESTS: 'on' } as Record<string, string>,
      stderr: 'pipe',
    });
    const c = new ClientV1({ name: 'request-id-stdio', version: '1.0.0' });
    closers.push(() => c.close());
    await c.connect(transport);
    const bad = await c.callTool({ name: 'base_convert', arguments: { value: '12z' } });
    expect(bad.isError).toBe(true);
    expect(Object.keys(mcpErrorObject(bad)).sort()).toStrictEqual(['code', 'details', 'message']);
    const refused = await c.request({ method: 'no/such', params: {} }, z.object({})).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: -32601 });
    expect((refused as { data?: unknown }).data).toBeUndefined();
  }, 60_000);
});

/** A failed tool call and a protocol error of each era, over HTTP with the real SDK clients. */
function mcpCases(url: () => string): void {
  it('SDK v1 (legacy era): a failed call’s error object and the SDK’s protocol error name their request', async () => {
    const rec = recordingFetch();
    const c = new ClientV1({ name: 'request-id', version: '1.0.0' });
    closers.push(() => c.close());
    await c.connect(new HttpV1(new URL(`${url()}/mcp`), { fetch: rec.fetch }));
    const bad = await c.callTool({ name: 'base_convert', arguments: { value: '12z' } });
    expect(bad.isError).toBe(true);
    expect(rec.last()).toMatch(ID);
    expect(mcpErrorObject(bad)).toMatchObject({ code: 'PARSE_ERROR', request_id: rec.last() });
    const refused = await c.request({ method: 'no/such', params: {} }, z.object({})).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: -32601, data: { request_id: rec.last() } });
  });

  it('SDK v2 pinned to 2026-07-28: a failed call’s error object and a JSON-RPC error name their request', async () => {
    const rec = recordingFetch();
    const c = new ClientV2({ name: 'request-id', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    closers.push(() => c.close());
    await c.connect(new HttpV2(new URL(`${url()}/mcp`), { fetch: rec.fetch }));
    const bad = await c.callTool({ name: 'base_convert', arguments: { value: '12z' } });
    expect(bad.isError).toBe(true);
    expect(rec.last()).toMatch(ID);
    expect(mcpErrorObject(bad)).toMatchObject({ code: 'PARSE_ERROR', request_id: rec.last() });
    const unknown = await c.callTool({ name: 'no_such_tool', arguments: {} }).catch((e: unknown) => e);
    expect(unknown).toMatchObject({ data: { request_id: rec.last() } });
  });
}
