import { Hono, type Context } from 'hono';
import { getQueryParams } from 'hono/utils/url';
import type { CallPath } from '../core/call.js';
import type { Family } from '../core/family.js';
import { docsRoutes } from '../docs/routes.js';
import { errorObject, ToolError, toToolError } from '../errors.js';
import { toolSchemas } from '../json-schema.js';
import { redact } from '../log.js';
import { mountMcp } from '../mcp/http.js';
import { UiSessions } from '../mcp/session.js';
import { mountMetrics, routeTemplates, withHttpMetrics } from '../metrics-http.js';
import { withTracing } from '../telemetry.js';
import { mountOAuth } from './oauth.js';
import { tokenInQuery } from '../auth/oauth/server.js';
import { buildOpenApi } from '../openapi/index.js';
import type { Caller, Registry } from '../registry.js';
import type { Services } from '../services.js';
import { storeReadiness } from '../state/index.js';
import { readJsonBody } from './body.js';
import { headersOf, JSON_TYPE } from './headers.js';
import { allowedMethods } from './allowed-methods.js';
import { DirectRoutes } from './direct.js';
import { withBrowserGuard } from './browser-guard.js';
import { requestIdOf, withRequestIds, withRequestLog, withRequestTracking } from './request-log.js';
import { mountFamilyRoutes } from './family-routes.js';
import type { RouteKit } from './kit.js';
import { mountToolRoutes } from './rest.js';
import type { TaskManager } from '../core/tasks/index.js';
import { joinHeaders } from '../lib/join-headers.js';

export interface AppOptions {
  /** The tools and the families they came from (whose own routes are mounted too). */
  registry: Registry<Family>;
  services: Services;
  calls: CallPath;
  /** Tasks (MCP Tasks extension, REST `Prefer: respond-async`); absent = not served. */
  tasks?: TaskManager | undefined;
}

/** The client socket address (node-server), or 'local' for in-process app.request(). */
function peerOf(env: unknown): string {
  return (env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming?.socket?.remoteAddress ?? 'local';
}

/** The path of a request URL (for the log of an unexpected error). */
function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return url;
  }
}

/** Headers a browser script may read on a cross-origin answer. */
const EXPOSED = ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'ratelimit-policy', 'ratelimit', 'retry-after', 'mcp-session-id', 'x-request-id'];

/**
 * The HTTP face: the tools' REST routes, /mcp, the families' own routes, the documents
 * (/openapi.json, /api/tools, /docs, /) and /healthz — behind the browser guard. Translates
 * HTTP to calls of the one call path; names no family and no tool.
 */
export function createApp(opts: AppOptions): Hono {
  const { registry, services, calls, tasks } = opts;
  const { config, log } = services;
  const app = new Hono();

  /** The contract's error answer: `{success: false, error}`, its status and headers. */
  const errorFor = (req: Request, err: unknown): Response => {
    const te = toToolError(err, (m, cause) => log.error(`${m} on ${req.method} ${redact(pathOf(req.url))}`, cause));
    // The error names its request (the answer's X-Request-Id), to be quoted to support.
    const body = JSON.stringify({ success: false, error: errorObject(te, requestIdOf(req)) });
    return new Response(body, { status: te.status, headers: te.headers ? joinHeaders(JSON_TYPE, te.headers) : JSON_TYPE });
  };
  const errorResponse = (c: Context, err: unknown): Response => errorFor(c.req.raw, err);

  /**
   * Who is calling (the key is looked up; 401 for a bad one). Synchronous for a keyless caller
   * (no promise hop); may throw or reject.
   */
  const callerOf = (req: Request, env: unknown, bodyKey?: string, transport: Caller['transport'] = 'rest', admitted: boolean | 'if-cached' = false): Caller | Promise<Caller> => {
    const header = headersOf(req, env);
    const url = req.url;
    // A token travels only in the Authorization header (a URL ends up in logs and histories).
    if (url.includes('access_token=') && getQueryParams(url, 'access_token') !== undefined) throw tokenInQuery();
    // An empty key (`?api_key=`, body `"api_key": ""`) is no key.
    const queryKeys = url.includes('?') ? (getQueryParams(url, 'api_key') as string[] | undefined)?.filter((k) => k !== '') : undefined;
    return services.auth.resolve(
      {
        peer: peerOf(env),
        forwardedFor: header('x-forwarded-for') ?? undefined,
        authorization: header('authorization') ?? undefined,
        keys: bodyKey === undefined || bodyKey === '' ? queryKeys : [...(queryKeys ?? []), bodyKey],
        admitted,
      },
      transport,
    );
  };

  /** callerOf, resolved once per request of the hono app. */
  const caller = (c: Context, bodyKey?: string, transport: Caller['transport'] = 'rest'): Caller | Promise<Caller> => {
    const cached = c.get('caller' as never) as Caller | undefined;
    if (cached) return cached;
    const resolved = callerOf(c.req.raw, c.env, bodyKey, transport);
    if (resolved instanceof Promise) {
      return resolved.then((who) => {
        c.set('caller' as never, who as never);
        return who;
      });
    }
    c.set('caller' as never, resolved as never);
    return resolved;
  };

  const kit: RouteKit = { errorResponse, errorFor, caller, callerOf, readJson: (c, limit = config.bodyLimit) => readJsonBody(c.req.raw, limit, headersOf(c.req.raw, c.env)) };

  app.onError((err, c) => errorResponse(c, err));
  // A path served with other methods is a 405 naming them; anything else is a 404.
  const allowed = allowedMethods(app);
  app.notFound((c) => {
    const allow = allowed(c.req.path).join(', ');
    if (allow === '') return errorResponse(c, new ToolError('NOT_FOUND', `No route for ${c.req.method} ${c.req.path}`));
    return errorResponse(c, new ToolError('METHOD_NOT_ALLOWED', `${c.req.method} is not served on ${c.req.path}; allowed: ${allow}`, undefined, { Allow: allow }));
  });

  // Readiness (what a load balancer probes): 503 while the collections load, the storage
  // fails (with the reason) or the process drains before stopping. Liveness: /livez answers while the process serves at all.
  app.get('/healthz', (c) => {
    // Stopping: the balancer should send no more calls here, while those in flight finish.
    if (services.draining) return c.json({ status: 'draining' }, 503, { 'Cache-Control': 'no-store' });
    const r = storeReadiness(services.store);
    if (r.ready) return c.json({ status: 'ok' });
    const body = r.status === 'starting' ? { status: r.status } : { status: r.status, reason: r.reason, since: r.since };
    return c.json(body, 503, { 'Retry-After': '1', 'Cache-Control': 'no-store' });
  });
  app.get('/livez', (c) => c.json({ status: 'alive' }));
  // Prometheus scrapes (METRICS_TOKEN): no key, no limits.
  mountMetrics(app, services.metrics, config);

  // The API's own documents: open to everyone, but a key that does not exist is still a 401,
  // never silently ignored. /healthz, /docs, / and /s/{code} take no key.
  /** A JSON document built once, on first request, after the key check. */
  const document = (path: string, build: () => unknown) => {
    let text: string | undefined;
    app.get(path, async (c) => {
      try {
        await caller(c);
      } catch (err) {
        return errorResponse(c, err);
      }
      text ??= JSON.stringify(build());
      return c.body(text, 200, { 'content-type': 'application/json' });
    });
  };
  document('/api/tools', () => ({
    success: true,
    tools: registry.tools.map((t) => ({ name: t.name, title: t.title, description: t.description, inputSchema: toolSchemas(t).input })),
  }));
  document('/openapi.json', () => buildOpenApi(registry, { serverUrl: config.publicBaseUrl }));

  // Sign-in (OAuth 2.1 for /mcp/auth, src/auth/oauth/): the metadata documents, the authorization server.
  const oauth = mountOAuth(app, services, kit);

  // MCP over streamable HTTP, stateless. The tool calls are also served ahead of the router (./direct.ts).
  const direct = new DirectRoutes();
  mountMcp(app, { registry, calls, tasks, config, kit, direct, signIn: oauth, sessions: new UiSessions(services.store, () => services.clock.now()) });

  mountFamilyRoutes(app, registry.families, kit, services);
  docsRoutes(registry, config)(app, kit);
  mountToolRoutes(app, { registry, calls, tasks, services, kit, direct });

  // Hot paths ahead of the router (Family.preroute, the direct routes), at every log level.
  const preroutes = registry.families.flatMap((f) => (f.preroute ? [f.preroute(services)] : []));
  const routed = app.fetch;
  const served: typeof app.fetch = (req, env, executionCtx) => {
    // Node's own request line (served by @hono/node-server); in-process app.request() has none.
    const incoming = (env as { incoming?: { url?: string; headers: Record<string, string | string[] | undefined> } } | undefined)?.incoming;
    const rawPath = incoming?.url;
    if (rawPath !== undefined) {
      for (const answer of preroutes) {
        const res = answer(req.method, rawPath, incoming!.headers);
        // Declined after a look at the store (a promise of undefined): the router answers.
        if (res) return res instanceof Promise ? res.then((r) => r ?? routed(req, env, executionCtx)) : res;
      }
      const handler = direct.get(req.method, rawPath);
      if (handler) return handler(req, env);
    }
    return routed(req, env, executionCtx);
  };
  const exposed = [...EXPOSED, ...registry.tools.flatMap((t) => Object.keys(t.responseHeaders ?? {}).map((h) => h.toLowerCase()))];
  const guarded = withBrowserGuard(served, config, [...new Set(exposed)]);
  // The request log (stderr, keys redacted) wraps the same fetch, at debug only: no cost otherwise.
  const route = routeTemplates(app, (m, p) => direct.get(m, p) !== undefined);
  // Request ids and the access log (LOG_FORMAT=json, LOG_REQUESTS=on) replace the debug line.
  const tracking = config.logFormat === 'json' || config.logRequests;
  const trusted = (peer: string) => services.auth.trusted.has(peer);
  // Otherwise every response still carries an X-Request-Id (a proxy's, or a new one).
  const logged = tracking
    ? withRequestTracking(guarded, { log, access: config.logRequests, route, trusted })
    : withRequestIds(config.logLevel === 'debug' ? withRequestLog(guarded, log) : guarded, trusted);
  // A span per request (OTEL_EXPORTER_OTLP_ENDPOINT), inside the request id's context.
  const traced = services.telemetry ? withTracing(logged, services.telemetry, route) : logged;
  // Requests counted by route template (METRICS_TOKEN / METRICS_PORT): no wrapper otherwise.
  app.fetch = services.metrics.enabled ? withHttpMetrics(traced, services.metrics, route) : traced;
  return app;
}
