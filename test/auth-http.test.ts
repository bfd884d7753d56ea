/**
 * Keys, plans and limits against a real listening socket (RATE_LIMITS=on), docs/contract.md §3 Auth, §5.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { setPlan } from '../src/auth/keys.js';
import { manualClock } from '../src/core/clock.js';
import { closeAfterEach, listenTestApp, mcpError, type ListeningApp, tempDir } from './harness.js';
import { jsonWithoutRequestId } from './request-ids.js';

const T0 = Date.parse('2026-11-22T09:00:00.000Z');
// The mechanics below were written against keyless = free-plan figures; PLAN_KEYLESS sets them
// (the defaults, keyless below free, have their own test at the end).
const LIMITS_ON = { RATE_LIMITS: 'on', PLAN_KEYLESS: '10/100/100' };

afterEach(() => {
  vi.restoreAllMocks();
});
// Registered after the mocks' hook, so it runs first: the apps close before the mocks are restored.
const closing = closeAfterEach();

async function start(opts: Parameters<typeof listenTestApp>[0] = {}): Promise<ListeningApp> {
  return closing(await listenTestApp({ ...opts, env: { ...LIMITS_ON, ...opts.env } }));
}

function call(a: ListeningApp, method: string, p: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] = 'application/json';
  }
  return fetch(a.url + p, init);
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const convert = (a: ListeningApp, headers: Record<string, string> = {}) => call(a, 'POST', '/api/base-convert', { value: '255' }, headers);

async function register(a: ListeningApp, email: string): Promise<string> {
  const res = await call(a, 'POST', '/api/auth/register', { email });
  expect(res.status).toBe(201);
  return ((await jsonWithoutRequestId(res)) as { api_key: string }).api_key;
}

function otherChar(key: string, i: number): string {
  const c = key[i]!;
  return key.slice(0, i) + (c === 'a' ? 'b' : 'a') + key.slice(i + 1);
}

async function statuses(responses: Promise<Response>[]): Promise<Record<number, number>> {
  const out: Record<number, number> = {};
  for (const r of await Promise.all(responses)) {
    out[r.status] = (out[r.status] ?? 0) + 1;
    await r.arrayBuffer();
  }
  return out;
}

describe('register', () => {
  it('creates a free key shown once; same e-mail → 409; bad e-mail → 400', async () => {
    const a = await start({ overrides: { clock: manualClock(T0) } });
    const res = await call(a, 'POST', '/api/auth/register', { email: ' Dev@Example.com ', extra: 'ignored' });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await jsonWithoutRequestId(res)) as Record<string, unknown>;
    expect(body).toStrictEqual({
      success: true,
      api_key: expect.stringMatching(/^dtb_[A-Za-z0-9]{32}$/),
      key_prefix: (body.api_key as string).slice(0, 8),
      plan: 'free',
      email: 'dev@example.com',
      created_at: '2026-11-22T09:00:00.000Z',
      limits: { per_minute: 10, per_day: 100 },
    });

    const again = await call(a, 'POST', '/api/auth/register', { email: 'DEV@example.com' });
    expect(again.status).toBe(409);
    expect(((await jsonWithoutRequestId(again)) as { error: { code: string } }).error.code).toBe('CONFLICT');

    const bad = await call(a, 'POST', '/api/auth/register', { email: 'not-an-address' });
    expect(bad.status).toBe(400);
    expect(await jsonWithoutRequestId(bad)).toStrictEqual({
      success: false,
      error: {
        code: 'INVALID_INPUT',
        message: 'Invalid input: email is not a valid e-mail address',
        details: [{ path: 'email', message: 'is not a valid e-mail address' }],
      },
    });
    const notObject = await call(a, 'POST', '/api/auth/register', ['x']);
    expect(notObject.status).toBe(400);
    const missing = await call(a, 'POST', '/api/auth/register', {});
    expect(missing.status).toBe(400);
  });

  it('is limited to 5 per client address per hour, every attempt counted', async () => {
    const clock = manualClock(T0);
    const a = await start({ overrides: { clock } });
    const results = [];
    for (let i = 0; i < 6; i++) {
      const res = await call(a, 'POST', '/api/auth/register', { email: i === 2 ? 'bad' : `u${i}@example.com` });
      results.push([res.status, res.headers.get('ratelimit-remaining'), res.headers.get('retry-after')]);
    }
    expect(results).toStrictEqual([
      [201, '4', null],
      [201, '3', null],
      [400, '2', null],
      [201, '1', null],
      [201, '0', null],
      [429, '0', '3600'],
    ]);
    clock.t = T0 + 3_600_000;
    expect((await call(a, 'POST', '/api/auth/register', { email: 'late@example.com' })).status).toBe(201);
  });
});

describe('keys presented', () => {
  it('GET /api/auth/info: 401 + WWW-Authenticate without a key; plan, limits and usage with one', async () => {
    const clock = manualClock(T0);
    const a = await start({ overrides: { clock } });
    const none = await call(a, 'GET', '/api/auth/info');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
    expect(((await jsonWithoutRequestId(none)) as { error: { code: string } }).error.code).toBe('UNAUTHORIZED');

    const key = await register(a, 'dev@example.com');
    for (let i = 0; i < 3; i++) expect((await convert(a, bearer(key))).status).toBe(200);
    clock.t = T0 + 10_000;
    const res = await call(a, 'GET', '/api/auth/info', undefined, bearer(key));
    expect(res.status).toBe(200);
    expect(await jsonWithoutRequestId(res)).toStrictEqual({
      success: true,
      plan: 'free',
      email: 'dev@example.com',
      key_prefix: key.slice(0, 8),
      created_at: '2026-11-22T09:00:00.000Z',
      limits: { per_minute: 10, per_day: 100 },
      usage: {
        minute: { used: 3, remaining: 7, resets_at: '2026-11-22T09:01:00.000Z' },
        day: { used: 3, remaining: 97, resets_at: '2026-11-23T00:00:00.000Z' },
      },
    });
    // Asking costs nothing, and the answer carries the budget's headers.
    expect(res.headers.get('ratelimit-remaining')).toBe('7');
    const viaQuery = await call(a, 'GET', `/api/auth/info?api_key=${key}`);
    expect(((await jsonWithoutRequestId(viaQuery)) as { usage: { day: { used: number } } }).usage.day.used).toBe(3);
  });

  it('an unknown key is 401 everywhere, never a quiet fall-back to keyless', async () => {
    const a = await start();
    const key = await register(a, 'dev@example.com');
    const wrong = otherChar(key, 20);
    const cases: Array<[string, Promise<Response>]> = [
      ['bearer', convert(a, bearer(wrong))],
      ['query', call(a, 'POST', `/api/base-convert?api_key=${wrong}`, { value: '1' })],
      ['uniform face', call(a, 'POST', `/api/tools/base_convert?api_key=${wrong}`, { value: '1' })],
      ['html-entity body', call(a, 'POST', '/api/html-entity', { input: 'x', api_key: wrong })],
      ['info', call(a, 'GET', '/api/auth/info', undefined, bearer(wrong))],
      ['malformed', convert(a, bearer('dtb_short'))],
      // (An empty ?api_key= is no key since issue 20: see "an empty key is no key" below.)
      ['empty query with a bad bearer', call(a, 'POST', '/api/base-convert?api_key=', { value: '1' }, bearer(wrong))],
      ['not bearer', convert(a, { authorization: `Basic ${key}` })],
      ['two different keys', call(a, 'POST', `/api/base-convert?api_key=${wrong}`, { value: '1' }, bearer(key))],
      ['mcp', call(a, 'POST', '/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { ...bearer(wrong), accept: 'application/json, text/event-stream' })],
      ['register', call(a, 'POST', '/api/auth/register', { email: 'x@example.com' }, bearer(wrong))],
      ['tool list', call(a, 'GET', `/api/tools?api_key=${wrong}`)],
      ['openapi', call(a, 'GET', '/openapi.json', undefined, bearer(wrong))],
    ];
    for (const [name, p] of cases) {
      const res = await p;
      expect([name, res.status, res.headers.get('www-authenticate')?.startsWith('Bearer')]).toStrictEqual([name, 401, true]);
      const body = (await jsonWithoutRequestId(res)) as { id?: unknown; error: { code: string | number; message: string } };
      // /mcp answers a JSON-RPC error object an MCP client can show (issue 20), REST the contract's error body.
      if (name === 'mcp') expect([body.id, body.error.message]).toStrictEqual([1, 'Unknown API key']);
      else expect(body.error.code).toBe('UNAUTHORIZED');
    }
    // The real key works in each place.
    expect((await convert(a, bearer(key))).status).toBe(200);
    expect((await call(a, 'POST', `/api/base-convert?api_key=${key}`, { value: '1' })).status).toBe(200);
    const html = await call(a, 'POST', '/api/html-entity', { input: '<b>', api_key: key });
    expect(await jsonWithoutRequestId(html)).toStrictEqual({ success: true, result: '&lt;b&gt;', action: 'encode' });
    const info = await call(a, 'GET', '/api/auth/info', undefined, bearer(key));
    expect(((await jsonWithoutRequestId(info)) as { usage: { day: { used: number } } }).usage.day.used).toBe(3);
  });
});

describe('limits hold exactly under concurrency', () => {
  it.each([
    ['free key', 'free', 10, 5],
    ['pro key', 'pro', 60, 7],
    ['keyless', null, 10, 6],
  ] as const)('%s: limit + k simultaneous requests → exactly limit successes', async (_name, plan, limit, k) => {
    const a = await start({ overrides: { clock: manualClock(T0) } });
    let headers: Record<string, string> = {};
    if (plan) {
      const key = await register(a, 'c@example.com');
      if (plan === 'pro') await setPlan(a.services.store, 'c@example.com', 'pro');
      headers = bearer(key);
    }
    const all = await Promise.all(Array.from({ length: limit + k }, () => convert(a, headers)));
    const ok = all.filter((r) => r.status === 200);
    const limited = all.filter((r) => r.status === 429);
    expect([ok.length, limited.length]).toStrictEqual([limit, k]);
    for (const r of all) {
      expect(r.headers.get('ratelimit-limit')).toBe(String(limit));
      expect(r.headers.get('ratelimit-policy')).toBe(`"minute";q=${limit};w=60, "day";q=${plan === 'pro' ? 5000 : 100};w=86400`);
      expect(r.headers.get('ratelimit')).toMatch(/^"minute";r=\d+;t=\d+, "day";r=\d+;t=\d+$/);
    }
    expect(ok.map((r) => Number(r.headers.get('ratelimit-remaining'))).sort((x, y) => x - y)).toStrictEqual(Array.from({ length: limit }, (_, i) => i));
    const refused = limited[0]!;
    expect(refused.headers.get('retry-after')).toBe('60');
    expect(refused.headers.get('ratelimit-remaining')).toBe('0');
    expect(refused.headers.get('ratelimit-reset')).toBe('60');
    expect(await jsonWithoutRequestId(refused)).toStrictEqual({
      success: false,
      error: {
        code: 'RATE_LIMITED',
        message: expect.stringContaining(`Rate limit exceeded: ${limit} calls per minute`),
        details: { window: 'minute', limit, remaining: 0, retry_after: 60, retry_at: '2026-11-22T09:01:00.000Z' },
      },
    });
  });

  it('window boundaries with an injected clock; per-minute 429s leave the day alone', async () => {
    const clock = manualClock(T0);
    const a = await start({ overrides: { clock } });
    const key = await register(a, 'w@example.com');
    expect(await statuses(Array.from({ length: 25 }, () => convert(a, bearer(key))))).toStrictEqual({ 200: 10, 429: 15 });
    clock.t = T0 + 59_999;
    expect((await convert(a, bearer(key))).status).toBe(429);
    clock.t = T0 + 60_000;
    expect(await statuses(Array.from({ length: 12 }, () => convert(a, bearer(key))))).toStrictEqual({ 200: 10, 429: 2 });
    const info = (await (await call(a, 'GET', '/api/auth/info', undefined, bearer(key))).json()) as { usage: { day: { used: number } } };
    expect(info.usage.day.used).toBe(20);
  });

  it('the daily limit: 100 calls, then 429 until 00:00 UTC', async () => {
    const clock = manualClock(Date.parse('2026-11-22T22:00:00.000Z'));
    const a = await start({ overrides: { clock } });
    for (let m = 0; m < 10; m++) {
      expect(await statuses(Array.from({ length: 10 }, () => convert(a)))).toStrictEqual({ 200: 10 });
      clock.t += 60_000;
    }
    const over = await convert(a);
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBe(String(2 * 3600 - 10 * 60));
    expect(over.headers.get('ratelimit-limit')).toBe('100');
    expect(((await jsonWithoutRequestId(over)) as { error: { details: unknown } }).error.details).toStrictEqual({
      window: 'day',
      limit: 100,
      remaining: 0,
      retry_after: 6600,
      retry_at: '2026-11-23T00:00:00.000Z',
    });
    clock.t = Date.parse('2026-11-23T00:00:00.000Z');
    expect((await convert(a)).status).toBe(200);
  });

  it('keyless callers are keyed by socket address; X-Forwarded-For counts only behind a trusted proxy', async () => {
    const untrusted = await start({ overrides: { clock: manualClock(T0) } });
    const spoof = (a: ListeningApp, ip: string) => convert(a, { 'x-forwarded-for': ip });
    expect(await statuses(Array.from({ length: 12 }, (_, i) => spoof(untrusted, `203.0.113.${i}`)))).toStrictEqual({ 200: 10, 429: 2 });

    const proxied = await start({ env: { TRUSTED_PROXIES: '127.0.0.1' }, overrides: { clock: manualClock(T0) } });
    expect(await statuses(Array.from({ length: 12 }, () => spoof(proxied, '203.0.113.1')))).toStrictEqual({ 200: 10, 429: 2 });
    expect(await statuses(Array.from({ length: 3 }, () => spoof(proxied, '::ffff:203.0.113.2')))).toStrictEqual({ 200: 3 });
    // Same /64: one budget. The left part of the chain is the client's own claim and is ignored.
    expect(await statuses(Array.from({ length: 10 }, (_, i) => spoof(proxied, `2001:db8:1:2::${i + 1}`)))).toStrictEqual({ 200: 10 });
    expect(await statuses([spoof(proxied, '2001:db8:1:2:ffff::1'), spoof(proxied, '9.9.9.9, 2001:db8:1:2::99')])).toStrictEqual({ 429: 2 });
  });

  it('non-tool routes are not limited: /healthz, /s/{code}, tools/list', async () => {
    const a = await start({ overrides: { clock: manualClock(T0) } });
    await statuses(Array.from({ length: 10 }, () => convert(a)));
    expect((await convert(a)).status).toBe(429);
    expect((await call(a, 'GET', '/healthz')).status).toBe(200);
    const client = await a.httpClient();
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
  });
});

describe('MCP over HTTP', () => {
  it('shares one budget with REST; a limited call is an isError RATE_LIMITED result with the retry time', async () => {
    const a = await start({ overrides: { clock: manualClock(T0) } });
    const key = await register(a, 'm@example.com');
    expect(await statuses(Array.from({ length: 6 }, () => convert(a, bearer(key))))).toStrictEqual({ 200: 6 });
    const client = await a.httpClient(bearer(key));
    const results = [];
    for (let i = 0; i < 5; i++) results.push(await client.callTool({ name: 'base_convert', arguments: { value: '7' } }));
    expect(results.map((r) => r.isError ?? false)).toStrictEqual([false, false, false, false, true]);
    expect(mcpError(results[4]!)).toStrictEqual({
      code: 'RATE_LIMITED',
      message: expect.stringMatching(/retry after 60 s \(2026-11-22T09:01:00\.000Z\)/),
      details: { window: 'minute', limit: 10, remaining: 0, retry_after: 60, retry_at: '2026-11-22T09:01:00.000Z' },
    });
    expect((await convert(a, bearer(key))).status).toBe(429);
    const info = await client.callTool({ name: 'auth_info', arguments: {} });
    expect((info.structuredContent as { usage: { day: { used: number } } }).usage.day.used).toBe(10);
  });

  it('the /mcp HTTP response carries the RateLimit headers (JSON and SSE answers)', async () => {
    const a = await start({ overrides: { clock: manualClock(T0) } });
    const key = await register(a, 'h@example.com');
    const mcpHeaders = { ...bearer(key), accept: 'application/json, text/event-stream' };
    const callBody = (id: number, meta?: object) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'base_convert', arguments: { value: '1' }, ...(meta ? { _meta: meta } : {}) },
    });
    const json = await call(a, 'POST', '/mcp', callBody(1), mcpHeaders);
    expect(json.status).toBe(200);
    expect([json.headers.get('ratelimit-limit'), json.headers.get('ratelimit-remaining')]).toStrictEqual(['10', '9']);
    await json.text();
    const sse = await call(a, 'POST', '/mcp', callBody(2, { progressToken: 'p1' }), mcpHeaders);
    expect(sse.headers.get('content-type')).toContain('text/event-stream');
    expect(sse.headers.get('ratelimit-remaining')).toBe('8');
    expect(await sse.text()).toContain('"structuredContent"');
    // tools/list and initialize are not counted.
    const list = await call(a, 'POST', '/mcp', { jsonrpc: '2.0', id: 3, method: 'tools/list' }, mcpHeaders);
    expect(list.headers.get('ratelimit-remaining')).toBeNull();
    await list.text();
    for (let i = 0; i < 8; i++) await (await call(a, 'POST', '/mcp', callBody(10 + i), mcpHeaders)).text();
    const over = await call(a, 'POST', '/mcp', callBody(20), mcpHeaders);
    expect([over.status, over.headers.get('retry-after'), over.headers.get('ratelimit-remaining')]).toStrictEqual([200, '60', '0']);
    const reply = (await jsonWithoutRequestId(over)) as { result: { isError: boolean; content: Array<{ text: string }> } };
    expect(reply.result.isError).toBe(true);
    expect(JSON.parse(reply.result.content[0]!.text).error.code).toBe('RATE_LIMITED');
  });
});

describe('persistence and secrecy', () => {
  it('daily counts survive a restart', async () => {
    const dataDir = tempDir();
    const clock = manualClock(T0);
    const first = await listenTestApp({ env: { ...LIMITS_ON, DATA_DIR: dataDir }, overrides: { clock } });
    const key = await register(first, 'r@example.com');
    expect(await statuses(Array.from({ length: 7 }, () => convert(first, bearer(key))))).toStrictEqual({ 200: 7 });
    expect(await statuses(Array.from({ length: 4 }, () => convert(first)))).toStrictEqual({ 200: 4 });
    await first.close();

    clock.t = T0 + 120_000;
    const second = await start({ env: { DATA_DIR: dataDir }, overrides: { clock } });
    const info = (await (await call(second, 'GET', '/api/auth/info', undefined, bearer(key))).json()) as { usage: unknown };
    expect(info.usage).toStrictEqual({
      minute: { used: 0, remaining: 10, resets_at: '2026-11-22T09:03:00.000Z' },
      day: { used: 7, remaining: 93, resets_at: '2026-11-23T00:00:00.000Z' },
    });
    const keyless = await convert(second);
    expect(keyless.headers.get('ratelimit')).toMatch(/"day";r=95;/);
  });

  it('the raw key is in no file under DATA_DIR and in no log line', async () => {
    const dataDir = tempDir();
    const lines: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array, ...rest: unknown[]) => {
      lines.push(String(chunk));
      return write(chunk as string, ...(rest as []));
    });
    const a = await listenTestApp({ env: { ...LIMITS_ON, DATA_DIR: dataDir, LOG_LEVEL: 'debug' } });
    const key = await register(a, 's@example.com');
    const wrong = otherChar(key, 10);
    await convert(a, bearer(key));
    await call(a, 'POST', `/api/base-convert?api_key=${key}`, { value: '1' });
    await call(a, 'GET', `/api/auth/info?api_key=${key}`);
    await call(a, 'GET', `/api/auth/info?api_key=${wrong}`);
    await call(a, 'POST', '/api/html-entity', { input: 'x', api_key: key });
    await call(a, 'POST', `/api/shorten?api_key=${key}`, { url: 'https://example.com/' });
    await call(a, 'GET', `/nope?api_key=${key}`);
    await a.close();

    expect(lines.some((l) => l.includes('/api/auth/info?api_key=***'))).toBe(true);
    for (const l of lines) {
      expect(l).not.toContain(key);
      expect(l).not.toContain(wrong);
    }
    const files: string[] = [];
    const walk = (d: string) => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        const p = path.join(d, e.name);
        if (e.isDirectory()) walk(p);
        else files.push(p);
      }
    };
    walk(dataDir);
    expect(files.some((f) => f.endsWith('api_keys.json'))).toBe(true);
    for (const f of files) expect([f, fs.readFileSync(f, 'utf8').includes(key)]).toStrictEqual([f, false]);
  });
});

describe('ownership', () => {
  it('a short link created with a key is that key\'s: other keys and keyless callers get 404', async () => {
    const a = await start({ env: { RATE_LIMITS: 'off' } });
    const alice = await register(a, 'alice@example.com');
    const bob = await register(a, 'bob@example.com');
    expect((await call(a, 'POST', '/api/shorten', { url: 'https://example.com/a', code: 'alice-1' }, bearer(alice))).status).toBe(201);
    expect((await call(a, 'POST', '/api/shorten', { url: 'https://example.com/p', code: 'public-1' })).status).toBe(201);
    const stats = (code: string, h: Record<string, string> = {}) => call(a, 'GET', `/api/shorten?code=${code}`, undefined, h).then((r) => r.status);
    expect([await stats('alice-1', bearer(alice)), await stats('alice-1', bearer(bob)), await stats('alice-1')]).toStrictEqual([200, 404, 404]);
    // Links made without a key belong to no one: anyone may read them.
    expect([await stats('public-1', bearer(alice)), await stats('public-1')]).toStrictEqual([200, 200]);
    // The redirect itself is public.
    expect((await fetch(`${a.url}/s/alice-1`, { redirect: 'manual' })).status).toBe(302);
    // Over MCP with Bob's key: the same 404.
    const client = await a.httpClient(bearer(bob));
    const r = await client.callTool({ name: 'url_stats', arguments: { code: 'alice-1' } });
    expect(mcpError(r).code).toBe('NOT_FOUND');
  });

  it('a cron task created with a key is that key\'s: same agent_id under another key or keyless → 404 / empty', async () => {
    const a = await start({ env: { RATE_LIMITS: 'off' } });
    const alice = await register(a, 'alice@example.com');
    const bob = await register(a, 'bob@example.com');
    const created = await call(a, 'POST', '/api/cron-task', { agent_id: 'agent-1', name: 'nightly', schedule: '0 3 * * *' }, bearer(alice));
    expect(created.status).toBe(201);
    const taskId = ((await jsonWithoutRequestId(created)) as { task: { task_id: string } }).task.task_id;
    const as = async (h: Record<string, string>) => [
      ((await (await call(a, 'GET', '/api/cron-task?agent_id=agent-1', undefined, h)).json()) as { count: number }).count,
      (await call(a, 'GET', `/api/cron-task/${taskId}/logs?agent_id=agent-1`, undefined, h)).status,
      (await call(a, 'POST', `/api/cron-task/${taskId}/done?agent_id=agent-1`, {}, h)).status,
    ];
    expect(await as(bearer(bob))).toStrictEqual([0, 404, 404]);
    expect(await as({})).toStrictEqual([0, 404, 404]);
    expect((await call(a, 'DELETE', `/api/cron-task/${taskId}?agent_id=agent-1`, undefined, bearer(bob))).status).toBe(404);
    expect((await call(a, 'DELETE', `/api/cron-task/${taskId}?agent_id=agent-1`)).status).toBe(404);
    expect(await as(bearer(alice))).toStrictEqual([1, 200, 200]);
    expect((await call(a, 'DELETE', `/api/cron-task/${taskId}?agent_id=agent-1`, undefined, bearer(alice))).status).toBe(200);
  });
});

describe('default plans: a key raises limits', () => {
  it('keyless callers get 5 per minute while a free key on the same address gets 10', async () => {
    const a = await listenTestApp({ env: { RATE_LIMITS: 'on' } });
    try {
      const call = (headers: Record<string, string> = {}) =>
        fetch(`${a.url}/api/base-convert`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{"value":"7"}' });
      const keyless = await statuses(Array.from({ length: 7 }, () => call()));
      expect(keyless).toStrictEqual({ 200: 5, 429: 2 });
      const key = await register(a, 'raise@example.com');
      const keyed = await statuses(Array.from({ length: 12 }, () => call({ authorization: `Bearer ${key}` })));
      expect(keyed).toStrictEqual({ 200: 10, 429: 2 });
      const info = await fetch(`${a.url}/api/auth/info`, { headers: { authorization: `Bearer ${key}` } });
      expect(((await jsonWithoutRequestId(info)) as { limits: unknown }).limits).toStrictEqual({ per_minute: 10, per_day: 100 });
    } finally {
      await a.close();
    }
  });

  it('PLAN_* variables are validated at start-up', async () => {
    const { loadConfig, ConfigError } = await import('../src/config.js');
    expect(loadConfig({ PLAN_PRO: '120/10000/2000' }).plans.pro).toStrictEqual({ per_minute: 120, per_day: 10000, short_links_per_day: 2000 });
    expect(() => loadConfig({ PLAN_FREE: '10/100' })).toThrow(ConfigError);
    expect(() => loadConfig({ PLAN_FREE: '0/100/100' })).toThrow(/three whole numbers/);
    expect(() => loadConfig({ PLAN_KEYLESS: '20/100/100' })).toThrow(/must not be below PLAN_KEYLESS/);
  });
});

describe('an empty key is no key', () => {
  it('api_key "" in the html-entity body or an empty ?api_key= is keyless, not a 401; a non-empty unknown key stays a 401', async () => {
    const a = await listenTestApp({ env: { RATE_LIMITS: 'on' } });
    try {
      const post = (path: string, body: unknown) => fetch(`${a.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const r1 = await post('/api/html-entity', { content: '<b>', api_key: '' });
      expect([r1.status, ((await jsonWithoutRequestId(r1)) as { result: string }).result]).toStrictEqual([200, '&lt;b&gt;']);
      expect(r1.headers.get('ratelimit-limit')).toBe('5');
      const r2 = await post('/api/base-convert?api_key=', { value: '10' });
      expect([r2.status, r2.headers.get('ratelimit-limit')]).toStrictEqual([200, '5']);
      expect((await post('/api/html-entity', { content: 'x', api_key: 'dtb_unknown' })).status).toBe(401);
      expect((await post('/api/base-convert?api_key=dtb_unknown', { value: '10' })).status).toBe(401);
    } finally {
      await a.close();
    }
  });
});
