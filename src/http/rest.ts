import type { Context, Hono } from 'hono';
import type { CallPath } from '../core/call.js';
import type { RouteKit } from './kit.js';
import type { TaskManager } from '../core/tasks/index.js';
import { ToolError } from '../errors.js';
import { isPlainObject } from '../invoke.js';
import { toolSchemas } from '../json-schema.js';
import { restBindings, type AnyTool, type Caller, type Registry, type RestBinding } from '../registry.js';
import type { Services } from '../services.js';
import { getQueryParam } from 'hono/utils/url';
import { readJsonBody } from './body.js';
import type { DirectRoutes } from './direct.js';
import { headersOf, JSON_TYPE } from './headers.js';
import { mountTaskRoutes, prefersAsync, respondAsync } from './tasks.js';
import { honoPath } from './family-routes.js';
import { joinHeaders } from '../lib/join-headers.js';

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

function setAll(res: Response, headers: Readonly<Record<string, string>> | undefined): Response {
  if (headers) for (const k in headers) res.headers.set(k, headers[k]!);
  return res;
}

/**
 * The REST face of the tools: every binding of the registry plus the uniform
 * `POST /api/tools/{name}`. Translates HTTP ⇄ one call of the call path; knows no tool by name.
 */
export function mountToolRoutes(
  app: Hono,
  deps: { registry: Registry; calls: CallPath; tasks?: TaskManager | undefined; services: Services; kit: RouteKit; direct: DirectRoutes },
): void {
  const { registry, calls, services, kit, tasks, direct } = deps;
  const { config } = services;

  // One await per call where it can be (the body): the caller and a call of an inline tool are
  // answered synchronously, and every promise hop costs measurably on a small call (issue 21).
  // `c`: the hono context when the router served the request (path parameters, tasks); absent on
  // the direct route (./direct.ts: an exact static path without a query string).
  const run = async (req: Request, env: unknown, tool: AnyTool, binding: RestBinding | null, mergeRequest: boolean, c?: Context): Promise<Response> => {
    try {
      const header = headersOf(req, env);
      const limit = binding?.bodyLimit === 'large' ? config.largeBodyLimit : config.bodyLimit;
      // Cheap checks first: the key and a spent budget are known from the headers, before the
      // body is read (unless the tool takes its key from the body too).
      let who: Caller | undefined;
      if (tool.apiKeyField === undefined) {
        // A tool call: admitted before any of it runs, so its key may come from the key cache (issue 37).
        const w = kit.callerOf(req, env, undefined, 'rest', true);
        who = w instanceof Promise ? await w : w;
      }
      // PATCH carries a JSON body as POST does.
      const post = req.method === 'POST' || req.method === 'PATCH';
      if (who && post) calls.refuseEarly(who, tool);
      const body = post ? await readJsonBody(req, limit, header) : {};
      if (!isPlainObject(body)) throw new ToolError('INVALID_INPUT', 'The request body must be a JSON object');
      // Most calls have no query string: parsing one costs measurably on the hot path.
      const url = req.url;
      const query = url.includes('?') ? coerceQuery(tool, getQueryParam(url) as Record<string, string>) : undefined;
      const params = c && binding?.path.includes('{') ? c.req.param() : undefined;
      const input: Record<string, unknown> = mergeRequest && (query || params) ? { ...body, ...query, ...params } : body;
      if (!who) {
        const bodyKey = body[tool.apiKeyField!];
        who = await kit.callerOf(req, env, typeof bodyKey === 'string' ? bodyKey : undefined, 'rest', true);
      }
      // Tasks (docs/tasks.md): a slow tool's call with `Prefer: respond-async` may answer 202 + Location.
      if (c && tool.longRunning && tasks && prefersAsync(header('prefer') ?? undefined)) return await respondAsync(c, kit, tasks, who, tool, binding?.status ?? 200, input);
      const called = calls.invoke(who, tool, input, { signal: () => req.signal });
      const out = called instanceof Promise ? await called : called;
      if (!out.ok) return setAll(kit.errorFor(req, out.error), out.headers);
      const r = out.value;
      const status = (r.status !== undefined && r.status === binding?.altStatus?.status ? r.status : undefined) ?? binding?.status ?? 200;
      if (r.body) {
        const res = new Response(r.body.data as Uint8Array<ArrayBuffer>, { status, headers: { 'content-type': r.body.contentType, ...r.body.headers } });
        return setAll(res, out.headers);
      }
      // The limit headers go in with the body (setting them afterwards builds a web Headers object).
      const text = JSON.stringify({ success: true, ...r.json });
      return new Response(text, { status, headers: out.headers ? joinHeaders(JSON_TYPE, out.headers) : JSON_TYPE });
    } catch (err) {
      return kit.errorFor(req, err);
    }
  };

  if (tasks) mountTaskRoutes(app, { kit, tasks, registry });

  // Specific paths before parameterised ones (e.g. /api/cron-task/logs before /api/cron-task/{id}/…).
  const bindings = registry.tools.flatMap((t) => restBindings(t).map((b) => ({ t, b })));
  bindings.sort((x, y) => (x.b.path.includes('{') ? 1 : 0) - (y.b.path.includes('{') ? 1 : 0));
  for (const { t, b } of bindings) {
    app.on(b.method, honoPath(b.path), (c) => run(c.req.raw, c.env, t, b, true, c));
    // A task-capable call needs the context (respond-async): the router serves those.
    if (!b.path.includes('{') && !(t.longRunning && tasks)) direct.add(b.method, b.path, (req, env) => run(req, env, t, b, true));
  }

  // The uniform face: body = the tool's input, nothing merged from the path or query.
  app.post('/api/tools/:name', async (c) => {
    const tool = registry.get(c.req.param('name'));
    if (!tool) return kit.errorResponse(c, new ToolError('NOT_FOUND', `Unknown tool: ${c.req.param('name')}`));
    return run(c.req.raw, c.env, tool, restBindings(tool)[0] ?? null, false, c);
  });
}
