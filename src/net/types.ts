/** The guarded fetcher's public types; `./fetch.js` re-exports them. docs/fetching.md has the API. */
import type { Config } from '../config.js';
import type { FetchBudgetLimits } from './budget.js';
import type { Overflow } from './body.js';
import type { Resolver } from './connector.js';

export type FetchMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface FetchOptions {
  method?: FetchMethod;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** The Accept request header (default `*\/*`). */
  accept?: string;
  /** Media types a 2xx answer may have (exact, or a prefix ending in '/'); otherwise 502. */
  contentTypes?: string[];
  /** Redirects to follow (default 5, at most 5); 0 returns the 3xx itself. */
  maxRedirects?: number;
  /** Overall deadline in ms, body included (default and cap: FETCH_TIMEOUT_MS). */
  timeoutMs?: number;
  /** Largest decoded body in bytes (default and cap: FETCH_MAX_BYTES); also what the fetch reserves of the byte budget. */
  maxBytes?: number;
  /**
   * A body past `maxBytes`: 'error' (default) fails with 502; 'truncate' keeps the first
   * `maxBytes` bytes and closes the connection without reading the rest (webhook answers).
   */
  overflow?: Overflow;
  signal?: AbortSignal;
}

export interface FetchResult {
  /** The final URL, after redirects. */
  url: string;
  status: number;
  /** Response headers of the final answer, names lower-case, repeated values joined by ', '. */
  headers: Record<string, string>;
  /** The decoded body (empty for HEAD, 204, 304). */
  body: Buffer;
  /** Media type without parameters, lower-case; '' when the server sent none. */
  contentType: string;
  /** The charset parameter of Content-Type, lower-case, or null. */
  charset: string | null;
  /** Number of redirects followed. */
  redirects: number;
}

export interface Fetcher {
  readonly config: Pick<Config, 'fetchAllowPrivate' | 'fetchTimeoutMs' | 'fetchMaxBytes'>;
  /** Fetches a URL under the policy above. Throws ToolError only. */
  fetch(url: string | URL, opts?: FetchOptions): Promise<FetchResult>;
  /**
   * Checks a URL without fetching it (scheme, credentials, port, `localhost`, literal IP
   * address): for URLs stored now and fetched later, e.g. webhook callbacks. Other host names
   * are checked at fetch time. Returns the parsed URL; throws ToolError (INVALID_INPUT /
   * URL_NOT_ALLOWED).
   */
  checkUrl(url: string | URL): URL;
  /** Closes pooled connections. */
  close(): Promise<void>;
}

export interface FetcherOptions {
  /** Overrides `config.fetchAllowPrivate` (tests build a blocking fetcher with `false`). */
  allowPrivate?: boolean;
  /** DNS resolution (default: the system resolver, every address). */
  resolver?: Resolver;
  /** Addresses allowed even though they are not public (tests: one loopback fixture). */
  allowAddresses?: string[];
  /** Connect timeout in ms (default min(10 s, FETCH_TIMEOUT_MS)). */
  connectTimeoutMs?: number;
  /** User-Agent request header. */
  userAgent?: string;
  /** Bounds on concurrent fetches and bytes in flight (defaults: DEFAULT_FETCH_BUDGET). */
  budget?: Partial<FetchBudgetLimits>;
}
