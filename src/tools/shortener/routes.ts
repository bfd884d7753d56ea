import { defineRoute, type AnyRoute, type OpenApiHelpers } from '../../core/route.js';
import { ToolError } from '../../errors.js';
import type { Services } from '../../services.js';
import { CODE_PATTERN } from './links.js';
import { linkTraffic, resolveShortLink, type LinkTraffic } from './traffic.js';

/** A 302 to `url`, Location written as hono's c.redirect does (beyond Latin-1: percent-encoded). */
function redirectTo(url: string): Response {
  return new Response(null, { status: 302, headers: { Location: /[^\x00-\xFF]/.test(url) ? encodeURI(url) : url } });
}

/** The redirect of a code served before (one click counted for a GET), or undefined. */
function cachedRedirect(traffic: LinkTraffic, code: string, countClick: boolean): Response | undefined {
  const url = traffic.url(code);
  if (url === undefined) return undefined;
  if (countClick) traffic.click(code);
  return redirectTo(url);
}

/**
 * `GET /s/{code}`: 302 to the long URL with one click counted; not a tool, not rate limited.
 * `HEAD` (link-preview bots) answers the same without counting a click. The code is not
 * validated as input (an unknown or malformed code is the same 404): no parse per redirect.
 */
const redirect = defineRoute({
  method: 'GET',
  path: '/s/{code}',
  handler: ({ params }, { services, method }) => {
    const code = params['code'] ?? '';
    const countClick = method === 'GET';
    // A code served before answers at once, without a store read or a promise (issue 21).
    const cached = cachedRedirect(linkTraffic(services), code, countClick);
    if (cached) return cached;
    return resolveShortLink(services, code, { countClick }).then((url) => {
      if (url === null) throw new ToolError('NOT_FOUND', 'Unknown short link');
      return redirectTo(url);
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
export function shortLinkPreroute(services: Services): (method: string, rawPath: string) => Response | undefined {
  const traffic = linkTraffic(services);
  return (method, rawPath) => {
    if (method !== 'GET' || !rawPath.startsWith('/s/')) return undefined;
    const code = rawPath.slice(3);
    return CODE_PATTERN.test(code) ? cachedRedirect(traffic, code, true) : undefined;
  };
}

/** The OpenAPI operations of the redirect (GET counts a click, HEAD does not). */
function redirectOpenApi(h: OpenApiHelpers): Record<string, Record<string, unknown>> {
  const parameters = [
    { name: 'code', in: 'path', required: true, schema: { type: 'string', pattern: CODE_PATTERN.source }, description: 'The short code', example: 'docs-demo' },
  ];
  const responses = {
    302: { description: 'Redirect to the long URL', headers: { Location: { description: 'The long URL', schema: { type: 'string', format: 'uri' } } } },
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
