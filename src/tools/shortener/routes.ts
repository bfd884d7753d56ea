import { defineRoute, type AnyRoute, type OpenApiHelpers } from '../../core/route.js';
import { ToolError } from '../../errors.js';
import type { Services } from '../../services.js';
import { CODE_PATTERN } from './links.js';
import { visitAnalytics, type Analytics } from './analytics.js';
import { linkTraffic, visitShortLink, type LinkTraffic } from './traffic.js';

/**
 * A 302 to `url`, Location written as hono's c.redirect does (beyond Latin-1: percent-encoded).
 * With `Content-Length: 0`: without it Node sends the empty body chunked (a
 * `Transfer-Encoding: chunked` header and a `0\r\n\r\n` terminator on every redirect).
 */
function redirectTo(url: string): Response {
  return new Response(null, { status: 302, headers: { Location: /[^\x00-\xFF]/.test(url) ? encodeURI(url) : url, 'Content-Length': '0' } });
}

/** The page of a link that expired or was used up and has no expiredUrl. */
const GONE_PAGE =
  '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Link expired</title></head>' +
  '<body><h1>This short link has expired</h1><p>It is past its expiry date or its visit limit.</p></body></html>';

function gone(): Response {
  return new Response(GONE_PAGE, { status: 410, headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' } });
}

/** A request's headers as Node gives them (lower-case names). */
type NodeHeaders = Readonly<Record<string, string | string[] | undefined>>;

function one(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The redirect of a code served before, or undefined. A GET is a visit for the analytics,
 * and one click unless a crawler or link preview made it.
 */
function cachedRedirect(traffic: LinkTraffic, code: string, visit: VisitOf | null): Response | undefined {
  const url = traffic.url(code);
  if (url === undefined) return undefined;
  return served(code, url, visit);
}

/** A GET's visit: the analytics and the request headers they read. */
type VisitOf = { analytics: Analytics; userAgent: string | undefined; referer: string | undefined };

/** The redirect of a link without rules, the visit counted. */
function served(code: string, url: string, visit: VisitOf | null): Response {
  if (visit) visit.analytics.record(code, visit);
  return redirectTo(url);
}

/**
 * `GET /s/{code}`: 302 to the long URL with one click counted; not a tool, not rate limited.
 * An expired or used-up link: 302 to its expiredUrl, or 410 with a small HTML page.
 * `HEAD` (link-preview bots) answers the same without counting a click. The code is not
 * validated as input (an unknown or malformed code is the same 404): no parse per redirect.
 */
const redirect = defineRoute({
  method: 'GET',
  path: '/s/{code}',
  handler: ({ params }, ctx) => {
    const { services, method } = ctx;
    const code = params['code'] ?? '';
    const countClick = method === 'GET';
    const headers = { userAgent: ctx.header('user-agent'), referer: ctx.header('referer') };
    // A code served before answers at once, without a store read or a promise (issue 21).
    const cached = cachedRedirect(linkTraffic(services), code, countClick ? { analytics: visitAnalytics(services), ...headers } : null);
    if (cached) return cached;
    return visitShortLink(services, code, countClick, headers).then((visit) => {
      if (visit === null) throw new ToolError('NOT_FOUND', 'Unknown short link');
      if ('go' in visit) return redirectTo(visit.go);
      return visit.gone === null ? gone() : redirectTo(visit.gone);
    });
  },
  openapi: redirectOpenApi,
});

/** The shortener's own routes. */
export const shortLinkRoutes: readonly AnyRoute[] = [redirect];

/**
 * The redirect of a code served before, answered ahead of the router (Family.preroute): what
 * the route answers for it — 302 with Location, one click counted — without the router and
 * its context. Anything else (HEAD, a query, an escape, a code not cached) goes the usual way.
 */
export function shortLinkPreroute(services: Services): (method: string, rawPath: string, headers?: NodeHeaders) => Response | undefined {
  const traffic = linkTraffic(services);
  const analytics = visitAnalytics(services);
  return (method, rawPath, headers) => {
    if (method !== 'GET' || !rawPath.startsWith('/s/')) return undefined;
    const code = rawPath.slice(3);
    if (!CODE_PATTERN.test(code)) return undefined;
    return cachedRedirect(traffic, code, { analytics, userAgent: one(headers?.['user-agent']), referer: one(headers?.['referer']) });
  };
}

/**
 * The shortener's preroute (Family.preroute): shortLinkPreroute, and for a GET of a code not
 * cached, the store read there too, so that a cold visit (most of them when visitors spread over
 * a million links) skips the router as a cached one does. Only a link that redirects as it is
 * (no expiry passed, no visit limit) is answered here; an unknown code, a link with rules or a
 * failed read is declined (the promise gives undefined) and the route answers as before — for an
 * unknown code from the unknown-code memory (LinkTraffic.load), without a second store read.
 */
export function shortLinkFastPath(services: Services): (method: string, rawPath: string, headers?: NodeHeaders) => Response | Promise<Response | undefined> | undefined {
  const traffic = linkTraffic(services);
  const analytics = visitAnalytics(services);
  const hit = shortLinkPreroute(services);
  return (method, rawPath, headers) => {
    const res = hit(method, rawPath, headers);
    if (res || method !== 'GET' || !rawPath.startsWith('/s/')) return res;
    const code = rawPath.slice(3);
    if (!CODE_PATTERN.test(code)) return undefined;
    const visit = { analytics, userAgent: one(headers?.['user-agent']), referer: one(headers?.['referer']) };
    return traffic.load(code).then(
      (link) => (link && traffic.redirectsAsIs(link) ? served(code, link.url, visit) : undefined),
      () => undefined,
    );
  };
}

/** The OpenAPI operations of the redirect (GET counts a click, HEAD does not). */
function redirectOpenApi(h: OpenApiHelpers): Record<string, Record<string, unknown>> {
  const parameters = [
    { name: 'code', in: 'path', required: true, schema: { type: 'string', pattern: CODE_PATTERN.source }, description: 'The short code', example: 'docs-demo' },
  ];
  const responses = {
    302: { description: 'Redirect to the long URL (or, once expired or used up, to its expiredUrl)', headers: { Location: { description: 'The long URL', schema: { type: 'string', format: 'uri' } } } },
    410: { description: 'The link expired or used up its visits, and has no expiredUrl', content: { 'text/html': { schema: { type: 'string' } } } },
    ...h.errorResponses(['FORBIDDEN', 'NOT_FOUND']),
  };
  return {
    get: {
      operationId: 'short_link_redirect',
      summary: 'Follow a short link',
      description: 'Redirects (302) to the long URL of the code and counts one click. Not a tool; not rate limited.',
      tags: [h.tag],
      parameters,
      responses,
    },
    head: {
      operationId: 'short_link_redirect_head',
      summary: 'Check a short link',
      description: 'The same redirect (302 with `Location`) without a body, and no click counted (link-preview bots use HEAD). Not rate limited.',
      tags: [h.tag],
      parameters,
      responses,
    },
  };
}
