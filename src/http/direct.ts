/** A route served without the router: the web request and @hono/node-server's env (`incoming`). */
export type DirectHandler = (req: Request, env: unknown) => Response | Promise<Response>;

/**
 * Routes answered ahead of hono for an exact request path (no query string, nothing to decode):
 * the tool calls (`POST /api/<tool>`, `POST /mcp`), whose router match, hono Context and
 * response building cost more than the rest of a small call's plumbing (issue 21). Each is also
 * mounted on the hono app, which answers every other form of the request (a query string, an
 * encoded path, `app.request()` in tests) through the same handler, so both answer alike.
 */
export class DirectRoutes {
  readonly #byMethod = new Map<string, Map<string, DirectHandler>>();

  add(method: string, path: string, handler: DirectHandler): void {
    let paths = this.#byMethod.get(method);
    if (!paths) this.#byMethod.set(method, (paths = new Map()));
    paths.set(path, handler);
  }

  /** The handler of a request line's method and raw path (undecoded, with its query), if any. */
  get(method: string, rawPath: string): DirectHandler | undefined {
    return this.#byMethod.get(method)?.get(rawPath);
  }
}
