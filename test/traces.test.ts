/**
 * Traces (docs/operations.md, Traces) against a loopback OTLP/HTTP receiver this test starts:
 * the exporter's JSON requests are parsed span by span. A REST call arriving with a W3C
 * traceparent continues that trace: its server span is the caller's child, the tool call's span
 * is the request's, and the fetch, store and worker-pool spans are the tool call's; MCP calls
 * are traced alike; an upstream fetch carries its fetch span as `traceparent`. Without
 * OTEL_EXPORTER_OTLP_ENDPOINT nothing is traced.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSlowSite, type SlowSite } from './fixtures/slow-site.js';
import { listenTestApp } from './harness.js';
import { describeRedis, startRedis, type TestRedis } from './redis.js';

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  status?: { code?: number };
}

interface Receiver {
  url: string;
  spans: Span[];
  paths: string[];
  close(): Promise<void>;
}

/** OTLP/JSON AnyValue → a plain value. */
function valueOf(v: Record<string, unknown>): unknown {
  if ('stringValue' in v) return v.stringValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue;
  if ('boolValue' in v) return v.boolValue;
  return v;
}

async function otlpReceiver(): Promise<Receiver> {
  const spans: Span[] = [];
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      paths.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<Record<string, unknown>> }> }> };
      for (const rs of body.resourceSpans) {
        for (const ss of rs.scopeSpans) {
          for (const s of ss.spans) {
            const attrs = Object.fromEntries((s.attributes as Array<{ key: string; value: Record<string, unknown> }>).map((a) => [a.key, valueOf(a.value)]));
            spans.push({ ...(s as unknown as Span), attributes: attrs });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    paths,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/** A loopback page that records the trace headers each request arrived with. */
async function recordingSite(): Promise<{ url: string; seen: Array<{ traceparent?: string; tracestate?: string }>; close(): Promise<void> }> {
  const seen: Array<{ traceparent?: string; tracestate?: string }> = [];
  const server = http.createServer((req, res) => {
    seen.push({ traceparent: req.headers.traceparent as string | undefined, tracestate: req.headers.tracestate as string | undefined });
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><html><head><title>Recorded</title></head><body></body></html>');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, close: () => new Promise((r) => server.close(() => r())) };
}

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

describe('traces over OTLP/HTTP', () => {
  let rx: Receiver;
  let site: SlowSite;
  beforeAll(async () => {
    rx = await otlpReceiver();
    site = await startSlowSite();
  });
  afterAll(async () => {
    await site.close();
    await rx.close();
  });

  it('a REST call continues the caller’s trace; its tool call, fetch, store and pool spans nest under it; MCP calls are traced too', async () => {
    const t = await listenTestApp({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, WORKERS: '1' } });
    let shortCode = '';
    try {
      const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
        fetch(`${t.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
      const traceparent = `00-${TRACE}-${PARENT}-01`;
      expect((await post('/api/meta-extract', { url: `${site.url}/slow.html?ms=5&q=secret` }, { traceparent })).status).toBe(200);
      const short = await post('/api/shorten', { url: 'https://example.com/traced' }, { traceparent });
      expect(short.status).toBe(201);
      shortCode = ((await short.json()) as { code: string }).code;
      expect((await post('/api/json-yaml', { input: '{"a":1}' }, { traceparent })).status).toBe(200);
      expect((await post('/api/base-convert', { value: 'zz', from: 'dec' }, { traceparent })).status).toBe(422);
      const client = await t.httpClient({ traceparent });
      await client.callTool({ name: 'base_convert', arguments: { value: '7' } });
    } finally {
      await t.close(); // exports what is buffered
    }
    expect(rx.paths.every((p) => p.startsWith('POST /v1/traces application/json'))).toBe(true);
    const byId = new Map(rx.spans.map((s) => [s.spanId, s]));
    const parentOf = (s: Span) => (s.parentSpanId ? byId.get(s.parentSpanId) : undefined);

    const request = rx.spans.find((s) => s.name === 'POST /api/meta-extract')!;
    expect(request).toBeDefined();
    expect(request.traceId).toBe(TRACE);
    expect(request.parentSpanId).toBe(PARENT);
    expect(request.kind).toBe(2); // SERVER
    expect(request.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/api/meta-extract', 'http.response.status_code': 200 });

    const tool = rx.spans.find((s) => s.name === 'tool meta_extract')!;
    expect(parentOf(tool)).toBe(request);
    expect(tool.attributes).toMatchObject({ 'tool.name': 'meta_extract', 'tool.face': 'rest', 'mcp.era': 'none' });
    const fetchSpan = rx.spans.find((s) => s.name === 'fetch GET' && parentOf(s) === tool)!;
    expect(fetchSpan.attributes).toMatchObject({ 'http.request.method': 'GET', 'server.address': '127.0.0.1', 'http.response.status_code': 200 });
    expect(fetchSpan.kind).toBe(3); // CLIENT

    const shorten = rx.spans.find((s) => s.name === 'tool url_shorten')!;
    expect(parentOf(shorten)?.name).toBe('POST /api/shorten');
    const storeSpans = rx.spans.filter((s) => parentOf(s) === shorten && s.name.startsWith('file '));
    expect(storeSpans.length).toBeGreaterThan(0);
    expect(storeSpans[0]!.attributes['db.system.name']).toBe('file');

    const heavy = rx.spans.find((s) => s.name === 'tool json_yaml_convert')!;
    const pool = rx.spans.find((s) => s.name === 'pool json_yaml_convert')!;
    expect(parentOf(pool)).toBe(heavy);

    const failed = rx.spans.find((s) => s.name === 'tool base_convert' && s.attributes['tool.face'] === 'rest')!;
    expect(failed.attributes['error.type']).toBe('PARSE_ERROR');
    expect(failed.status?.code).toBe(2); // ERROR

    const mcp = rx.spans.find((s) => s.name === 'tool base_convert' && s.attributes['tool.face'] === 'mcp')!;
    expect(mcp.attributes['mcp.era']).toBe('legacy');
    expect(mcp.traceId).toBe(TRACE);
    expect(parentOf(mcp)?.attributes['http.route']).toBe('/mcp');

    // Every span of the five requests is in the caller's trace; no raw path, code or query is in a span.
    for (const s of rx.spans.filter((x) => x.traceId !== TRACE)) expect(s.name).not.toMatch(/^(POST|tool|fetch|pool)/);
    const text = JSON.stringify(rx.spans);
    expect(text).not.toContain('secret');
    expect(text).not.toContain(shortCode);
  });

  it('an upstream fetch carries its fetch span as W3C traceparent; untraced, none', async () => {
    const upstream = await recordingSite();
    const call = (base: string, headers: Record<string, string> = {}) =>
      fetch(`${base}/api/meta-extract`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ url: `${upstream.url}/page` }) });
    try {
      const t = await listenTestApp({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: rx.url } });
      try {
        expect((await call(t.url, { traceparent: `00-${TRACE}-${PARENT}-01`, tracestate: 'vendor=42' })).status).toBe(200);
        expect((await call(t.url)).status).toBe(200);
      } finally {
        await t.close();
      }
      const plain = await listenTestApp();
      try {
        expect((await call(plain.url, { traceparent: `00-${TRACE}-${PARENT}-01` })).status).toBe(200);
      } finally {
        await plain.close();
      }
      expect(upstream.seen).toHaveLength(3);
      const [continued, fresh, untraced] = upstream.seen;
      // The caller's trace, with the fetch span (the tool call's child) as the parent.
      const fetchSpans = rx.spans.filter((s) => s.name === 'fetch GET' && s.attributes['server.address'] === '127.0.0.1');
      const inTrace = fetchSpans.find((s) => s.traceId === TRACE && continued!.traceparent === `00-${TRACE}-${s.spanId}-01`);
      expect(inTrace).toBeDefined();
      expect(continued!.tracestate).toBe('vendor=42');
      // A request without one starts a trace of its own; the upstream is its fetch span's child all the same.
      const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(fresh!.traceparent ?? '')!;
      expect(m).not.toBeNull();
      expect(m[1]).not.toBe(TRACE);
      expect(fetchSpans.some((s) => s.traceId === m[1] && s.spanId === m[2])).toBe(true);
      expect(untraced).toStrictEqual({ traceparent: undefined, tracestate: undefined });
    } finally {
      await upstream.close();
    }
  });

  it('without OTEL_EXPORTER_OTLP_ENDPOINT nothing is traced', async () => {
    const before = rx.spans.length;
    const t = await listenTestApp();
    try {
      expect(t.services.telemetry).toBeUndefined();
      await fetch(`${t.url}/api/base-convert`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"value":"1"}' });
    } finally {
      await t.close();
    }
    expect(rx.spans.length).toBe(before);
  });
});

describeRedis('traces on Redis', () => {
  let redis: TestRedis;
  let rx: Receiver;
  beforeAll(async () => {
    redis = await startRedis();
    rx = await otlpReceiver();
  });
  afterAll(async () => {
    await rx?.close();
    await redis?.stop();
  });

  it('the store operations of a tool call are Redis client spans under it', async () => {
    const t = await listenTestApp({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix() } });
    try {
      const res = await fetch(`${t.url}/api/shorten`, { method: 'POST', headers: { 'content-type': 'application/json', traceparent: `00-${TRACE}-${PARENT}-01` }, body: JSON.stringify({ url: 'https://example.com/redis' }) });
      expect(res.status).toBe(201);
    } finally {
      await t.close();
    }
    const tool = rx.spans.find((s) => s.name === 'tool url_shorten')!;
    expect(tool.traceId).toBe(TRACE);
    const redisSpans = rx.spans.filter((s) => s.parentSpanId === tool.spanId && s.name.startsWith('redis '));
    expect(redisSpans.length).toBeGreaterThan(0);
    for (const s of redisSpans) {
      expect(s.kind).toBe(3); // CLIENT
      expect(s.attributes['db.system.name']).toBe('redis');
    }
  });
});
