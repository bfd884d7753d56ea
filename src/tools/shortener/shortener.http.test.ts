import { describe, expect, it } from 'vitest';
import { closeAfterEach, listenTestApp, mcpError, startTestApp, type TestApp } from '../../../test/harness.js';
import { shortLinkPreroute } from './routes.js';
import { linkTraffic, resolveShortLink } from './traffic.js';
import { jsonWithoutRequestId } from '../../../test/request-ids.js';

const closing = closeAfterEach();
async function app(): Promise<TestApp> {
  return closing(await startTestApp());
}

describe('shortener over REST', () => {
  it('POST /api/shorten → 201, GET /api/shorten?code= → stats, 409 on a taken code, 404 on unknown', async () => {
    const t = await app();
    const created = await t.request('POST', '/api/shorten', { url: 'https://example.com/rest', code: 'rest-1', ignored: 1 });
    expect(created.status).toBe(201);
    const body = (await jsonWithoutRequestId(created)) as Record<string, unknown>;
    expect(body).toStrictEqual({
      success: true,
      shortUrl: 'http://short.test/s/rest-1',
      code: 'rest-1',
      url: 'https://example.com/rest',
      createdAt: body.createdAt,
      managed: false,
      note: 'Created without an API key: this link belongs to nobody and cannot be listed, updated or deleted.',
    });
    expect(new Date(body.createdAt as string).toISOString()).toBe(body.createdAt);

    expect(await resolveShortLink(t.services, 'rest-1')).toBe('https://example.com/rest');
    const stats = await t.request('GET', '/api/shorten?code=rest-1');
    expect(stats.status).toBe(200);
    const s = (await jsonWithoutRequestId(stats)) as Record<string, unknown>;
    expect(s).toStrictEqual({
      success: true,
      code: 'rest-1',
      url: 'https://example.com/rest',
      shortUrl: 'http://short.test/s/rest-1',
      clicks: 1,
      createdAt: body.createdAt,
      lastClickedAt: s.lastClickedAt,
    });
    expect(typeof s.lastClickedAt).toBe('string');

    const taken = await t.request('POST', '/api/shorten', { url: 'https://example.com/other', code: 'rest-1' });
    expect(taken.status).toBe(409);
    expect(await jsonWithoutRequestId(taken)).toStrictEqual({
      success: false,
      error: { code: 'CONFLICT', message: 'The short code "rest-1" is already taken', details: { code: 'rest-1' } },
    });
    const unknown = await t.request('GET', '/api/shorten?code=nothere');
    expect(unknown.status).toBe(404);
    expect(((await jsonWithoutRequestId(unknown)) as { error: { code: string } }).error.code).toBe('NOT_FOUND');
  });

  it('GET /s/{code} → 302 to the long URL with one click counted; unknown or malformed → 404', async () => {
    const t = await app();
    await t.request('POST', '/api/shorten', { url: 'https://example.com/go?x=1', code: 'go-1' });
    const r = await t.request('GET', '/s/go-1');
    expect([r.status, r.headers.get('location')]).toStrictEqual([302, 'https://example.com/go?x=1']);
    await t.request('GET', '/s/go-1');
    expect((await (await t.request('GET', '/api/shorten?code=go-1')).json()) as object).toMatchObject({ clicks: 2 });
    for (const path of ['/s/nothere', '/s/x', `/s/${'a'.repeat(300)}`, '/s/ab%20cd', '/s/__proto__']) {
      expect([path, (await t.request('GET', path)).status]).toStrictEqual([path, 404]);
    }
  });

  it('HEAD /s/{code} (link-preview bots) redirects without counting a click; only GET counts', async () => {
    const t = await app();
    await t.request('POST', '/api/shorten', { url: 'https://example.com/preview', code: 'peek-1' });
    const head = await t.request('HEAD', '/s/peek-1');
    expect([head.status, head.headers.get('location')]).toStrictEqual([302, 'https://example.com/preview']);
    await t.request('HEAD', '/s/peek-1');
    expect((await (await t.request('GET', '/api/shorten?code=peek-1')).json()) as object).toMatchObject({ clicks: 0 });
    await t.request('GET', '/s/peek-1');
    expect((await (await t.request('GET', '/api/shorten?code=peek-1')).json()) as object).toMatchObject({ clicks: 1 });
    expect((await t.request('HEAD', '/s/nothere')).status).toBe(404);
  });

  it('bad input is a 400, never a 500', async () => {
    const t = await app();
    const cases: Array<[string, string, unknown]> = [
      ['POST', '/api/shorten', { url: 'javascript:alert(1)' }],
      ['POST', '/api/shorten', { url: 'https://example.com', code: '!' }],
      ['POST', '/api/shorten', { url: ['https://example.com'] }],
      ['POST', '/api/shorten', '[1,2]'],
      ['POST', '/api/shorten', '{"url":'],
      ['GET', '/api/shorten', undefined],
      ['GET', '/api/shorten?code=%00%01', undefined],
      ['GET', `/api/shorten?code=${'a'.repeat(10_000)}`, undefined],
    ];
    for (const [method, path, body] of cases) {
      const r = await t.request(method, path, body);
      expect([method, path, r.status]).toStrictEqual([method, path, 400]);
    }
  });
});

describe('shortener over MCP', () => {
  it('url_shorten returns structuredContent; url_stats of an unknown code is an isError result', async () => {
    const t = await app();
    const client = await t.mcpClient();
    // The shortener's tools (url_parse, of the network family, shares the prefix).
    const shortener = new Set(['url_shorten', 'url_stats', 'url_list', 'url_update', 'url_delete']);
    const tools = (await client.listTools()).tools.filter((x) => shortener.has(x.name));
    expect(tools.map((x) => [x.name, x.annotations?.readOnlyHint])).toStrictEqual([
      ['url_shorten', false],
      ['url_stats', true],
      ['url_list', true],
      ['url_update', false],
      ['url_delete', false],
    ]);
    const r = await client.callTool({ name: 'url_shorten', arguments: { url: 'https://example.com/mcp' } });
    const sc = r.structuredContent as Record<string, unknown>;
    expect(r.isError).toBeFalsy();
    expect(sc).toStrictEqual({ shortUrl: `http://short.test/s/${sc.code as string}`, code: sc.code, url: 'https://example.com/mcp', createdAt: sc.createdAt, managed: false, note: 'Created without an API key: this link belongs to nobody and cannot be listed, updated or deleted.' });
    const st = await client.callTool({ name: 'url_stats', arguments: { code: sc.code } });
    expect(st.structuredContent).toMatchObject({ code: sc.code, clicks: 0, lastClickedAt: null });
    const missing = await client.callTool({ name: 'url_stats', arguments: { code: 'zzzzzzz' } });
    expect(missing.isError).toBe(true);
    expect(mcpError(missing)).toStrictEqual({ code: 'NOT_FOUND', message: 'No short link with code "zzzzzzz"', details: { code: 'zzzzzzz' } });
  });
});

describe('the redirect ahead of the router (Family.preroute)', () => {
  it('answers a served code over a socket exactly as the route does, click counted, CORS kept', async () => {
    const t = closing(await listenTestApp());
    expect((await t.request('POST', '/api/shorten', { url: 'https://example.com/pre', code: 'pre-1' })).status).toBe(201);
    const get = (path: string, headers: Record<string, string> = {}) => fetch(`${t.url}${path}`, { redirect: 'manual', headers });
    const first = await get('/s/pre-1'); // through the router: not cached yet
    const second = await get('/s/pre-1'); // cached: ahead of the router
    for (const r of [first, second]) {
      expect(r.status).toBe(302);
      expect(r.headers.get('location')).toBe('https://example.com/pre');
      // An empty body said so, not sent chunked (a Transfer-Encoding header and a 0-chunk).
      expect([r.headers.get('content-length'), r.headers.get('transfer-encoding')]).toStrictEqual(['0', null]);
      expect(await r.text()).toBe('');
    }
    const names = (h: Headers) => {
      const out: string[] = [];
      h.forEach((_v, k) => out.push(k));
      return out.sort();
    };
    expect(names(second.headers)).toStrictEqual(names(first.headers));
    // Same-origin browser request: the guard still adds its headers.
    const cors = await get('/s/pre-1', { origin: t.url });
    expect(cors.headers.get('access-control-allow-origin')).toBe(t.url);
    // Declined, answered by the route: HEAD (no click), a query, an escape, an unknown code.
    expect((await fetch(`${t.url}/s/pre-1`, { method: 'HEAD', redirect: 'manual' })).status).toBe(302);
    expect((await get('/s/pre-1?utm=x')).headers.get('location')).toBe('https://example.com/pre');
    expect((await get('/s/pre%2D1')).headers.get('location')).toBe('https://example.com/pre');
    expect((await get('/s/nope-1')).status).toBe(404);
    expect((await get('/s/pre-1/')).status).toBe(404);
    // GET ×5 counted (two plain, CORS, query, escape); HEAD not.
    await expect.poll(async () => ((await (await t.request('GET', '/api/shorten?code=pre-1')).json()) as { clicks: number }).clicks).toBe(5);
  });

  it('declines what is not a served GET /s/{code}, and writes Location as hono does', async () => {
    const t = await app();
    const pre = shortLinkPreroute(t.services);
    expect(pre('GET', '/s/pre-2')).toBeUndefined(); // not cached
    linkTraffic(t.services).remember('pre-2', 'https://example.com/€');
    const res = pre('GET', '/s/pre-2')!;
    expect(res.status).toBe(302);
    // The route's answer for the same cached code (in-process: no preroute there).
    const routed = await t.app.request('/s/pre-2');
    expect(res.headers.get('location')).toBe(routed.headers.get('location'));
    expect(res.headers.get('location')).toBe('https://example.com/%E2%82%AC');
    for (const [method, path] of [['HEAD', '/s/pre-2'], ['POST', '/s/pre-2'], ['GET', '/s/pre-2?x'], ['GET', '/s/pre%2D2'], ['GET', '/s/x'], ['GET', '/api/shorten'], ['GET', '/s/']]) {
      expect(pre(method!, path!), `${method} ${path}`).toBeUndefined();
    }
  });
});
