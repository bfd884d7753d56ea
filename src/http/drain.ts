/**
 * The HTTP half of a graceful stop (issue 36): the listener closes at once, idle keep-alive
 * connections are closed, and the connections still carrying a request (an SSE stream, a slow
 * fetch, a pool job) are left to finish — each closes once its answer is sent — until the
 * deadline, when whatever is left is cut.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';

/** How often connections that became idle while draining are closed. */
const IDLE_CLOSE_MS = 100;

/**
 * Stops `server` accepting and waits for its connections to end. Resolves `true` when they all
 * ended within `timeoutMs`, `false` when some were cut at the deadline.
 */
export function drainHttp(server: Server, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    // A request that arrives on a kept-alive connection while draining is answered, and its
    // connection closes after the answer.
    const onRequest = (_req: IncomingMessage, res: ServerResponse) => {
      res.shouldKeepAlive = false;
    };
    // Connections that were answering when the drain began keep alive after that answer; node
    // tells no one, so they are looked for (a sweep, not a hook on every request's hot path).
    const sweep = setInterval(() => server.closeIdleConnections(), IDLE_CLOSE_MS);
    const deadline = setTimeout(() => {
      server.closeAllConnections();
      finish(false);
    }, timeoutMs);
    let done = false;
    const finish = (ok: boolean) => {
      if (done) return;
      done = true;
      clearInterval(sweep);
      clearTimeout(deadline);
      server.off('request', onRequest);
      resolve(ok);
    };
    server.prependListener('request', onRequest);
    server.close(() => finish(true));
    server.closeIdleConnections();
  });
}
