/**
 * A family's own HTTP route (not a tool: the short-link redirect, key registration, the operator's
 * routes) as data: method, path, zod schemas of its input, its OpenAPI operations and a handler.
 * The HTTP layer (src/http/family-routes.ts) mounts and validates it; OpenAPI documents it from
 * the same object. Nothing here names a transport library.
 */
import type { z } from 'zod';
import type { ErrorCode } from '../errors.js';
import type { Services } from '../services.js';
import type { Caller } from './caller.js';

/** What a route's handler (and `before`) may use beside its input. */
export interface RouteContext {
  services: Services;
  /** The request's method (`HEAD` arrives on a `GET` route). */
  method: string;
  /** A request header (case-insensitive), or undefined. */
  header(name: string): string | undefined;
  /** Who is calling (API key → key id; 401 for a bad key). Resolved once, on first use. */
  caller(): Caller | Promise<Caller>;
  /** Sets a header on this request's answer, whatever it turns out to be (success or error). */
  setHeader(name: string, value: string): void;
}

/** A JSON answer: the body is sent as `{"success": true, ...body}`. */
export interface RouteJson {
  body: Record<string, unknown>;
  /** Default 200. */
  status?: number;
  /** Headers of this answer only. */
  headers?: Record<string, string>;
}

/** A route's answer: JSON, or a web-standard Response as it is (a redirect). */
export type RouteAnswer = RouteJson | Response;

/** What a route's OpenAPI operations may reuse. */
export interface OpenApiHelpers {
  /** The contract's error responses for a list of codes. */
  errorResponses(codes: ErrorCode[]): Record<string, unknown>;
  /** The family's tag name (its tools' too). */
  tag: string;
}

/** A route's validated input: path parameters, query parameters, JSON body. */
export interface RouteInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
}

type Strings = Record<string, string>;

/** One route: `P`, `Q`, `B` are what its schemas produce for the path, the query and the body. */
export interface FamilyRoute<P = Strings, Q = Strings, B = undefined> {
  /** `GET` answers `HEAD` too (without a body). */
  method: 'GET' | 'POST' | 'DELETE';
  /** OpenAPI-style template: `/s/{code}`. */
  path: string;
  /**
   * Zod schemas of the input, checked before the handler (400 INVALID_INPUT, details per
   * field). Without one, path and query parameters arrive as strings and there is no body.
   */
  input?: { params?: z.ZodType<P>; query?: z.ZodType<Q>; body?: z.ZodType<B> };
  /** Headers on every answer of the route, errors included (e.g. `Cache-Control: no-store`). */
  headers?: Readonly<Record<string, string>>;
  /** Mounted only when this says so (the operator's routes need ADMIN_TOKEN); default: always. */
  enabled?(services: Services): boolean;
  /** Runs before the body is read: a check or limit every attempt counts against (throw a ToolError to refuse). */
  before?(ctx: RouteContext): void | Promise<void>;
  handler(input: RouteInput<P, Q, B>, ctx: RouteContext): RouteAnswer | Promise<RouteAnswer>;
  /** The path's OpenAPI operations, by lower-case method (`get`, `head`, …); none: undocumented. */
  openapi?(h: OpenApiHelpers): Record<string, Record<string, unknown>>;
}

/**
 * Any route, whatever its input types: the handler takes `never` so that every defineRoute()
 * result is assignable without a cast (the HTTP layer hands it what the route's own schemas produced).
 */
export type AnyRoute = Omit<FamilyRoute, 'handler' | 'input'> & {
  input?: { params?: z.ZodType; query?: z.ZodType; body?: z.ZodType };
  handler(input: never, ctx: RouteContext): RouteAnswer | Promise<RouteAnswer>;
};

/** Declares a route. Identity function that keeps the types. */
export function defineRoute<P = Strings, Q = Strings, B = undefined>(r: FamilyRoute<P, Q, B>): FamilyRoute<P, Q, B> {
  return r;
}
