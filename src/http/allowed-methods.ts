import type { Hono } from 'hono';
import { METHOD_NAME_ALL } from 'hono/router';
import { TrieRouter } from 'hono/router/trie-router';

/** The order an `Allow` header lists methods in. */
const ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/**
 * The methods an app serves on a path, for the `Allow` header of a 405 (RFC 9110 §15.5.6):
 * hono answers a wrong method on a known path with its not-found handler, like an unknown path.
 * Read from the app's own route table, matched by hono's own router, on first use (every route
 * is mounted by then). HEAD is implied by GET, as hono answers it. Routes of every method
 * (middleware, `app.all`) are left out: a path they serve never reaches the not-found handler.
 * Empty: the path is not served at all (404).
 */
export function allowedMethods(app: Hono): (path: string) => readonly string[] {
  let router: TrieRouter<string> | undefined;
  return (path) => {
    if (!router) {
      router = new TrieRouter<string>();
      for (const r of app.routes) if (r.method !== METHOD_NAME_ALL) router.add(METHOD_NAME_ALL, r.path, r.method);
    }
    const methods = new Set(router.match(METHOD_NAME_ALL, path)[0].map(([method]) => method));
    if (methods.has('GET')) methods.add('HEAD');
    return ORDER.filter((m) => methods.has(m)).concat([...methods].filter((m) => !ORDER.includes(m)));
  };
}
