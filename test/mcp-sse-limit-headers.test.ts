/**
 * Issue 29: a tools/call with a progress token is answered on its own SSE stream; its response
 * carries the call's RateLimit headers as the JSON answer does. With REDIS_URL the limiter
 * answers asynchronously, and the stream's headers were built before it had: none were sent
 * (2026-07-28 in our dispatch, and the legacy era in the SDK's transport alike). Both backends
 * here, over real HTTP (the Redis one on a real redis-server).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenTestApp, type ListeningApp } from './harness.js';
import { describeRedis, startRedis, type TestRedis } from './redis.js';

const MODERN = '2026-07-28';
const LIMIT_HEADERS = ['ratelimit', 'ratelimit-limit', 'ratelimit-policy', 'ratelimit-remaining', 'ratelimit-reset'];

type Era = 'modern' | 'legacy';

function toolCall(era: Era, url: string, id: number, progressToken?: string): Promise<Response> {
  return era === 'modern' ? modernCall(url, id, progressToken) : legacyCall(url, id, progressToken);
}

/** A 2025-11-25 call (no session: the server is stateless), answered by the SDK's transport when it streams. */
function legacyCall(url: string, id: number, progressToken?: string): Promise<Response> {
  return fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'base_convert', arguments: { value: '255' }, ...(progressToken === undefined ? {} : { _meta: { progressToken } }) },
    }),
  });
}

function modernCall(url: string, id: number, progressToken?: string): Promise<Response> {
  const meta: Record<string, unknown> = {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': {},
    ...(progressToken === undefined ? {} : { progressToken }),
  };
  return fetch(`${url}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN,
      'mcp-method': 'tools/call',
      'mcp-name': 'base_convert',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'base_convert', arguments: { value: '255' }, _meta: meta } }),
  });
}

/** The RateLimit* headers of a response, by lower-case name. */
function limitHeaders(r: Response): Record<string, string> {
  const out: Array<[string, string]> = [];
  r.headers.forEach((v, k) => void (k.startsWith('ratelimit') && out.push([k, v])));
  return Object.fromEntries(out.sort(([a], [b]) => a.localeCompare(b)));
}

/** The messages of an SSE body. */
async function events(r: Response): Promise<Array<Record<string, any>>> {
  const text = await r.text();
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((e) => JSON.parse(e.slice(e.indexOf('data: ') + 6)) as Record<string, any>);
}

/** Two calls on a fresh server (keyless, 5 a minute): JSON, then SSE; both carry the same limit headers, counting down. */
async function sseCarriesLimitHeaders(app: ListeningApp, era: Era): Promise<void> {
  const json = await toolCall(era, app.url, 1);
  expect(json.status).toBe(200);
  expect(json.headers.get('content-type')).toContain('application/json');
  const fromJson = limitHeaders(json);
  expect(Object.keys(fromJson)).toStrictEqual(LIMIT_HEADERS);
  expect(fromJson['ratelimit-remaining']).toBe('4');
  expect(((await json.json()) as { result: { structuredContent: { hex: string } } }).result.structuredContent.hex).toBe('ff');

  const sse = await toolCall(era, app.url, 2, 'p-1');
  expect(sse.status).toBe(200);
  expect(sse.headers.get('content-type')).toContain('text/event-stream');
  const fromSse = limitHeaders(sse);
  expect(Object.keys(fromSse)).toStrictEqual(LIMIT_HEADERS);
  expect(fromSse['ratelimit-limit']).toBe(fromJson['ratelimit-limit']);
  expect(fromSse['ratelimit-policy']).toBe(fromJson['ratelimit-policy']);
  expect(fromSse['ratelimit-remaining']).toBe('3');
  const msgs = await events(sse);
  expect(msgs.at(-1)).toMatchObject({ id: 2, result: { structuredContent: { hex: 'ff' } } });
}

/** Past the budget the SSE answer still carries the refusal's headers, Retry-After included, and the error in the stream. */
async function refusedSseCarriesRetryAfter(app: ListeningApp, era: Era): Promise<void> {
  for (let i = 0; i < 5; i++) expect((await toolCall(era, app.url, 10 + i)).status).toBe(200);
  const sse = await toolCall(era, app.url, 20, 'p-2');
  expect(sse.headers.get('content-type')).toContain('text/event-stream');
  expect(sse.headers.get('ratelimit-remaining')).toBe('0');
  expect(Number(sse.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  const last = (await events(sse)).at(-1)!;
  expect(last.id).toBe(20);
  expect(last.result.isError).toBe(true);
  expect(JSON.parse(last.result.content[0].text).error.code).toBe('RATE_LIMITED');
}

/** A legacy SSE request that makes no call has no limit headers to wait for: its answer comes, without them. */
async function sseWithoutCallIsAnswered(app: ListeningApp): Promise<void> {
  const r = await fetch(`${app.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/list', params: { _meta: { progressToken: 'p-3' } } }),
  });
  expect(r.headers.get('content-type')).toContain('text/event-stream');
  expect(limitHeaders(r)).toStrictEqual({});
  const last = (await events(r)).at(-1)!;
  expect(last.id).toBe(5);
  expect(last.result.tools.length).toBe(app.registry.tools.length);
}

const LIMITS_ON = { RATE_LIMITS: 'on', PLAN_KEYLESS: '5/50/20' };

/** The same cases on any store: `app` starts a fresh listening app for one test. */
function sseLimitHeaderCases(app: () => Promise<ListeningApp>): void {
  for (const era of ['modern', 'legacy'] as const) {
    it(`${era}: the SSE answer carries the same five RateLimit headers as the JSON one`, async () => {
      await sseCarriesLimitHeaders(await app(), era);
    });

    it(`${era}: a refused SSE call carries Retry-After`, async () => {
      await refusedSseCarriesRetryAfter(await app(), era);
    });
  }

  it('legacy: an SSE request that makes no call is answered', async () => {
    await sseWithoutCallIsAnswered(await app());
  });
}

describe('progress call over SSE: RateLimit headers on the file store', () => {
  const apps: ListeningApp[] = [];
  afterAll(async () => {
    for (const a of apps.splice(0)) await a.close();
  });
  const app = async () => {
    const a = await listenTestApp({ env: LIMITS_ON });
    apps.push(a);
    return a;
  };

  sseLimitHeaderCases(app);
});

describeRedis('progress call over SSE: RateLimit headers with REDIS_URL (the limiter answers asynchronously)', () => {
  let redis: TestRedis;
  const apps: ListeningApp[] = [];
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    for (const a of apps.splice(0)) await a.close();
    await redis?.stop();
  });
  const app = async () => {
    const a = await listenTestApp({ env: { ...LIMITS_ON, REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix() } });
    apps.push(a);
    return a;
  };

  sseLimitHeaderCases(app);
});
