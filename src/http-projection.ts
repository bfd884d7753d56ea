import { Hono, type Context } from 'hono';
import { ToolError, toToolError } from './errors.js';
import { invokeTool, isPlainObject } from './invoke.js';
import { toolSchemas } from './json-schema.js';
import { McpHttpHandler, type CallGuard } from './mcp-server.js';
import { buildOpenApi } from './openapi.js';
import { restBindings, type AnyTool, type Caller, type Registry, type RestBinding, type ToolContext } from './registry.js';
import type { Services } from './services.js';
import { redact } from './log.js';

export interface AppOptions {
  registry: Registry;
  services: Services;
  /** Refuses calls over a limit (shared with MCP over HTTP). */
  guard?: CallGuard;
  /**
   * Works out who is calling (API key → key id); throws ToolError UNAUTHORIZED for a bad key.
   * `bodyKey`: the value of the tool's `apiKeyField` in the JSON body, when it has one.
   */
  resolveCaller?: (c: Context, base: Caller, bodyKey?: string) => Promise<Caller> | Caller;
  /** Mounts routes that are not tools (auth register/info, short-link redirect, docs). */
  extraRoutes?: Array<(app: Hono, helpers: ProjectionHelpers) => void>;
}

/** What extra route modules may reuse from the projection. */
export interface ProjectionHelpers {
  errorResponse(c: Context, err: unknown): Response;
  caller(c: Context, bodyKey?: string): Promise<Caller>;
  readJson(c: Context, limit?: number): Promise<unknown>;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/** The client socket address (node-server), or 'local' for in-process app.request(). */
export function socketAddress(c: Context): string {
  const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
  return env?.incoming?.socket?.remoteAddress ?? 'local';
}

function errorBody(err: ToolError): { success: false; error: ReturnType<ToolError['toJSON']> } {
  return { success: false, error: err.toJSON() };
}

/** Reads a request body as text, refusing more than `limit` bytes without buffering them. */
export async function readBodyText(req: Request, limit: number): Promise<string> {
  const len = req.headers.get('content-length');
  if (len !== null && /^\d+$/.test(len) && Number(len) > limit) {
    throw new ToolError('PAYLOAD_TOO_LARGE', `Request body is larger than ${limit} bytes`, { limit });
  }
  // With a Content-Length the light request of node-server reads the body directly; touching
  // req.body would build a full web Request (measurably slower).
  if (len !== null && /^\d+$/.test(len)) return req.text();
  if (!req.body) return '';
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw new ToolError('PAYLOAD_TOO_LARGE', `Request body is larger than ${limit} bytes`, { limit });
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function isJsonType(ct: string | undefined): boolean {
  if (!ct) return false;
  const t = ct.split(';')[0]!.trim().toLowerCase();
  return t === 'application/json' || (t.startsWith('application/') && t.endsWith('+json'));
}

/** Query values arrive as strings: type them by the tool's input schema (numbers, booleans). */
function coerceQuery(tool: AnyTool, query: Record<string, string>): Record<string, unknown> {
  const props = (toolSchemas(tool).input.properties ?? {}) as Record<string, { type?: string | string[] }>;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(query)) {
    if (k === 'api_key') continue;
    const t = props[k]?.type;
    const types = Array.isArray(t) ? t : t ? [t] : [];
    if ((types.includes('integer') || types.includes('number')) && /^-?\d+(\.\d+)?$/.test(v)) out[k] = Number(v);
    else if (types.includes('boolean') && (v === 'true' || v === 'false')) out[k] = v === 'true';
    else if (types.includes('array') && !types.includes('string')) out[k] = v.split(',');
    else out[k] = v;
  }
  return out;
}

const noProgress = async (): Promise<void> => {};

/**
 * The context of a REST call. The signal is read lazily: touching the raw request's signal
 * makes node-server build a full web Request. A class, because an object literal with a getter
 * cost ~10 µs per request here (measured: 28 → 15 µs of CPU per call).
 */
class RestContext implements ToolContext {
  readonly progress = noProgress;
  constructor(
    readonly caller: Caller,
    readonly services: Services,
    readonly c: Context,
  ) {}

  get signal(): AbortSignal {
    return this.c.req.raw.signal;
  }
}

function honoPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

/**
 * The REST face: every route derived from the registry, plus /mcp, /openapi.json, /api/tools
 * and /healthz. Knows no tool by name.
 */
export function createApp(opts: AppOptions): Hono {
  const { registry, services } = opts;
  const { config, log } = services;
  const app = new Hono();
  const mcp = new McpHttpHandler({ registry, services, guard: opts.guard });

  const errorResponse = (c: Context, err: unknown): Response => {
    const te = toToolError(err, (m, cause) => log.error(`${m} on ${c.req.method} ${redact(c.req.path)}`, cause));
    const res = c.json(errorBody(te), te.status as 400);
    for (const [k, v] of Object.entries(te.headers ?? {})) res.headers.set(k, v);
    return res;
  };

  const baseCaller = (c: Context): Caller => ({ keyId: null, ip: socketAddress(c), transport: 'rest' });
  const caller = async (c: Context, bodyKey?: string): Promise<Caller> => {
    const cached = c.get('caller' as never) as Caller | undefined;
    if (cached) return cached;
    const base = baseCaller(c);
    const resolved = opts.resolveCaller ? await opts.resolveCaller(c, base, bodyKey) : base;
    c.set('caller' as never, resolved as never);
    return resolved;
  };

  const readJson = async (c: Context, limit = config.bodyLimit): Promise<unknown> => {
    const text = await readBodyText(c.req.raw, limit);
    if (text.trim() === '') return {};
    if (!isJsonType(c.req.header('content-type'))) {
      throw new ToolError('UNSUPPORTED_MEDIA_TYPE', 'Send the body as JSON with Content-Type: application/json');
    }
    try {
      return JSON.parse(text);
    } catch {
      throw new ToolError('INVALID_INPUT', 'The request body is not valid JSON');
    }
  };
  const helpers: ProjectionHelpers = { errorResponse, caller, readJson };

  app.onError((err, c) => errorResponse(c, err));
  app.notFound((c) => errorResponse(c, new ToolError('NOT_FOUND', `No route for ${c.req.method} ${c.req.path}`)));

  // Request log (stderr, debug level only), keys redacted.
  if (config.logLevel === 'debug') {
    app.use('*', async (c, next) => {
      const started = performance.now();
      await next();
      log.debug(`${c.req.method} ${redact(c.req.url.replace(/^https?:\/\/[^/]+/, ''))} ${c.res.status} ${(performance.now() - started).toFixed(1)}ms`);
    });
  }

  app.get('/healthz', (c) => c.json({ status: 'ok' }));

  // The API's own documents: open to everyone, but a key that does not exist is still a 401
  // (CONTRACT §2), never silently ignored. /healthz, /docs, / and /s/{code} take no key.
  app.get('/api/tools', async (c) => {
    try {
      await caller(c);
    } catch (err) {
      return errorResponse(c, err);
    }
    return c.json({
      success: true,
      tools: registry.tools.map((t) => ({ name: t.name, title: t.title, description: t.description, inputSchema: toolSchemas(t).input })),
    });
  });

  let openapi: unknown;
  app.get('/openapi.json', async (c) => {
    try {
      await caller(c);
    } catch (err) {
      return errorResponse(c, err);
    }
    return c.json((openapi ??= buildOpenApi(registry, { serverUrl: config.publicBaseUrl })));
  });

  // MCP over streamable HTTP, stateless.
  app.post('/mcp', async (c) => {
    let text: string;
    try {
      text = await readBodyText(c.req.raw, config.bodyLimit);
    } catch (err) {
      if (err instanceof ToolError && err.code === 'PAYLOAD_TOO_LARGE') {
        return c.json({ jsonrpc: '2.0', error: { code: -32000, message: err.message }, id: null }, 413);
      }
      throw err;
    }
    const who = await caller(c).catch((err: unknown) => err);
    if (who instanceof Error) return errorResponse(c, who);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Let the SDK transport answer exactly as it does for any unparsable body.
      const req = new Request(c.req.raw.url, { method: 'POST', headers: c.req.raw.headers, body: text });
      return mcp.handle(req, undefined, who as Caller);
    }
    return mcp.handle(c.req.raw, parsed, who as Caller);
  });
  const notAllowed = (c: Context) =>
    c.json({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: this server is stateless; use POST' }, id: null }, 405, { Allow: 'POST' });
  app.get('/mcp', notAllowed);
  app.delete('/mcp', notAllowed);

  const run = async (c: Context, tool: AnyTool, binding: RestBinding | null, mergeRequest = true) => {
    const limit = binding?.bodyLimit === 'large' ? config.largeBodyLimit : config.bodyLimit;
    const method = c.req.method;
    let body: unknown = {};
    if (method === 'POST') body = await readJson(c, limit);
    if (!isPlainObject(body)) throw new ToolError('INVALID_INPUT', 'The request body must be a JSON object');
    const input: Record<string, unknown> = mergeRequest ? { ...body, ...coerceQuery(tool, c.req.query()), ...c.req.param() } : body;
    const bodyKey = tool.apiKeyField !== undefined ? body[tool.apiKeyField] : undefined;
    const who = await caller(c, typeof bodyKey === 'string' ? bodyKey : undefined);
    const extraHeaders = opts.guard?.(who, tool)?.headers ?? {};
    const ctx = new RestContext(who, services, c);
    let r: Awaited<ReturnType<typeof invokeTool>>;
    try {
      r = await invokeTool(tool, input, ctx);
    } catch (err) {
      // A failed call was still counted: it carries the limit headers too.
      const res = errorResponse(c, err);
      for (const [k, v] of Object.entries(extraHeaders)) res.headers.set(k, v);
      return res;
    }
    let res: Response;
    if (r.body) {
      res = new Response(r.body.data as Uint8Array<ArrayBuffer>, { status: binding?.status ?? 200, headers: { 'content-type': r.body.contentType, ...r.body.headers } });
    } else {
      res = c.json({ success: true, ...r.json }, (binding?.status ?? 200) as 200);
    }
    for (const [k, v] of Object.entries(extraHeaders)) res.headers.set(k, v);
    return res;
  };

  const handlerFor = (tool: AnyTool, binding: RestBinding | null) => async (c: Context) => {
    try {
      return await run(c, tool, binding);
    } catch (err) {
      return errorResponse(c, err);
    }
  };

  for (const route of opts.extraRoutes ?? []) route(app, helpers);

  // Specific paths before parameterised ones (e.g. /api/cron-task/logs before /api/cron-task/{id}/…).
  const bindings = registry.tools.flatMap((t) => restBindings(t).map((b) => ({ t, b })));
  bindings.sort((x, y) => (x.b.path.includes('{') ? 1 : 0) - (y.b.path.includes('{') ? 1 : 0));
  for (const { t, b } of bindings) app.on(b.method, honoPath(b.path), handlerFor(t, b));

  // The uniform face: body = the tool's input, nothing merged from the path or query.
  app.post('/api/tools/:name', async (c) => {
    const tool = registry.get(c.req.param('name'));
    if (!tool) return errorResponse(c, new ToolError('NOT_FOUND', `Unknown tool: ${c.req.param('name')}`));
    try {
      return await run(c, tool, restBindings(tool)[0] ?? null, false);
    } catch (err) {
      return errorResponse(c, err);
    }
  });

  // Browser safety (CONTRACT §0): Origin allow-list and DNS-rebinding protection. A wrapper
  // around fetch rather than a middleware: with one handler per route hono skips compose, and
  // nearly every request (no Origin header) then costs one header lookup here.
  const loopbackBind = LOOPBACK_HOSTS.has(config.host) || config.host.startsWith('127.');
  const inner = app.fetch;
  const forbidden = (message: string) =>
    new Response(JSON.stringify(errorBody(new ToolError('FORBIDDEN', message))), { status: 403, headers: { 'content-type': 'application/json' } });
  app.fetch = (req, env, executionCtx) => {
    const host = req.headers.get('host');
    if (loopbackBind && host !== null) {
      const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0]!;
      if (!LOOPBACK_HOSTS.has(name.toLowerCase())) return forbidden('Host not allowed');
    }
    const origin = req.headers.get('origin');
    if (origin === null) return inner(req, env, executionCtx);
    // 'null' is what sandboxed frames and file: pages send: never same-origin.
    const allowed =
      config.allowedOrigins === '*' ||
      (origin !== 'null' &&
        (config.allowedOrigins.includes(origin) || origin === new URL(req.url).origin || (host !== null && (origin === `http://${host}` || origin === `https://${host}`))));
    if (!allowed) return forbidden('Origin not allowed');
    if (req.method === 'OPTIONS') {
      return new Response(null, {
        status: 204,
        headers: {
          'access-control-allow-origin': origin,
          'access-control-allow-methods': 'GET, POST, DELETE, OPTIONS',
          'access-control-allow-headers': 'content-type, authorization, accept, mcp-protocol-version, mcp-session-id',
          'access-control-max-age': '600',
          vary: 'Origin',
        },
      });
    }
    return Promise.resolve(inner(req, env, executionCtx)).then((res) => {
      const out = new Response(res.body, res);
      out.headers.set('access-control-allow-origin', origin);
      out.headers.set('access-control-expose-headers', 'ratelimit-limit, ratelimit-remaining, ratelimit-reset, ratelimit-policy, ratelimit, retry-after, x-image-width, x-image-height, mcp-session-id');
      out.headers.append('vary', 'Origin');
      return out;
    });
  };

  return app;
}
