// The tool calls served ahead of the router (src/http/direct.ts) answer exactly what the router
// does: each request below goes once over a real socket (the direct route) and once through
// app.request() (the router), and the two answers must match — status, the headers a client
// reads, the body. With rate limits on, so that the limit headers and 429s are compared too.
import { describe, expect, it } from 'vitest';
import { restBindings } from '../src/registry.js';
import { manualClock } from '../src/core/clock.js';
import { listenTestApp, useListeningApp, type ListeningApp } from './harness.js';

// A clock that stands still: both answers of a pair are computed at the same instant (Retry-After).
const t = useListeningApp({ env: { RATE_LIMITS: 'on', PLAN_KEYLESS: '30/200/50', PLAN_FREE: '60/1000/100', BODY_LIMIT: '2048' }, overrides: { clock: manualClock(Date.now()) } });

const COMPARED = ['content-type', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-policy', 'retry-after', 'www-authenticate', 'connection'];
// Keep-alive is the socket's business (in process there is none); `Connection: close` is the answer's.
const connection = (v: string | null) => (v === 'close' ? v : null);

interface Answer {
  status: number;
  headers: Record<string, string | null>;
  body: string;
}

async function view(res: Response): Promise<Answer> {
  const headers = Object.fromEntries(COMPARED.map((h) => [h, h === 'connection' ? connection(res.headers.get(h)) : res.headers.get(h)]));
  // The reset instant may tick between the two requests.
  return { status: res.status, headers, body: (await res.text()).replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, '…') };
}

/** The same request over the socket (direct) and in process (router). */
async function both(path: string, body: string, headers: Record<string, string> = {}): Promise<[Answer, Answer]> {
  const init = { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } };
  const direct = await view(await fetch(`${t.url}${path}`, init));
  const routed = await view(await t.app.request(path, init));
  return [direct, routed];
}

/** How many requests of `app` went through the router. */
function routerMatches(app: ListeningApp): () => number {
  const router = app.app.router as { match: (...a: unknown[]) => unknown };
  const match = router.match;
  let n = 0;
  router.match = function (this: unknown, ...a: unknown[]) {
    n++;
    return match.apply(this, a);
  };
  return () => {
    router.match = match;
    return n;
  };
}

const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' },
};
const MCP_ACCEPT = { accept: 'application/json, text/event-stream' };

describe('direct routes (REST tool calls and POST /mcp ahead of the router)', () => {
  it('take the tool calls over a socket without the router, and leave the rest to it', async () => {
    const u = await listenTestApp();
    try {
      // hono's default router settles its own match function on first use: settle it first.
      await u.app.request('/livez');
      const done = routerMatches(u);
      await fetch(`${u.url}/api/base-convert`, { method: 'POST', body: '{"value":"1"}', headers: { 'content-type': 'application/json' } });
      await fetch(`${u.url}/mcp`, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), headers: { 'content-type': 'application/json', ...MCP_ACCEPT } });
      expect(done()).toBe(0);
      const again = routerMatches(u);
      await fetch(`${u.url}/api/base-convert?api_key=`, { method: 'POST', body: '{"value":"1"}', headers: { 'content-type': 'application/json' } });
      await fetch(`${u.url}/healthz`);
      expect(again()).toBe(2);
    } finally {
      await u.close();
    }
  });

  const cases: Array<[string, string, string, Record<string, string>?]> = [
    ['a call', '/api/base-convert', '{"value":"255","from":"dec"}'],
    ['invalid input', '/api/base-convert', '{"value":""}'],
    ['a tool error', '/api/base-convert', '{"value":"12x"}'],
    ['JSON that does not parse', '/api/base-convert', '{"value":'],
    ['a body that is not an object', '/api/base-convert', '[1,2]'],
    ['an empty body', '/api/base-convert', ''],
    ['another content type', '/api/base-convert', '{"value":"1"}', { 'content-type': 'text/plain' }],
    ['a body over the limit', '/api/base-convert', JSON.stringify({ value: '1'.repeat(4000) })],
    ['a malformed Authorization', '/api/base-convert', '{"value":"1"}', { authorization: 'Basic abc' }],
    ['an unknown key', '/api/base-convert', '{"value":"1"}', { authorization: 'Bearer dtb_nope' }],
    ['a binary answer', '/api/qrcode', '{"text":"hi","format":"png"}'],
    ['MCP legacy tools/call', '/mcp', JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'base_convert', arguments: { value: '9' } } }), MCP_ACCEPT],
    [
      'MCP 2026-07-28 tools/call',
      '/mcp',
      JSON.stringify({ jsonrpc: '2.0', id: 'x', method: 'tools/call', params: { name: 'base_convert', arguments: { value: '9' }, _meta: MODERN_META } }),
      { ...MCP_ACCEPT, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'base_convert' },
    ],
    ['MCP JSON that does not parse', '/mcp', '{"jsonrpc":', MCP_ACCEPT],
    ['MCP with an unknown key', '/mcp', JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list' }), { ...MCP_ACCEPT, authorization: 'Bearer dtb_nope' }],
  ];
  for (const [name, path, body, headers] of cases) {
    it(`answer alike: ${name}`, async () => {
      const [direct, routed] = await both(path, body, headers);
      expect(direct).toStrictEqual(routed);
    });
  }

  it('answer alike on every static tool route (an empty call each): no family route hides behind one', async () => {
    const u = await listenTestApp();
    try {
      const routes = u.registry.tools.flatMap((tool) => restBindings(tool).filter((b) => !b.path.includes('{')));
      expect(routes.length).toBeGreaterThan(15);
      for (const b of routes) {
        const init = b.method === 'POST' ? { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } } : { method: b.method };
        const direct = await view(await fetch(`${u.url}${b.path}`, init));
        const routed = await view(await u.app.request(b.path, init));
        expect([b.method, b.path, direct]).toStrictEqual([b.method, b.path, routed]);
      }
    } finally {
      await u.close();
    }
  });

  it('answer alike once the budget is spent (429, Retry-After)', async () => {
    let last: [Answer, Answer] | undefined;
    for (let i = 0; i < 40 && last?.[0].status !== 429; i++) last = await both('/api/base-convert', '{"value":"1"}');
    const [direct, routed] = last!;
    expect(direct.status).toBe(429);
    expect(direct.headers['retry-after']).not.toBeNull();
    expect(direct).toStrictEqual(routed);
  });
});
