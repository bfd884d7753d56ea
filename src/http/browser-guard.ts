import type { Config } from '../config.js';
import { errorObject, ToolError } from '../errors.js';
import { headersOf } from './headers.js';
import { requestIdOf } from './request-log.js';

type Fetch = (req: Request, env?: unknown, executionCtx?: never) => Response | Promise<Response>;

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

function forbidden(req: Request, message: string): Response {
  const body = { success: false, error: errorObject(new ToolError('FORBIDDEN', message), requestIdOf(req)) };
  return new Response(JSON.stringify(body), { status: 403, headers: { 'content-type': 'application/json' } });
}

/**
 * Browser safety: an Origin allow-list and, on a loopback bind, DNS-rebinding protection (the
 * Host must be a loopback name). A wrapper around fetch rather than a middleware: with one
 * handler per route hono skips compose, and nearly every request (no Origin header) then costs
 * one header lookup here. `exposeHeaders`: response headers a browser script may read.
 */
export function withBrowserGuard<F extends Fetch>(inner: F, config: Config, exposeHeaders: readonly string[]): F {
  const loopbackBind = LOOPBACK_HOSTS.has(config.host) || config.host.startsWith('127.');
  const expose = exposeHeaders.join(', ');
  // The last Host accepted: clients send the same one on every request (one string comparison
  // instead of parsing it each time).
  let accepted: string | undefined;
  const guarded: Fetch = (req, env, executionCtx) => {
    const header = headersOf(req, env);
    const host = header('host');
    if (loopbackBind && host !== null && host !== accepted) {
      const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0]!;
      if (!LOOPBACK_HOSTS.has(name.toLowerCase())) return forbidden(req, 'Host not allowed');
      accepted = host;
    }
    const origin = header('origin');
    if (origin === null) return inner(req, env, executionCtx);
    // 'null' is what sandboxed frames and file: pages send: never same-origin.
    const allowed =
      config.allowedOrigins === '*' ||
      (origin !== 'null' &&
        (config.allowedOrigins.includes(origin) || origin === new URL(req.url).origin || (host !== null && (origin === `http://${host}` || origin === `https://${host}`))));
    if (!allowed) return forbidden(req, 'Origin not allowed');
    if (req.method === 'OPTIONS') {
      return new Response(null, {
        status: 204,
        headers: {
          'access-control-allow-origin': origin,
          'access-control-allow-methods': 'GET, POST, PATCH, DELETE, OPTIONS',
          'access-control-allow-headers': 'content-type, authorization, accept, mcp-protocol-version, mcp-method, mcp-name, mcp-session-id',
          'access-control-max-age': '600',
          vary: 'Origin',
        },
      });
    }
    return Promise.resolve(inner(req, env, executionCtx)).then((res) => {
      const out = new Response(res.body, res);
      out.headers.set('access-control-allow-origin', origin);
      out.headers.set('access-control-expose-headers', expose);
      out.headers.append('vary', 'Origin');
      return out;
    });
  };
  return guarded as F;
}
