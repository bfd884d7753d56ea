import { randomBytes } from 'node:crypto';
import { ServerResponse, type OutgoingHttpHeaders } from 'node:http';
import { redact, requestContext, type Logger, type RequestLogContext } from '../log.js';

type Fetch = (req: Request, env?: unknown, executionCtx?: never) => Response | Promise<Response>;

/** The request line's path and query: node's own when @hono/node-server serves it, else from the URL. */
function pathOf(req: Request, env: unknown): string {
  return (env as { incoming?: { url?: string } } | undefined)?.incoming?.url ?? req.url.replace(/^https?:\/\/[^/]+/, '');
}

/**
 * The debug request log (LOG_LEVEL=debug): one line per request — method, path and query with
 * keys redacted, status, time to the response head — around the very fetch every level serves,
 * so the direct routes, the family preroutes and the browser guard's refusals are logged as
 * they run. `createApp` wraps with it only at debug: at other levels there is no wrapper at all.
 */
export function withRequestLog<F extends Fetch>(inner: F, log: Logger): F {
  const logged: Fetch = async (req, env, executionCtx) => {
    const started = performance.now();
    const res = await inner(req, env, executionCtx);
    log.debug(`${req.method} ${redact(pathOf(req, env))} ${res.status} ${(performance.now() - started).toFixed(1)}ms`);
    return res;
  };
  return logged as F;
}

/**
 * The request id of a request in flight, kept on the request itself for the error bodies and MCP
 * error data that name it (`requestIdOf`). A symbol property, not a WeakMap: measured, a WeakMap
 * set cost ≈ 0.6 µs per request (its entries weigh on every GC), the property ≈ 20 ns.
 */
const REQUEST_ID = Symbol('requestId');
type WithId = Request & { [REQUEST_ID]?: string };

/** Remembers `id` as the request id of `req`. */
function remember(req: Request, id: string): void {
  (req as WithId)[REQUEST_ID] = id;
}

/** The id of a request of this app (undefined for one that came in some other way: stdio, tests calling a handler directly). */
export function requestIdOf(req: Request): string | undefined {
  return (req as WithId)[REQUEST_ID];
}

/** An X-Request-Id worth honouring: short, printable, nothing a log or header could trip on. */
const GOOD_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/**
 * Ids are a per-process random prefix and a counter in base 36 (`k3Jf9Qx2-1a7`): unique across
 * instances and restarts without a crypto call per request (randomUUID cost more than the rest
 * of the id handling). An id names a request in logs; it is no secret and grants nothing.
 */
const PREFIX = randomBytes(6).toString('base64url').replace(/[-_]/g, '0');
let issued = 0;

/** A new request id. */
export function nextRequestId(): string {
  return `${PREFIX}-${(++issued).toString(36)}`;
}

/** @hono/node-server's env: node's request (socket, headers) and response. */
interface NodeEnv {
  incoming?: { socket?: { remoteAddress?: string }; headers?: Record<string, unknown> };
  outgoing?: object;
}

/** The X-Request-Id a node response is to carry, added by its writeHead (see idOnWriteHead). */
const ANSWER_ID = Symbol('answerId');
type Answer = ServerResponse & { [ANSWER_ID]?: string | undefined };

/** `headers` (any form writeHead takes) with X-Request-Id first, unless they carry one. */
function withIdHeader(headers: unknown, id: string): unknown {
  if (headers == null) return { 'x-request-id': id };
  if (Array.isArray(headers)) {
    if (Array.isArray(headers[0])) return (headers as [string, unknown][]).some(([k]) => k.toLowerCase() === 'x-request-id') ? headers : [['x-request-id', id], ...(headers as unknown[])];
    for (let i = 0; i < headers.length; i += 2) if (String(headers[i]).toLowerCase() === 'x-request-id') return headers;
    return ['x-request-id', id, ...(headers as unknown[])];
  }
  const out: OutgoingHttpHeaders = { 'x-request-id': id };
  for (const k in headers as OutgoingHttpHeaders) {
    if (k.length === 12 && k.toLowerCase() === 'x-request-id') return headers;
    out[k] = (headers as OutgoingHttpHeaders)[k];
  }
  return out;
}

let idOnWriteHeadInstalled = false;

/**
 * X-Request-Id goes in with the response head, not through an earlier `setHeader`: once a header
 * is set that way, node's writeHead takes its slow path and sets each of the answer's headers
 * one by one (validated, lower-cased, stored) before writing them — a limited REST answer's
 * head and id cost 3.6 µs that way, 2.2 µs this way with the wrapper (medians of 8 interleaved
 * rounds of 300,000, issue 37). So a request marks its
 * response (a symbol property) and node's writeHead — wrapped once here — adds the id to the
 * headers it is given; a response ended without writeHead goes through it too (node's implicit
 * head calls it). Responses nobody marked are untouched.
 */
function idOnWriteHead(): void {
  if (idOnWriteHeadInstalled) return;
  idOnWriteHeadInstalled = true;
  const writeHead = ServerResponse.prototype.writeHead as (this: ServerResponse, code: number, a?: unknown, b?: unknown) => ServerResponse;
  ServerResponse.prototype.writeHead = function (this: Answer, code: number, a?: unknown, b?: unknown): ServerResponse {
    const id = this[ANSWER_ID];
    if (id === undefined) return writeHead.call(this, code, a, b);
    this[ANSWER_ID] = undefined;
    return typeof a === 'string' ? writeHead.call(this, code, a, withIdHeader(b, id)) : writeHead.call(this, code, withIdHeader(a, id));
  } as typeof ServerResponse.prototype.writeHead;
}

/** Marks node's response (when @hono/node-server serves the request) to carry `id`; false when there is none. */
function markAnswer(env: unknown, id: string): boolean {
  const outgoing = (env as NodeEnv | undefined)?.outgoing;
  if (!(outgoing instanceof ServerResponse)) return false;
  idOnWriteHead();
  (outgoing as Answer)[ANSWER_ID] = id;
  return true;
}

/** The id of a request: its X-Request-Id when a trusted proxy sent a well-formed one, else a new one. */
function idOf(env: NodeEnv | undefined, trusted: (peer: string) => boolean): string {
  const incoming = env?.incoming;
  const offered = incoming?.headers?.['x-request-id'];
  if (typeof offered !== 'string') return nextRequestId();
  const peer = incoming?.socket?.remoteAddress;
  return peer !== undefined && trusted(peer) && GOOD_ID.test(offered) ? offered : nextRequestId();
}

/**
 * Request ids when request tracking is off (the default): every response carries `X-Request-Id`
 * — the direct routes and preroutes too — and every error body names it (`requestIdOf`); the
 * logs stay as they are. Added to node's own response head when @hono/node-server serves it
 * (markAnswer), so the fast light Response stays as is.
 */
export function withRequestIds<F extends Fetch>(inner: F, trusted: (peer: string) => boolean): F {
  const idded: Fetch = (req, env, executionCtx) => {
    const id = idOf(env as NodeEnv | undefined, trusted);
    remember(req, id);
    if (markAnswer(env, id)) return inner(req, env, executionCtx);
    const res = inner(req, env, executionCtx);
    return res instanceof Promise ? res.then((r) => withHeader(r, 'x-request-id', id)) : withHeader(res, 'x-request-id', id);
  };
  return idded as F;
}

export interface TrackingOptions {
  log: Logger;
  /** Whether a peer address is a trusted proxy (TRUSTED_PROXIES): only its X-Request-Id is believed. */
  trusted: (peer: string) => boolean;
  /** LOG_REQUESTS=on: one access line per request at info. */
  access: boolean;
  /** The route template of a request (never its raw path). */
  route: (method: string, rawPath: string) => string;
}

/**
 * Request ids (LOG_FORMAT=json or LOG_REQUESTS=on): every request gets one — the X-Request-Id
 * of a trusted proxy, else a new one (nextRequestId) — echoed in `X-Request-Id`, found by the error bodies
 * (`requestIdOf`, as without tracking), and carried by every log line written while it runs (`requestContext`). With
 * `access`, one line per request at info: method, route template, status, duration, request
 * id, tool and key id prefix (never the path's query, a key or a token).
 */
export function withRequestTracking<F extends Fetch>(inner: F, opts: TrackingOptions): F {
  const { log, trusted, access, route } = opts;
  const tracked: Fetch = (req, env, executionCtx) => {
    const started = performance.now();
    const id = idOf(env as NodeEnv | undefined, trusted);
    remember(req, id);
    const ctx: RequestLogContext = { request_id: id };
    // Added by node's writeHead when @hono/node-server serves it (markAnswer): the light Response
    // node-server answers fast stays untouched (reading its headers builds a Headers).
    const marked = markAnswer(env, id);
    const done = (res: Response): Response => {
      const out = marked ? res : withHeader(res, 'x-request-id', id);
      if (access) {
        const line: Record<string, unknown> = { request_id: id, method: req.method, route: route(req.method, pathOf(req, env)), status: out.status, duration_ms: +(performance.now() - started).toFixed(2) };
        requestContext.run(ctx, () => log.info(`${req.method} ${line.route as string} ${out.status}`, line));
      }
      return out;
    };
    const res = requestContext.run(ctx, () => inner(req, env, executionCtx));
    return res instanceof Promise ? res.then(done) : done(res);
  };
  return tracked as F;
}

/** `res` with one more header; a response whose headers are immutable (a redirect) is copied first. */
function withHeader(res: Response, name: string, value: string): Response {
  try {
    res.headers.set(name, value);
    return res;
  } catch {
    const copy = new Response(res.body, res);
    copy.headers.set(name, value);
    return copy;
  }
}
