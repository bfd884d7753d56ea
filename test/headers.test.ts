// Issue 21: on a real socket the request headers are read from node's parsed headers (not the web
// Headers object of the light request). Every check that reads a header must behave as it does
// through app.request() (test/rest.test.ts): the browser guard, the key, the body's type and size.
import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { headersOf } from '../src/http/headers.js';
import { useListeningApp } from './harness.js';
import { withoutRequestId } from './request-ids.js';

const t = useListeningApp();

/** A raw request (node:http lets a test set Host and repeat headers, which fetch does not). */
function raw(method: string, path: string, headers: Record<string, string | string[]>, body?: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  const { port } = new URL(t.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: Number(port), method, path, headers, setHost: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const JSON_BODY = '{"value":"255"}';
const jsonHeaders = (extra: Record<string, string | string[]> = {}) => ({ host: `127.0.0.1:${new URL(t.url).port}`, 'content-type': 'application/json', ...extra });

describe('headers on a real socket', () => {
  it('a foreign Host is refused (DNS rebinding); loopback names pass', async () => {
    const bad = await raw('GET', '/healthz', { host: 'attacker.example:3000' });
    expect(bad.status).toBe(403);
    expect(JSON.parse(withoutRequestId(bad.body, String(bad.headers['x-request-id'])))).toStrictEqual({ success: false, error: { code: 'FORBIDDEN', message: 'Host not allowed' } });
    for (const host of ['localhost:3000', '127.0.0.1:3000', '[::1]:3000']) expect((await raw('GET', '/healthz', { host })).status).toBe(200);
    // Right after an accepted Host (the guard remembers the last one), a foreign one still fails.
    expect((await raw('GET', '/healthz', { host: 'attacker.example:3000' })).status).toBe(403);
    expect((await raw('POST', '/api/base-convert', jsonHeaders({ host: 'attacker.example' }), JSON_BODY)).status).toBe(403);
  });

  it('a foreign Origin is refused on REST and /mcp; a same-origin call passes with CORS headers', async () => {
    expect((await raw('POST', '/api/base-convert', jsonHeaders({ origin: 'https://evil.example' }), JSON_BODY)).status).toBe(403);
    expect((await raw('POST', '/api/base-convert', jsonHeaders({ origin: 'null' }), JSON_BODY)).status).toBe(403);
    const mcp = await raw('POST', '/mcp', jsonHeaders({ origin: 'https://evil.example', accept: 'application/json, text/event-stream' }), '{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
    expect(mcp.status).toBe(403);
    const same = await raw('POST', '/api/base-convert', jsonHeaders({ origin: t.url }), JSON_BODY);
    expect(same.status).toBe(200);
    expect(same.headers['access-control-allow-origin']).toBe(t.url);
  });

  it('a bad key in Authorization is a 401 on REST and a JSON-RPC error on /mcp', async () => {
    const rest = await raw('POST', '/api/base-convert', jsonHeaders({ authorization: 'Bearer dtb_nope' }), JSON_BODY);
    expect(rest.status).toBe(401);
    expect(JSON.parse(rest.body)).toMatchObject({ success: false, error: { code: 'UNAUTHORIZED' } });
    const mcp = await raw('POST', '/mcp', jsonHeaders({ authorization: 'Bearer dtb_nope', accept: 'application/json, text/event-stream' }), '{"jsonrpc":"2.0","id":7,"method":"tools/list"}');
    expect(mcp.status).toBe(401);
    expect(JSON.parse(mcp.body)).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32600 } });
  });

  it('the body type and declared size are read from the headers: 415 and 413', async () => {
    const plain = await raw('POST', '/api/base-convert', { ...jsonHeaders(), 'content-type': 'text/plain' }, JSON_BODY);
    expect(plain.status).toBe(415);
    expect(JSON.parse(plain.body)).toMatchObject({ error: { code: 'UNSUPPORTED_MEDIA_TYPE' } });
    const big = await raw('POST', '/api/base-convert', { ...jsonHeaders(), 'content-length': String(t.services.config.bodyLimit + 1) }, 'x'.repeat(t.services.config.bodyLimit + 1));
    expect(big.status).toBe(413);
    // A JSON call passes; the answer is the same as through app.request().
    const ok = await raw('POST', '/api/base-convert', jsonHeaders(), JSON_BODY);
    expect(JSON.parse(ok.body)).toStrictEqual(await (await t.request('POST', '/api/base-convert', { value: '255' })).json());
  });

  it('MCP reads its standard headers from the socket: a 2026-07-28 call with a mismatched Mcp-Name is refused', async () => {
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'base_convert', arguments: { value: '255' }, _meta: meta } });
    const headers = jsonHeaders({ accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call' });
    const wrong = await raw('POST', '/mcp', { ...headers, 'mcp-name': 'html_entity' }, body);
    expect(wrong.status).toBe(400);
    expect(JSON.parse(wrong.body)).toMatchObject({ error: { code: -32020 } });
    const right = await raw('POST', '/mcp', { ...headers, 'mcp-name': 'base_convert' }, body);
    expect(right.status).toBe(200);
    expect(JSON.parse(right.body)).toMatchObject({ result: { structuredContent: { hex: 'ff' } } });
  });
});

describe('headersOf', () => {
  it("reads node's parsed headers when served by node-server: lower-case names, arrays joined, null when absent", () => {
    const req = new Request('http://x/', { headers: { 'x-web': 'web' } });
    const get = headersOf(req, { incoming: { headers: { host: 'a:1', 'set-cookie': ['a=1', 'b=2'] } } });
    expect(get('host')).toBe('a:1');
    expect(get('set-cookie')).toBe('a=1, b=2');
    expect(get('x-web')).toBe(null); // node's headers, not the web ones
    expect(get('origin')).toBe(null);
  });

  it('falls back to the web Headers without node (app.request())', () => {
    const req = new Request('http://x/', { headers: { 'X-Web': 'web' } });
    expect(headersOf(req, undefined)('x-web')).toBe('web');
    expect(headersOf(req, {})('origin')).toBe(null);
  });
});
