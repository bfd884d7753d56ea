import type { Context, Hono } from 'hono';
import type { z } from 'zod';
import type { Caller } from '../core/caller.js';
import type { Family } from '../core/family.js';
import type { AnyRoute, RouteAnswer, RouteContext } from '../core/route.js';
import { ToolError } from '../errors.js';
import { zodDetails } from '../invoke.js';
import type { Services } from '../services.js';
import { JSON_TYPE } from './headers.js';
import type { RouteKit } from './kit.js';
import { joinHeaders } from '../lib/join-headers.js';

/** `/s/{code}` (OpenAPI) → `/s/:code` (hono). */
export function honoPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

/** The families' own routes (src/core/route.ts), mounted in list order; the disabled ones are not (404). */
export function mountFamilyRoutes(app: Hono, families: readonly Family[], kit: RouteKit, services: Services): void {
  for (const f of families) {
    for (const route of f.routes ?? []) if (route.enabled?.(services) ?? true) mountRoute(app, route, kit, services);
  }
}

/** A route's view of one hono request (a class: one allocation per request, no closures). */
class HonoRouteContext implements RouteContext {
  /** Headers for whatever the answer turns out to be (route-wide ones first). */
  extra: Record<string, string> | undefined;
  constructor(
    readonly services: Services,
    readonly c: Context,
    private readonly kit: RouteKit,
    headers: Readonly<Record<string, string>> | undefined,
  ) {
    this.extra = headers && { ...headers };
  }
  get method(): string {
    return this.c.req.method;
  }
  header(name: string): string | undefined {
    return this.c.req.header(name);
  }
  caller(): Caller | Promise<Caller> {
    return this.kit.caller(this.c);
  }
  setHeader(name: string, value: string): void {
    (this.extra ??= {})[name] = value;
  }
  /** The answer with the request's headers. */
  finish(answer: RouteAnswer): Response {
    return withHeaders(toResponse(answer), this.extra);
  }
  /** The contract's error answer with the request's headers. */
  fail(err: unknown): Response {
    return withHeaders(this.kit.errorResponse(this.c, err), this.extra);
  }
}

function mountRoute(app: Hono, route: AnyRoute, kit: RouteKit, services: Services): void {
  const readsBody = route.before !== undefined || route.input?.body !== undefined;
  app.on(route.method, honoPath(route.path), (c) => {
    const ctx = new HonoRouteContext(services, c, kit, route.headers);
    try {
      // Synchronous when the route is (a cached redirect): no promise per request.
      const out = readsBody ? answerAfterBody(route, ctx, kit) : route.handler(inputOf(route, c, undefined) as never, ctx);
      return out instanceof Promise ? out.then((a) => ctx.finish(a), (err: unknown) => ctx.fail(err)) : ctx.finish(out);
    } catch (err) {
      return ctx.fail(err);
    }
  });
}

/** `before`, then the body read and checked, then the handler. */
async function answerAfterBody(route: AnyRoute, ctx: HonoRouteContext, kit: RouteKit): Promise<RouteAnswer> {
  await route.before?.(ctx);
  const body = route.input?.body ? parsed(route.input.body, await kit.readJson(ctx.c), 'the body') : undefined;
  return route.handler(inputOf(route, ctx.c, body) as never, ctx);
}

/** Path and query parameters, checked by the route's schemas when it has them, and the body. */
function inputOf(route: AnyRoute, c: Context, body: unknown): { params: unknown; query: unknown; body: unknown } {
  const params = route.input?.params ? parsed(route.input.params, c.req.param(), 'the path') : c.req.param();
  const query = route.input?.query ? parsed(route.input.query, c.req.query(), 'the query') : {};
  return { params, query, body };
}

/** A value checked by a zod schema, or 400 INVALID_INPUT naming each field (as a tool's input). */
function parsed(schema: z.ZodType, value: unknown, whole: string): unknown {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const details = zodDetails(r.error);
  const message = details.map((d) => `${d.path === '(root)' ? whole : d.path} ${d.message}`).join('; ');
  throw new ToolError('INVALID_INPUT', `Invalid input: ${message}`, details);
}

/** A JSON answer as `{"success": true, ...body}`; a Response as it is. */
function toResponse(answer: RouteAnswer): Response {
  if (answer instanceof Response) return answer;
  const headers = answer.headers ? joinHeaders(JSON_TYPE, answer.headers) : JSON_TYPE;
  return new Response(JSON.stringify({ success: true, ...answer.body }), { status: answer.status ?? 200, headers });
}

function withHeaders(res: Response, headers: Record<string, string> | undefined): Response {
  if (headers) for (const [k, v] of Object.entries(headers)) res.headers.set(k, v);
  return res;
}
