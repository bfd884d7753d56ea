import { redact, type Logger } from '../log.js';

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
