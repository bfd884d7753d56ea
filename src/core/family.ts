import type { Context, Hono } from 'hono';
import type { Caller, ToolGroup } from '../registry.js';
import type { Services } from '../services.js';
import type { CollectionDef } from '../state/index.js';

/** What a family's HTTP routes may reuse from the HTTP face. */
export interface RouteKit {
  /** The contract's error response for anything thrown (ToolError → its status; else 500, logged). */
  errorResponse(c: Context, err: unknown): Response;
  /** Who is calling (API key → key id; 401 for a bad key). Cached per request. */
  caller(c: Context, bodyKey?: string, transport?: Caller['transport']): Caller | Promise<Caller>;
  /** `caller` for a request served without hono (`env`: @hono/node-server's, or undefined). Not cached. */
  callerOf(req: Request, env: unknown, bodyKey?: string, transport?: Caller['transport']): Caller | Promise<Caller>;
  /** `errorResponse` for a request served without hono. */
  errorFor(req: Request, err: unknown): Response;
  /** The JSON body, refusing more than `limit` bytes (default: the body limit) and non-JSON types. */
  readJson(c: Context, limit?: number): Promise<unknown>;
}

/** Something a family runs in the background of a serving process (e.g. the cron scheduler). */
export interface BackgroundService {
  stop(): Promise<void> | void;
}

/** A documented non-tool HTTP operation: OpenAPI paths → method → operation object. */
export type OpenApiPaths = Record<string, Record<string, unknown>>;

/**
 * A feature module: its tools (with the OpenAPI tag they share), plus whatever else it brings.
 * `app.ts`, `main.ts`, `openapi/` and the MCP module loop over the families and name none.
 */
export interface Family extends ToolGroup {
  /** One line for MCP's `instructions`: when an agent should reach for this family's tools. */
  instructions: string;
  /** Non-tool HTTP routes (e.g. `GET /s/{code}`), mounted before the tool routes. */
  routes?(app: Hono, kit: RouteKit, services: Services): void;
  /**
   * A hot path answered before the router, or declined (undefined) to go through it as usual:
   * for a request so frequent and so simple that the router and its context cost more than the
   * answer (the short-link redirect of a code served before: 1.36 → 1.11 × a bare hono GET's
   * CPU per request, `BENCH_ONLY=mcp npm run bench`). Not used with LOG_LEVEL=debug. It sees
   * every request the browser guard passed, over a real socket (`rawPath` is the request
   * line's path and query, undecoded), must decline anything unusual, and must answer exactly
   * what its route would.
   */
  preroute?(services: Services): (method: string, rawPath: string) => Response | undefined;
  /** OpenAPI operations of those routes (`errorResponses` builds their error part). */
  openapi?(helpers: { errorResponses(codes: import('../errors.js').ErrorCode[]): Record<string, unknown> }): OpenApiPaths;
  /** Collections the family keeps; the store loads them all before the server reports ready. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any record type
  collections?: ReadonlyArray<CollectionDef<any>>;
  /** Started by `serve` (not by stdio launches or tests), stopped on shutdown. */
  background?(services: Services): BackgroundService;
}

/** Declares a family. Identity function that keeps the types. */
export function defineFamily(f: Family): Family {
  return f;
}
