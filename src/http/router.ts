import type { Result, Router } from 'hono/router';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import { SmartRouter } from 'hono/router/smart-router';
import { TrieRouter } from 'hono/router/trie-router';

/**
 * hono's default router (the RegExpRouter, or the TrieRouter when the routes are too ambiguous
 * for it, as ours are: `/api/cron-task/logs` beside `/api/cron-task/{id}/logs`), with the match
 * of each static path (no parameter, no wildcard) remembered: the tool routes are static, and a
 * trie search per call cost ≈ 1 µs (issue 21). A match depends only on the method and the path,
 * and hono only reads a match result, so a remembered one answers exactly what the search
 * would. Bounded: only paths a route names are remembered, per method (node's parser admits a
 * fixed list of methods).
 */
export class StaticFirstRouter<T> implements Router<T> {
  name = 'StaticFirstRouter';
  readonly #inner: Router<T> = new SmartRouter<T>({ routers: [new RegExpRouter<T>(), new TrieRouter<T>()] });
  readonly #staticPaths = new Set<string>();
  readonly #matches = new Map<string, Map<string, Result<T>>>();

  add(method: string, path: string, handler: T): void {
    this.#inner.add(method, path, handler);
    if (!/[:*{]/.test(path)) this.#staticPaths.add(path);
    this.#matches.clear();
  }

  match(method: string, path: string): Result<T> {
    const byPath = this.#matches.get(method);
    const known = byPath?.get(path);
    if (known) return known;
    const r = this.#inner.match(method, path);
    if (this.#staticPaths.has(path)) {
      if (byPath) byPath.set(path, r);
      else this.#matches.set(method, new Map([[path, r]]));
    }
    return r;
  }
}
