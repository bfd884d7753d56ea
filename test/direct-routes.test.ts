// The tool calls served ahead of the router (src/http/direct.ts) answer exactly what the router
// does: each request below goes once over a real socket (the direct route) and once through
// app.request() (the router), and the two answers must match — status, the headers a client
// reads, the body. With rate limits on, so that the limit headers and 429s are compared too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Logger } from '../src/log.js';
import { restBindings } from '../src/registry.js';
import { manualClock } from '../src/core/clock.js';
import { listenTestApp, useListeningApp, type ListeningApp } from './harness.js';
import { withoutRequestId } from './request-ids.js';

// A clock that stands still: both answers of a pair are computed at the same instant (Retry-After).
const t = useListeningApp({ env: { RATE_LIMITS: 'on', PLAN_KEYLESS: '30/200/50', PLAN_FREE: '60/1000/100', BODY_LIMIT: '2048' }, overrides: { clock: manualClock(Date.now()) } });

const COMPARED = ['content-type', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-policy', 'retry-after', 'www-authenticate', 'connection', 'location', 'allow'];
// Keep-alive is the socket's business (in process there is none); `Connection: close` is the answer's.
const connection = (v: string | null) => (v === 'close' ? v : null);

interface Answer {
  status: number;
  headers: Record<string, string | null>;
  body: string;
}

async function view(res: Response): Promise<Answer> {
  const headers = Object.fromEntries(COMPARED.map((h) => [h, h === 'connection' ? connection(res.headers.get(h)) : res.headers.get(h)]));
  // The reset instant may tick between the two requests; the request ids differ by nature.
  const body = withoutRequestId(await res.text(), res.headers.get('x-request-id'));
  return { status: res.status, headers, body: body.replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, '…') };
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

/** One request of a scenario: method, path, body, headers. */
type Step = [string, string, string?, Record<string, string>?];

const json = { 'content-type': 'application/json' };
const rpc = (id: number, method: string, params?: unknown) => JSON.stringify({ jsonrpc: '2.0', id, method, params });
// Tool calls, /mcp, redirects and errors; then calls until the budget (12 a minute) is spent.
const SCENARIO: Step[] = [
  ['POST', '/api/base-convert', '{"value":"255"}', json],
  ['POST', '/api/base-convert', '{"value":"12x"}', json],
  ['POST', '/api/base-convert', '{"value":', json],
  ['POST', '/api/shorten', '{"url":"https://example.com/a/long/path","code":"my-link"}', json],
  ['POST', '/api/shorten', '{"url":"https://example.com/again","code":"my-link"}', json],
  ['GET', '/s/my-link'],
  ['GET', '/s/my-link'],
  ['GET', '/s/no-such-link'],
  ['POST', '/mcp', rpc(1, 'tools/call', { name: 'base_convert', arguments: { value: '9' } }), { ...json, ...MCP_ACCEPT }],
  [
    'POST',
    '/mcp',
    rpc(2, 'tools/call', { name: 'base_convert', arguments: { value: '9' }, _meta: MODERN_META }),
    { ...json, ...MCP_ACCEPT, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'base_convert' },
  ],
  ['POST', '/mcp', rpc(3, 'tools/list'), { ...json, ...MCP_ACCEPT }],
  ['GET', '/mcp'],
  ['PUT', '/api/json-yaml', '{}', json],
  ['GET', '/api/nope'],
  ['POST', '/api/base-convert', '{"value":"1"}', { ...json, authorization: 'Bearer dtb_nope' }],
  ['POST', '/api/base-convert?from=hex', '{"value":"ff"}', json],
  ...Array.from({ length: 8 }, (): Step => ['POST', '/api/base-convert', '{"value":"7"}', json]),
];

interface Run {
  answers: Answer[];
  /** Debug log lines. */
  logged: string[];
  /** Per request of the scenario: how many times the router matched it (socket runs). */
  routed: number[];
}

/** The scenario on a fresh app at a log level, over a socket or through app.request(). */
async function runScenario(level: 'debug' | 'info', face: 'socket' | 'in process'): Promise<Run> {
  const logged: string[] = [];
  const log: Logger = { debug: (m) => void logged.push(m), info: () => {}, warn: () => {}, error: () => {} };
  // A clock that stands still: the limit headers (Reset, Retry-After) are the same in every run.
  const clock = { now: () => Date.parse('2026-11-26T10:00:00.000Z') };
  const u = await listenTestApp({ env: { RATE_LIMITS: 'on', PLAN_KEYLESS: '12/100/20', PLAN_FREE: '60/1000/100', LOG_LEVEL: level }, overrides: { log, clock } });
  try {
    await u.app.request('/livez'); // settles hono's router (see routerMatches)
    logged.length = 0;
    const answers: Answer[] = [];
    const routed: number[] = [];
    for (const [method, path, body, headers] of SCENARIO) {
      const init: RequestInit = { method, body: body ?? null, headers: headers ?? {}, redirect: 'manual' };
      const count = routerMatches(u);
      answers.push(await view(face === 'socket' ? await fetch(`${u.url}${path}`, init) : await u.app.request(path, init)));
      routed.push(count());
    }
    return { answers, logged, routed };
  } finally {
    await u.close();
  }
}

describe('one request path at every log level', () => {
  it('the same requests answer alike over a socket and in process, at LOG_LEVEL=debug and info; debug logs each one, the direct routes included', async () => {
    const info = await runScenario('info', 'socket');
    const debug = await runScenario('debug', 'socket');
    const infoInProcess = await runScenario('info', 'in process');
    const debugInProcess = await runScenario('debug', 'in process');

    expect(debug.answers).toStrictEqual(info.answers);
    expect(infoInProcess.answers).toStrictEqual(info.answers);
    expect(debugInProcess.answers).toStrictEqual(info.answers);
    // The scenario meets what it is meant to: a created link, its redirect, a conflict, a 405, the budget spent.
    const statuses = info.answers.map((a) => a.status);
    expect(statuses.slice(0, 16)).toStrictEqual([200, 422, 400, 201, 409, 302, 302, 404, 200, 200, 200, 405, 405, 404, 401, 200]);
    expect(statuses.slice(16)).toStrictEqual([200, 200, 200, 200, 200, 429, 429, 429]);

    // At debug the socket takes the same path as at info: the tool calls, /mcp and the cached
    // redirect skip the router at both levels (it was switched off at debug).
    expect(debug.routed).toStrictEqual(info.routed);
    expect(SCENARIO.map(([m, p], i) => [m, p, info.routed[i]]).filter(([m, p]) => (m === 'POST' && p === '/api/base-convert') || (m === 'POST' && p === '/mcp'))).toStrictEqual(
      SCENARIO.filter(([m, p]) => (m === 'POST' && p === '/api/base-convert') || (m === 'POST' && p === '/mcp')).map(([m, p]) => [m, p, 0]),
    );
    expect(info.routed[6]).toBe(0); // the second GET /s/my-link: the family's preroute

    // One log line per request at debug (method, path, status), none at info.
    const line = /^(\S+) (\S+) (\d{3}) \d+\.\dms$/;
    const expected = SCENARIO.map(([m, p], i) => `${m} ${p} ${info.answers[i]!.status}`);
    for (const run of [debug, debugInProcess]) expect(run.logged.map((l) => line.exec(l)?.slice(1, 4).join(' '))).toStrictEqual(expected);
    expect([info.logged, infoInProcess.logged]).toStrictEqual([[], []]);
  });
});
