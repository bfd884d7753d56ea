import type { Hono } from 'hono';
import type { RouteKit } from '../../core/family.js';
import type { ErrorCode } from '../../errors.js';
import { ToolError } from '../../errors.js';
import type { Services } from '../../services.js';
import { CODE_PATTERN } from './links.js';
import { linkTraffic, resolveShortLink, type LinkTraffic } from './traffic.js';

/**
 * `GET /s/{code}`: 302 to the long URL with one click counted; not a tool, not rate limited.
 * `HEAD` (link-preview bots) answers the same without counting a click.
 */
export function shortLinkRoutes(app: Hono, kit: RouteKit, services: Services): void {
  const traffic = linkTraffic(services);
  app.get('/s/:code', (c) => {
    const code = c.req.param('code');
    const countClick = c.req.method === 'GET';
    // A code served before answers at once, without a store read or a promise (issue 21).
    const cached = cachedRedirect(traffic, code, countClick);
    if (cached) return cached;
    return resolveShortLink(services, code, { countClick }).then(
      (url) => (url === null ? kit.errorResponse(c, new ToolError('NOT_FOUND', 'Unknown short link')) : c.redirect(url, 302)),
      (err: unknown) => kit.errorResponse(c, err),
    );
  });
}

/** The redirect of a code served before (302, Location written as hono's c.redirect does), or undefined. */
function cachedRedirect(traffic: LinkTraffic, code: string, countClick: boolean): Response | undefined {
  const url = traffic.url(code);
  if (url === undefined) return undefined;
  if (countClick) traffic.click(code);
  // A Location beyond Latin-1 is percent-encoded.
  return new Response(null, { status: 302, headers: { Location: /[^\x00-\xFF]/.test(url) ? encodeURI(url) : url } });
}

/**
 * The redirect of a code served before, answered ahead of the router (Family.preroute): what
 * the route answers for it — 302 with Location, one click counted — without the router and
 * its context. Anything else (HEAD, a query, an escape, a code not cached) goes the usual way.
 */
export function shortLinkPreroute(services: Services): (method: string, rawPath: string) => Response | undefined {
  const traffic = linkTraffic(services);
  return (method, rawPath) => {
    if (method !== 'GET' || !rawPath.startsWith('/s/')) return undefined;
    const code = rawPath.slice(3);
    return CODE_PATTERN.test(code) ? cachedRedirect(traffic, code, true) : undefined;
  };
}

/** The OpenAPI operations of the redirect (GET counts a click, HEAD does not). */
export function shortLinkOpenApi(h: { errorResponses(codes: ErrorCode[]): Record<string, unknown> }, tag: string): Record<string, Record<string, unknown>> {
  const parameters = [
    { name: 'code', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{3,20}$' }, description: 'The short code', example: 'docs-demo' },
  ];
  const responses = {
    302: { description: 'Redirect to the long URL', headers: { Location: { description: 'The long URL', schema: { type: 'string', format: 'uri' } } } },
    ...h.errorResponses(['FORBIDDEN', 'NOT_FOUND']),
  };
  return {
    '/s/{code}': {
      get: {
        operationId: 'short_link_redirect',
        summary: 'Follow a short link',
        description: 'Redirects (302) to the long URL of the code and counts one click. Not a tool; not rate limited.',
        tags: [tag],
        parameters,
        responses,
      },
      head: {
        operationId: 'short_link_redirect_head',
        summary: 'Check a short link',
        description: 'The same redirect (302 with `Location`) without a body, and no click counted (link-preview bots use HEAD). Not rate limited.',
        tags: [tag],
        parameters,
        responses,
      },
    },
  };
}
