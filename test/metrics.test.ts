/**
 * GET /metrics (docs/operations.md, Metrics), scraped over real HTTP: each family moves when its
 * event happens — a REST call, MCP calls of both eras, a 429, a fetch to a loopback fixture, a
 * webhook, a pool job, a task, store operations and a Redis outage — labelled by route template,
 * never by a raw path; the token is required; no limit counts a scrape; METRICS_PORT serves it alone.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { serveMetricsPort } from '../src/metrics-http.js';
import { createMetrics } from '../src/metrics.js';
import { manualClock } from '../src/core/clock.js';
import { startScheduler } from '../src/tools/cron-tasks/scheduler.js';
import { sweepAnalytics, visitAnalytics } from '../src/tools/shortener/analytics.js';
import { ROLLUP_ID } from '../src/tools/shortener/clicks.js';
import { LINK_CLICK_ROLLUP } from '../src/tools/shortener/links.js';
import { linkTraffic } from '../src/tools/shortener/traffic.js';
import { startSlowSite, type SlowSite } from './fixtures/slow-site.js';
import { listenTestApp, useListeningApp, type ListeningApp } from './harness.js';
import { describeRedis, startRedis, type TestRedis } from './redis.js';

const TOKEN = 'metrics-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };

/** The value of the sample `name` whose labels include `labels` (summed over the others); 0 when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[3] ?? '').matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1]!, x[2]!]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(m[4]);
  }
  return sum;
}

async function scrape(url: string, headers: Record<string, string> = AUTH): Promise<string> {
  const res = await fetch(`${url}/metrics`, { headers });
  expect(res.status).toBe(200);
  return res.text();
}

/** The 2026-07-28 request envelope (docs/mcp-2026-07-28.md). */
const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'metrics-test', version: '1' },
};

const post = (url: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

describe('GET /metrics', () => {
  const t = useListeningApp({ env: { METRICS_TOKEN: TOKEN, WORKERS: '1' } });
  let site: SlowSite;
  beforeAll(async () => {
    site = await startSlowSite();
  });
  afterAll(async () => {
    await site.close();
  });

  it('asks for the token: none or a wrong one is a 401 in the contract shape; the right one gets the Prometheus text, OpenMetrics on Accept', async () => {
    for (const headers of [{}, { authorization: 'Bearer wrong-token-0123456789' }, { authorization: TOKEN }] as Array<Record<string, string>>) {
      const res = await fetch(`${t.url}/metrics`, { headers });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
      const id = res.headers.get('x-request-id');
      expect(id).toBeTruthy();
      expect(await res.json()).toStrictEqual({ success: false, error: { code: 'UNAUTHORIZED', message: 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>', request_id: id } });
    }
    const res = await fetch(`${t.url}/metrics`, { headers: AUTH });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await res.text();
    expect(text).toContain('# TYPE http_requests_total counter');
    expect(text).toContain('# TYPE process_cpu_user_seconds_total counter');
    expect(sample(text, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    const om = await fetch(`${t.url}/metrics`, { headers: { ...AUTH, accept: 'application/openmetrics-text; version=1.0.0' } });
    expect(om.headers.get('content-type')).toBe('application/openmetrics-text; version=1.0.0; charset=utf-8');
    const omText = await om.text();
    expect(omText.trimEnd().endsWith('# EOF')).toBe(true);
    expect(omText).toContain('# TYPE http_requests counter');
  });

  it('a REST call and MCP calls of both eras move the request and tool families, by route template', async () => {
    const before = await scrape(t.url);
    expect((await post(t.url, '/api/base-convert', { value: '255' })).status).toBe(200);
    expect((await post(t.url, '/api/base-convert', { value: 'zz', from: 'dec' })).status).toBe(422);
    const client = await t.httpClient();
    await client.callTool({ name: 'base_convert', arguments: { value: '7' } });
    const modern = await post(
      t.url,
      '/mcp',
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'base_convert', arguments: { value: '8' }, _meta: MODERN_META } },
      { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'base_convert' },
    );
    expect(modern.status).toBe(200);
    const after = await scrape(t.url);
    const delta = (name: string, labels: Record<string, string>) => sample(after, name, labels) - sample(before, name, labels);
    expect(delta('http_requests_total', { method: 'POST', route: '/api/base-convert', status: '200' })).toBe(1);
    expect(delta('http_requests_total', { method: 'POST', route: '/api/base-convert', status: '422' })).toBe(1);
    expect(delta('http_request_duration_seconds_count', { method: 'POST', route: '/api/base-convert', status: '200' })).toBe(1);
    expect(delta('tool_calls_total', { tool: 'base_convert', face: 'rest', era: 'none' })).toBe(2);
    expect(delta('tool_errors_total', { tool: 'base_convert', face: 'rest', era: 'none', code: 'PARSE_ERROR' })).toBe(1);
    expect(delta('tool_call_duration_seconds_count', { tool: 'base_convert', face: 'rest' })).toBe(2);
    expect(delta('tool_calls_total', { tool: 'base_convert', face: 'mcp', era: 'legacy' })).toBe(1);
    expect(delta('tool_calls_total', { tool: 'base_convert', face: 'mcp', era: '2026-07-28' })).toBe(1);
    expect(delta('http_requests_total', { method: 'POST', route: '/mcp' })).toBeGreaterThanOrEqual(2);
  });

  it('labels a parameterised route by its template and an unknown path as unmatched: no raw path becomes a label', async () => {
    const before = await scrape(t.url);
    expect((await fetch(`${t.url}/s/secret-code-4711`, { redirect: 'manual' })).status).toBe(404);
    expect((await fetch(`${t.url}/no/such/path-0815?api_key=dtb_x`)).status).toBe(404);
    const after = await scrape(t.url);
    expect(sample(after, 'http_requests_total', { method: 'GET', route: '/s/{code}', status: '404' }) - sample(before, 'http_requests_total', { method: 'GET', route: '/s/{code}', status: '404' })).toBe(1);
    expect(sample(after, 'http_requests_total', { method: 'GET', route: 'unmatched', status: '404' }) - sample(before, 'http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
    expect(after).not.toContain('secret-code-4711');
    expect(after).not.toContain('path-0815');
    expect(after).not.toContain('dtb_x');
  });

  it('a fetch to a loopback fixture moves the fetcher family; a task moves the tasks family', async () => {
    const before = await scrape(t.url);
    expect((await post(t.url, '/api/meta-extract', { url: `${site.url}/slow.html?ms=10` })).status).toBe(200);
    const res = await post(t.url, '/api/seo-check', { url: `${site.url}/slow.html?ms=400`, format: 'summary' }, { prefer: 'respond-async' });
    expect(res.status).toBe(202);
    const location = res.headers.get('location')!;
    for (let i = 0; i < 100; i++) {
      const body = (await (await fetch(`${t.url}${location}`)).json()) as { status: string };
      if (body.status === 'completed') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const after = await scrape(t.url);
    expect(sample(after, 'fetches_total', { outcome: '2xx' }) - sample(before, 'fetches_total', { outcome: '2xx' })).toBe(2);
    expect(sample(after, 'fetches_in_flight')).toBe(0);
    expect(sample(after, 'mcp_tasks_total', { state: 'working' }) - sample(before, 'mcp_tasks_total', { state: 'working' })).toBe(1);
    expect(sample(after, 'mcp_tasks_total', { state: 'completed' }) - sample(before, 'mcp_tasks_total', { state: 'completed' })).toBe(1);
    expect(sample(after, 'http_requests_total', { method: 'GET', route: '/api/tasks/{id}' })).toBeGreaterThanOrEqual(1);
  });

  it('a heavy call moves the worker pool family; store operations are timed by backend and operation', async () => {
    const before = await scrape(t.url);
    expect((await post(t.url, '/api/json-yaml', { input: '{"a":1}' })).status).toBe(200);
    expect((await post(t.url, '/api/shorten', { url: 'https://example.com/metrics' })).status).toBe(201);
    const after = await scrape(t.url);
    expect(sample(after, 'worker_pool_jobs_total', { outcome: 'ok' }) - sample(before, 'worker_pool_jobs_total', { outcome: 'ok' })).toBe(1);
    expect(sample(after, 'worker_pool_size')).toBe(1);
    expect(sample(after, 'worker_pool_busy_workers')).toBe(0);
    expect(sample(after, 'worker_pool_queue_length')).toBe(0);
    const storeOps = (s: string) => sample(s, 'store_operation_duration_seconds_count', { backend: 'file', outcome: 'ok' });
    expect(storeOps(after)).toBeGreaterThan(storeOps(before));
    expect(sample(after, 'storage_unavailable_total')).toBe(0);
  });

  it('visits move the unwritten counts (analytics by link-day, clicks among them) and their age; a flush writes them down to 0', async () => {
    const res = await post(t.url, '/api/shorten', { url: 'https://example.com/unwritten' });
    const code = ((await res.json()) as { code: string }).code;
    await visitAnalytics(t.services).flush();
    const idle = await scrape(t.url);
    expect([sample(idle, 'unwritten_counts', { kind: 'analytics' }), sample(idle, 'unwritten_counts_oldest_seconds', { kind: 'analytics' })]).toStrictEqual([0, 0]);
    for (let i = 0; i < 3; i++) expect((await fetch(`${t.url}/s/${code}`, { redirect: 'manual' })).status).toBe(302);
    // One link-day once counted (until then, with the analytics thread, three visits waiting in its ring).
    await expect.poll(async () => sample(await scrape(t.url), 'unwritten_counts', { kind: 'analytics' })).toBe(1);
    await new Promise((r) => setTimeout(r, 20));
    const counted = await scrape(t.url);
    expect(sample(counted, 'unwritten_counts', { kind: 'analytics' })).toBe(1);
    expect(sample(counted, 'unwritten_counts_oldest_seconds', { kind: 'analytics' })).toBeGreaterThanOrEqual(0.02);
    // Since session 18 a click is counted in its day's analytics record: no counts of their own.
    expect(counted).not.toContain('kind="clicks"');
    await linkTraffic(t.services).flush();
    const written = await scrape(t.url);
    expect([sample(written, 'unwritten_counts', { kind: 'analytics' }), sample(written, 'unwritten_counts_oldest_seconds', { kind: 'analytics' })]).toStrictEqual([0, 0]);
  });
});

describe('rate-limit refusals', () => {
  it('a 429 counts by plan, REST (refused before its body is read) and MCP alike; scrapes count against no limit', async () => {
    const t = await listenTestApp({ env: { METRICS_TOKEN: TOKEN, RATE_LIMITS: 'on', PLAN_KEYLESS: '2/100/10' } });
    try {
      for (let i = 0; i < 5; i++) await scrape(t.url);
      const codes: number[] = [];
      for (let i = 0; i < 4; i++) codes.push((await post(t.url, '/api/base-convert', { value: '1' })).status);
      expect(codes).toStrictEqual([200, 200, 429, 429]);
      const client = await t.httpClient();
      const r = await client.callTool({ name: 'base_convert', arguments: { value: '7' } });
      expect(r.isError).toBe(true);
      const text = await scrape(t.url);
      expect(sample(text, 'rate_limit_refusals_total', { plan: 'keyless' })).toBe(3);
      expect(sample(text, 'tool_errors_total', { tool: 'base_convert', face: 'rest', code: 'RATE_LIMITED' })).toBe(2);
      expect(sample(text, 'tool_errors_total', { tool: 'base_convert', face: 'mcp', code: 'RATE_LIMITED' })).toBe(1);
      expect(sample(text, 'http_requests_total', { route: '/api/base-convert', status: '429' })).toBe(2);
    } finally {
      await t.close();
    }
  });
});

describe('the clicks roll-up', () => {
  it('each sweep sets how many days the roll-up is behind (another instance holding it: where it stands); a failed roll-up counts', async () => {
    const clock = manualClock(Date.parse('2026-11-22T09:00:00.000Z'));
    const t = await listenTestApp({ env: { METRICS_TOKEN: TOKEN }, overrides: { clock } });
    try {
      const rollUps = t.services.store.collection(LINK_CLICK_ROLLUP);
      expect(await sweepAnalytics(t.services)).toBe(0);
      let text = await scrape(t.url);
      expect([sample(text, 'link_clicks_rollup_behind_days'), sample(text, 'link_clicks_rollup_failures_total')]).toStrictEqual([0, 0]);
      // Another instance holds the roll-up, stuck 7 days before the newest day due (2026-11-19).
      await rollUps.put({ id: ROLLUP_ID, through: '2026-11-12', holder: 'another', until: clock.now() + 60_000 });
      await sweepAnalytics(t.services);
      text = await scrape(t.url);
      expect([sample(text, 'link_clicks_rollup_behind_days'), sample(text, 'link_clicks_rollup_failures_total')]).toStrictEqual([7, 0]);
      // Its lease runs out; this instance's pass fails (the store refuses its reads): counted, the gauge as it was.
      clock.t += 60_001;
      const scan = vi.spyOn(t.services.store, 'scan').mockRejectedValue(new Error('store failing'));
      const warn = vi.spyOn(t.services.log, 'warn').mockImplementation(() => {});
      await sweepAnalytics(t.services);
      scan.mockRestore();
      warn.mockRestore();
      text = await scrape(t.url);
      expect([sample(text, 'link_clicks_rollup_behind_days'), sample(text, 'link_clicks_rollup_failures_total')]).toStrictEqual([7, 1]);
      // The next sweep catches up: no day record to read, so every day is rolled up at once.
      await sweepAnalytics(t.services);
      text = await scrape(t.url);
      expect([sample(text, 'link_clicks_rollup_behind_days'), sample(text, 'link_clicks_rollup_failures_total')]).toStrictEqual([0, 1]);
      expect(await rollUps.get(ROLLUP_ID)).toMatchObject({ through: '2026-11-19' });
    } finally {
      await t.close();
    }
  });
});

describe('webhook deliveries', () => {
  it('a webhook attempt moves the deliveries family and the scheduler lag', async () => {
    const MIN = 60_000;
    const T0 = Math.floor(Date.now() / MIN) * MIN;
    const clock = manualClock(T0);
    const t = await listenTestApp({ env: { METRICS_TOKEN: TOKEN }, overrides: { clock } });
    const hits: string[] = [];
    const rx = http.createServer((req, res) => {
      hits.push(req.url ?? '');
      res.writeHead(hits.length === 1 ? 500 : 200).end('ok');
    });
    await new Promise<void>((r) => rx.listen(0, '127.0.0.1', r));
    try {
      const scheduler = startScheduler(t.services, { timers: false, backoff: () => 1000 });
      const created = await post(t.url, '/api/cron-task', { name: 'metrics', schedule: '* * * * *', callback_url: `http://127.0.0.1:${(rx.address() as AddressInfo).port}/hook` });
      expect(created.status).toBe(201);
      const before = await scrape(t.url);
      // Due at T0 + 1 min, checked 3 s late; the retry is due 1 s after the first attempt, checked 2 s after that.
      clock.t = T0 + MIN + 3000;
      await scheduler.tick();
      await scheduler.settle();
      clock.t += 3000;
      await scheduler.tick();
      await scheduler.settle();
      await scheduler.stop();
      expect(hits).toHaveLength(2);
      const after = await scrape(t.url);
      expect(sample(after, 'webhook_deliveries_total', { outcome: 'retry' }) - sample(before, 'webhook_deliveries_total', { outcome: 'retry' })).toBe(1);
      expect(sample(after, 'webhook_deliveries_total', { outcome: 'ok' }) - sample(before, 'webhook_deliveries_total', { outcome: 'ok' })).toBe(1);
      expect(sample(after, 'scheduler_lag_seconds_count') - sample(before, 'scheduler_lag_seconds_count')).toBe(2);
      expect(sample(after, 'scheduler_lag_seconds_sum') - sample(before, 'scheduler_lag_seconds_sum')).toBe(5);
      expect(sample(after, 'fetches_total', { outcome: '5xx' })).toBe(1);
    } finally {
      rx.closeAllConnections();
      await new Promise((r) => rx.close(r));
      await t.close();
    }
  });
});

describe('without METRICS_TOKEN or METRICS_PORT', () => {
  it('/metrics is a 404 and nothing is collected', async () => {
    const t = await listenTestApp();
    try {
      expect((await fetch(`${t.url}/metrics`, { headers: AUTH })).status).toBe(404);
      expect(t.services.metrics.enabled).toBe(false);
      expect(t.services.config.metricsToken).toBeNull();
    } finally {
      await t.close();
    }
  });
});

describe('METRICS_PORT', () => {
  it('serves GET /metrics alone, without a token unless one is set; anything else is a 404', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    metrics.http('GET', '/livez', 200, 0.001);
    for (const token of [null, TOKEN]) {
      const server = await serveMetricsPort({ host: '127.0.0.1', metricsPort: 0, metricsToken: token }, metrics);
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      try {
        const open = await fetch(`${url}/metrics`);
        expect(open.status).toBe(token === null ? 200 : 401);
        const text = await scrape(url, token === null ? {} : AUTH);
        expect(sample(text, 'http_requests_total', { method: 'GET', route: '/livez', status: '200' })).toBe(1);
        expect((await fetch(`${url}/`)).status).toBe(404);
        expect((await fetch(`${url}/metrics`, { method: 'POST' })).status).toBe(404);
      } finally {
        await new Promise((r) => server.close(r));
      }
    }
  });
});

describeRedis('a Redis outage', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('counts storage_unavailable_total and the STORAGE_UNAVAILABLE calls', async () => {
    const t = await listenTestApp({ env: { METRICS_TOKEN: TOKEN, REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix() } });
    try {
      expect((await post(t.url, '/api/shorten', { url: 'https://example.com/up' })).status).toBe(201);
      const before = await scrape(t.url);
      expect(sample(before, 'store_operation_duration_seconds_count', { backend: 'redis', outcome: 'ok' })).toBeGreaterThan(0);
      await redis.stop();
      const res = await post(t.url, '/api/shorten', { url: 'https://example.com/down' });
      expect(res.status).toBe(503);
      const after = await scrape(t.url);
      expect(sample(after, 'storage_unavailable_total', { backend: 'redis' })).toBeGreaterThan(0);
      expect(sample(after, 'tool_errors_total', { tool: 'url_shorten', code: 'STORAGE_UNAVAILABLE' })).toBe(1);
    } finally {
      await redis.start();
      await t.close();
    }
  });
});

describe('createMetrics: the HTTP series', () => {
  it('keeps one series per method × route × status, counts an unknown method as OTHER, and buckets each duration', async () => {
    const m = createMetrics({ defaultMetrics: false });
    m.http('POST', '/api/base-convert', 200, 0.0002);
    m.http('POST', '/api/base-convert', 200, 0.003);
    m.http('POST', '/api/base-convert', 400, 0.0002);
    m.http('GET', '/api/base-convert', 200, 0.0002);
    m.http('BREW', '/api/base-convert', 405, 2);
    m.http('PROPFIND-0815', '/api/base-convert', 405, 0.0002);
    const text = (await m.render(undefined)).body;
    const at = (method: string, status: string) => sample(text, 'http_requests_total', { method, route: '/api/base-convert', status });
    expect([at('POST', '200'), at('POST', '400'), at('GET', '200'), at('OTHER', '405')]).toStrictEqual([2, 1, 1, 2]);
    expect(sample(text, 'http_requests_total')).toBe(6);
    expect(text).not.toContain('BREW');
    expect(text).not.toContain('PROPFIND');
    const bucket = (le: string) => sample(text, 'http_request_duration_seconds_bucket', { method: 'POST', route: '/api/base-convert', status: '200', le });
    expect([bucket('0.0005'), bucket('0.0025'), bucket('0.005'), bucket('+Inf')]).toStrictEqual([1, 1, 2, 2]);
    expect(sample(text, 'http_request_duration_seconds_sum', { method: 'POST', route: '/api/base-convert', status: '200' })).toBeCloseTo(0.0032, 10);
    expect(sample(text, 'http_request_duration_seconds_bucket', { method: 'OTHER', le: '2.5' })).toBe(2);
    expect(sample(text, 'http_request_duration_seconds_bucket', { method: 'OTHER', le: '1' })).toBe(1);
  });
});
