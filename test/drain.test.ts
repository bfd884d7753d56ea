/**
 * The graceful stop of `devtoolbox serve` (issue 36, docs/operations.md), on the real process:
 * SIGTERM while a seo_check (REST) and a meta_extract (MCP, on its SSE stream) wait on their
 * upstream, and a task (Prefer: respond-async) runs → /healthz answers 503 draining, a new
 * connection is refused, both calls still get their whole answers and the task completes, the
 * process exits 0; a call still
 * running at SHUTDOWN_TIMEOUT_MS is cut and the process exits 1. Every step waits for an event
 * (the upstream saw the request, the server logged that it drains), never for a time.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, tempDir } from './harness.js';
import { rawConnection } from './raw-http.js';
import { describeRedis, startRedis, type TestRedis } from './redis.js';
import { killServerProcesses, startServerProcess, type ServerProcess } from './server-process.js';

const PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>A page answered when the test says so</title>
<meta name="description" content="The upstream of a call in flight while the server under test drains before it stops."></head>
<body><h1>Held</h1><p>Served once released.</p></body></html>`;

/** A loopback upstream that holds each request until the test releases it (never, if it does not). */
interface HeldSite {
  url: string;
  /** Resolves once `n` requests (default 1) reached the site. */
  arrived(n?: number): Promise<void>;
  /** Answers the requests held and the ones to come (but those to /later). */
  release(): void;
  /** Answers the requests to /later. */
  releaseLater(): void;
  close(): Promise<void>;
}

async function startHeldSite(): Promise<HeldSite> {
  let count = 0;
  const waiting: Array<{ n: number; resolve: () => void }> = [];
  const arrived = (n = 1) => new Promise<void>((resolve) => (count >= n ? resolve() : waiting.push({ n, resolve })));
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let releaseLater!: () => void;
  const releasedLater = new Promise<void>((r) => (releaseLater = r));
  const server = http.createServer((req, res) => {
    count++;
    for (const w of waiting.filter((x) => count >= x.n)) w.resolve();
    void (req.url?.startsWith('/later') ? releasedLater : released).then(() => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    arrived,
    release,
    releaseLater,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

interface Running extends ServerProcess {
  port: number;
  /** Resolves with the exit code and signal of the process. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves once the server's log says it drains. */
  draining: Promise<void>;
  /** Resolves once the server's log says its connections are closed. */
  connectionsClosed: Promise<void>;
}

async function startServer(env: Record<string, string>): Promise<Running> {
  const p = await startServerProcess({ RATE_LIMITS: 'off', FETCH_ALLOW_PRIVATE: 'true', WORKERS: '1', FETCH_TIMEOUT_MS: '120000', ...env });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    if (p.child.exitCode !== null || p.child.signalCode !== null) resolve({ code: p.child.exitCode, signal: p.child.signalCode });
    p.child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  let log = '';
  const logged = (text: string) =>
    new Promise<void>((resolve) =>
      p.child.stderr!.on('data', (d: Buffer) => {
        log += d.toString();
        if (log.includes(text)) resolve();
      }),
    );
  const draining = logged('draining:');
  const connectionsClosed = logged('every connection closed');
  for (let i = 0; i < 400; i++) {
    const r = await fetch(`${p.base}/healthz`).catch(() => undefined);
    if (r?.ok) break;
    await new Promise((res) => setTimeout(res, 50));
  }
  return { ...p, port: Number(new URL(p.base).port), exited, draining, connectionsClosed };
}

const post = (path: string, body: unknown) => {
  const json = JSON.stringify(body);
  return `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`;
};
const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;

/** 'cut' when the connection of a call closed without an answer, else its status. */
const outcome = (res: Promise<Response>): Promise<number | 'cut'> => res.then((r) => r.status, () => 'cut');

/** Resolves with the error code of a connection attempt to `port` (or 'connected'). */
function tryConnect(port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve('connected');
    });
    s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

const MODERN = '2026-07-28';

let site: HeldSite;
afterEach(async () => {
  killServerProcesses();
  await site?.close();
});

/** SIGTERM during calls in flight: their answers are whole, /healthz drains, no new connection, exit 0. */
async function drainsACallInFlight(env: Record<string, string>): Promise<void> {
  site = await startHeldSite();
  const server = await startServer(env);
  const conn = rawConnection(server.port);
  conn.send(post('/api/seo-check', { url: `${site.url}/page`, format: 'summary' }));
  // An MCP call answered on its own SSE stream (2026-07-28, with a progress token).
  const stream = fetch(`${server.base}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'meta_extract' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'meta_extract', arguments: { url: `${site.url}/page` }, _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {}, progressToken: 'p' } },
    }),
  }).then(async (r) => ({ type: r.headers.get('content-type'), text: await r.text() }));
  stream.catch(() => {}); // awaited below
  // A task (REST Prefer: respond-async): answered 202 at once, it runs on past its HTTP answer.
  const created = await fetch(`${server.base}/api/seo-check`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', prefer: 'respond-async' },
    body: JSON.stringify({ url: `${site.url}/later`, format: 'summary' }),
  });
  expect(created.status).toBe(202);
  const task = created.headers.get('location')!;
  await site.arrived(3);

  server.child.kill('SIGTERM');
  await server.draining;
  expect(await tryConnect(server.port)).toBe('ECONNREFUSED');
  // Asked after the drain began, on the connection the call holds: answered after the call's answer.
  conn.send(get('/healthz'));
  site.release();

  const [call, health, ...more] = await conn.answers;
  expect(call?.status).toBe(200);
  // The whole summary: the page was read and scored after the signal.
  expect(JSON.parse(call!.body)).toMatchObject({ success: true, url: `${site.url}/page`, score: expect.any(Number), grade: expect.any(String) });
  expect(JSON.parse(call!.body).issues).toContainEqual(expect.objectContaining({ code: 'viewport_missing' }));
  expect(health?.status).toBe(503);
  expect(JSON.parse(health!.body)).toStrictEqual({ status: 'draining' });
  expect(more).toStrictEqual([]);
  const sse = await stream;
  expect(sse.type).toContain('text/event-stream');
  // The stream ends with the call's response, whole: the page was read after the signal.
  const last = JSON.parse(sse.text.trim().split('\n\n').at(-1)!.replace(/^event: message\ndata: /, '')) as { id: number; result: { resultType: string; content: Array<{ text: string }> } };
  expect(last).toMatchObject({ jsonrpc: '2.0', id: 7, result: { resultType: 'complete' } });
  expect(JSON.parse(last.result.content[0]!.text)).toMatchObject({ status: 200, title: 'A page answered when the test says so' });
  // Every connection is closed; the task's upstream answers only now, and the process waits for it.
  await server.connectionsClosed;
  site.releaseLater();
  expect(await server.exited).toStrictEqual({ code: 0, signal: null });
  // The task finished before the process stopped: the next one finds it completed, not failed.
  const next = await startServer(env);
  expect(await (await fetch(`${next.base}${task}`)).json()).toMatchObject({ status: 'completed', result: { success: true, url: `${site.url}/later` } });
}

/** A call still running at SHUTDOWN_TIMEOUT_MS is cut; the process does not wait for it and exits 1. */
async function cutsACallPastTheTimeout(env: Record<string, string>): Promise<void> {
  site = await startHeldSite(); // never released
  const server = await startServer({ ...env, SHUTDOWN_TIMEOUT_MS: '500' });
  const call = outcome(fetch(`${server.base}/api/seo-check`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url: `${site.url}/page` }) }));
  await site.arrived();
  server.child.kill('SIGTERM');
  // FETCH_TIMEOUT_MS is 120 s: a process that waited for the call would outlive the test's timeout.
  expect(await server.exited).toStrictEqual({ code: 1, signal: null });
  expect(await call).toBe('cut');
}

describe('graceful stop on the file store', () => {
  it('SIGTERM: a seo_check (REST) and a meta_extract (MCP over SSE) in flight get their whole answers, a task completes, /healthz says draining, new connections are refused, exit 0', async () => {
    await drainsACallInFlight({ DATA_DIR: tempDir('dtb-drain-') });
  }, 60_000);

  it('a call still running at SHUTDOWN_TIMEOUT_MS is cut and the process exits 1', async () => {
    await cutsACallPastTheTimeout({ DATA_DIR: tempDir('dtb-drain-') });
  }, 60_000);

  it('a second signal exits at once, with 128 + the signal number', async () => {
    site = await startHeldSite(); // never released
    const server = await startServer({ DATA_DIR: tempDir('dtb-drain-'), SHUTDOWN_TIMEOUT_MS: '3600000' });
    const call = outcome(fetch(`${server.base}/api/seo-check`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url: `${site.url}/page` }) }));
    await site.arrived();
    server.child.kill('SIGTERM');
    await server.draining;
    server.child.kill('SIGINT');
    expect(await server.exited).toStrictEqual({ code: 130, signal: null });
    expect(await call).toBe('cut');
  }, 60_000);
});

describeRedis('graceful stop on Redis', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('SIGTERM: a seo_check (REST) and a meta_extract (MCP over SSE) in flight get their whole answers, a task completes, /healthz says draining, new connections are refused, exit 0', async () => {
    await drainsACallInFlight({ REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix() });
  }, 60_000);

  it('a call still running at SHUTDOWN_TIMEOUT_MS is cut and the process exits 1', async () => {
    await cutsACallPastTheTimeout({ REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix() });
  }, 60_000);
});

describe('/healthz and /livez while draining', () => {
  it('/healthz answers 503 draining, /livez stays 200', async () => {
    const t = await startTestApp();
    try {
      expect((await t.request('GET', '/healthz')).status).toBe(200);
      t.services.draining = true;
      const health = await t.request('GET', '/healthz');
      expect(health.status).toBe(503);
      expect(await health.json()).toStrictEqual({ status: 'draining' });
      const live = await t.request('GET', '/livez');
      expect(live.status).toBe(200);
      expect(await live.json()).toStrictEqual({ status: 'alive' });
    } finally {
      await t.close();
    }
  });
});
