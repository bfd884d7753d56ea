/**
 * The HTTP side of the metrics: `GET /metrics` behind its bearer token, and the per-request
 * count and timing (`http_requests_total`, `http_request_duration_seconds`) around the one
 * fetch every request goes through — direct routes and preroutes included — labelled by route
 * template, never by the raw path.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
// Imported, not the global: the global `performance` is a getter, read on every use.
import { performance } from 'node:perf_hooks';
import type { Hono } from 'hono';
import { METHOD_NAME_ALL } from 'hono/router';
import { TrieRouter } from 'hono/router/trie-router';
import type { Config } from './config.js';
import { errorObject, ToolError } from './errors.js';
import { requestIdOf } from './http/request-log.js';
import type { Metrics } from './metrics.js';

type Fetch = (req: Request, env?: unknown, executionCtx?: never) => Response | Promise<Response>;

/** The route label of a request that matched no route: one value, whatever the path. */
export const UNMATCHED = 'unmatched';

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/** Whether an Authorization header carries `token` (compared in constant time). */
export function bearerMatches(authorization: string | null, token: string): boolean {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  return m !== null && timingSafeEqual(digest(m[1]!), digest(token));
}

/**
 * The answer of `GET /metrics`: 401 without the token (when one is configured), else the
 * exposition (OpenMetrics when Accept asks for it). Never counted against any limit.
 */
export async function metricsResponse(req: Request, metrics: Metrics, token: string | null): Promise<Response> {
  if (token !== null && !bearerMatches(req.headers.get('authorization'), token)) {
    const e = new ToolError('UNAUTHORIZED', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>');
    // On PORT the answer has a request id like every other error (METRICS_PORT's listener has none).
    return new Response(JSON.stringify({ success: false, error: errorObject(e, requestIdOf(req)) }), {
      status: 401,
      headers: { 'content-type': 'application/json', 'www-authenticate': 'Bearer realm="metrics"', 'cache-control': 'no-store' },
    });
  }
  const out = await metrics.render(req.headers.get('accept') ?? undefined);
  return new Response(out.body, { status: 200, headers: { 'content-type': out.contentType, 'cache-control': 'no-store' } });
}

/** Mounts `GET /metrics` on the app when a token protects it (with METRICS_PORT alone it is served there only). */
export function mountMetrics(app: Hono, metrics: Metrics, config: Pick<Config, 'metricsToken'>): void {
  const token = config.metricsToken;
  if (!metrics.enabled || token === null) return;
  app.get('/metrics', (c) => metricsResponse(c.req.raw, metrics, token));
}

/** hono's `/s/:code` (or `:code{re}`) as the contract writes it: `/s/{code}`. */
function templateOf(honoPath: string): string {
  return honoPath.replace(/:([A-Za-z0-9_]+)(\{[^}]*\})?\??/g, '{$1}');
}

/**
 * The route template of a request: an exact direct route is its own template; anything else is
 * matched against the app's route table (read on first use, when every route is mounted).
 */
export function routeTemplates(app: Hono, isDirect: (method: string, rawPath: string) => boolean): (method: string, rawPath: string) => string {
  let router: TrieRouter<string> | undefined;
  return (method, rawPath) => {
    if (isDirect(method, rawPath)) return rawPath;
    if (!router) {
      router = new TrieRouter<string>();
      for (const r of app.routes) if (r.method !== METHOD_NAME_ALL) router.add(r.method, r.path, templateOf(r.path));
    }
    const q = rawPath.indexOf('?');
    const path = q === -1 ? rawPath : rawPath.slice(0, q);
    const found = router.match(method === 'HEAD' ? 'GET' : method, path)[0];
    return found[0]?.[0] ?? UNMATCHED;
  };
}

/** The request line's path and query: node's own when @hono/node-server serves it, else from the URL. */
function rawPathOf(req: Request, env: unknown): string {
  return (env as { incoming?: { url?: string } } | undefined)?.incoming?.url ?? req.url.replace(/^https?:\/\/[^/]+/, '');
}

/** `inner` with every request counted and timed (to its response head) by method, route template and status. */
export function withHttpMetrics<F extends Fetch>(inner: F, metrics: Metrics, route: (method: string, rawPath: string) => string): F {
  const record = (req: Request, env: unknown, status: number, started: number) =>
    metrics.http(req.method, route(req.method, rawPathOf(req, env)), status, (performance.now() - started) / 1000);
  const counted: Fetch = (req, env, executionCtx) => {
    const started = performance.now();
    const res = inner(req, env, executionCtx);
    if (res instanceof Promise) {
      return res.then((r) => {
        record(req, env, r.status, started);
        return r;
      });
    }
    record(req, env, res.status, started);
    return res;
  };
  return counted as F;
}

/**
 * METRICS_PORT: a listener of its own that answers only `GET /metrics` (404 otherwise), so the
 * scrape can stay on a private network while PORT is public. Resolves once listening.
 */
export async function serveMetricsPort(config: Pick<Config, 'host' | 'metricsPort' | 'metricsToken'>, metrics: Metrics): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ success: false, error: new ToolError('NOT_FOUND', 'Only GET /metrics is served on METRICS_PORT').toJSON() }));
      return;
    }
    const headers = new Headers();
    if (req.headers.authorization !== undefined) headers.set('authorization', req.headers.authorization);
    if (req.headers.accept !== undefined) headers.set('accept', req.headers.accept);
    void metricsResponse(new Request('http://metrics/metrics', { headers }), metrics, config.metricsToken).then(async (r) => {
      const out: Record<string, string> = {};
      r.headers.forEach((v, k) => (out[k] = v));
      res.writeHead(r.status, out).end(req.method === 'HEAD' ? undefined : Buffer.from(await r.arrayBuffer()));
    }, () => res.writeHead(500).end());
  });
  server.headersTimeout = 15_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.metricsPort ?? 0, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}
