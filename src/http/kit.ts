import type { Context } from 'hono';
import type { Caller } from '../core/caller.js';

/** What the HTTP face's route modules share (tool routes, /mcp, tasks, docs, family routes). */
export interface RouteKit {
  /** The contract's error response for anything thrown (ToolError → its status; else 500, logged). */
  errorResponse(c: Context, err: unknown): Response;
  /** Who is calling (API key → key id; 401 for a bad key). Cached per request. */
  caller(c: Context, bodyKey?: string, transport?: Caller['transport']): Caller | Promise<Caller>;
  /**
   * `caller` for a request served without hono (`env`: @hono/node-server's, or undefined). Not cached.
   * `admitted`: a tool call whose limits are checked before any of it runs (Credentials.admitted).
   */
  callerOf(req: Request, env: unknown, bodyKey?: string, transport?: Caller['transport'], admitted?: boolean | 'if-cached'): Caller | Promise<Caller>;
  /** `errorResponse` for a request served without hono. */
  errorFor(req: Request, err: unknown): Response;
  /** The JSON body, refusing more than `limit` bytes (default: the body limit) and non-JSON types. */
  readJson(c: Context, limit?: number): Promise<unknown>;
}
