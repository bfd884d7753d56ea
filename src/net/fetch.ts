/**
 * The guarded fetcher: the ONE module through which the service fetches a URL (image_convert,
 * meta_extract / seo_check, signed webhooks). docs/fetching.md is the reference.
 *
 * ```ts
 * const res = await services.fetcher.fetch(url, {
 *   method: 'GET',            // GET | HEAD | POST | PUT | PATCH | DELETE (default GET)
 *   headers: { … },           // extra request headers (host, accept-encoding, content-length,
 *                             // connection and transfer-encoding are ours and are dropped)
 *   body: '…',                // string | Uint8Array, for POST and friends
 *   accept: 'text/html',      // the Accept header (default * / *)
 *   contentTypes: ['text/html', 'application/xhtml+xml'],
 *                             // a 2xx answer with another media type → 502 (checked before the
 *                             // body is read); prefixes like 'image/' are allowed
 *   maxRedirects: 5,          // 0 = do not follow: a 3xx comes back as the result (webhooks)
 *   timeoutMs: 10_000,        // overall deadline, body included; capped at FETCH_TIMEOUT_MS
 *   maxBytes: 1 << 20,        // decoded-body cap; capped at FETCH_MAX_BYTES
 *   overflow: 'error',        // or 'truncate': keep maxBytes, drop the rest (webhook answers)
 *   signal,                   // the caller's AbortSignal (ctx.signal)
 * });
 * // → { url (final, after redirects), status, headers (lower-case names), body: Buffer
 * //     (decoded: gzip/deflate/br undone), contentType ('text/html', lower-case, no params;
 * //     '' when absent), charset (or null), redirects (hops followed) }
 * ```
 * Any final status is returned (a 404 page is a result; check `status` yourself). Failures are
 * ToolErrors with generic messages (nothing that turns the service into a port scanner):
 * - 400 INVALID_INPUT — the string is not a URL;
 * - 400 URL_NOT_ALLOWED — not http(s), credentials in the URL, a forbidden port, `localhost`, or
 *   an address that is not public unicast (every IPv6 form normalised first; checked for every
 *   resolved address, at connect time, on every redirect hop — DNS rebinding cannot slip through);
 * - 429 RATE_LIMITED (+ Retry-After) — the fetch budget is spent and its queue full or too slow;
 * - 502 UPSTREAM_ERROR — DNS, refused, reset, TLS, malformed HTTP, undecodable body, body over
 *   the cap, too many redirects, unexpected content type;
 * - 504 UPSTREAM_TIMEOUT — connect, headers, idle body or the overall deadline ran out.
 *
 * The pieces: ./address-policy.ts (what may be reached), ./connector.ts (the guarded Agent),
 * ./budget.ts (how many at once), ./redirects.ts (the hops), ./body.ts (reading the answer),
 * ./fetch-errors.ts (causes → ToolErrors).
 */
import type { Config } from '../config.js';
import { addressChecker, checkTargetUrl } from './address-policy.js';
import { FetchBudget } from './budget.js';
import { createGuardedAgent, systemResolver } from './connector.js';
import { classify, DeadlineError } from './fetch-errors.js';
import { exchange, MAX_REDIRECTS } from './redirects.js';
import type { Fetcher, FetcherOptions, FetchMethod, FetchOptions, FetchResult } from './types.js';

export { checkTargetUrl, isLocalhostName, isPublicAddress, type TargetPolicy } from './address-policy.js';
export { DEFAULT_FETCH_BUDGET, type FetchBudgetLimits } from './budget.js';
export { systemResolver, type ResolvedAddress, type Resolver } from './connector.js';
export { MAX_REDIRECTS } from './redirects.js';
export type { Fetcher, FetcherOptions, FetchMethod, FetchOptions, FetchResult } from './types.js';

/** Request headers the fetcher owns. */
const OWN_HEADERS = new Set(['host', 'accept-encoding', 'content-length', 'connection', 'transfer-encoding', 'keep-alive', 'upgrade', 'te']);

/** Builds the guarded fetcher for a process (or a test). */
export function createFetcher(config: Config | Fetcher['config'], options: FetcherOptions = {}): Fetcher {
  const cfg = { fetchAllowPrivate: config.fetchAllowPrivate, fetchTimeoutMs: config.fetchTimeoutMs, fetchMaxBytes: config.fetchMaxBytes };
  const allowed = addressChecker({ allowPrivate: options.allowPrivate ?? cfg.fetchAllowPrivate, allowAddresses: options.allowAddresses });
  const userAgent = options.userAgent ?? 'devtoolbox-mcp/0.1 (+https://github.com/devtoolbox-mcp)';
  const budget = new FetchBudget(options.budget);
  // Made by the first fetch (undici is imported then).
  let agent: ReturnType<typeof createGuardedAgent> | undefined;
  const guardedAgent = () =>
    (agent ??= createGuardedAgent({
      allowed,
      resolver: options.resolver ?? systemResolver,
      connectTimeoutMs: Math.min(options.connectTimeoutMs ?? 10_000, cfg.fetchTimeoutMs),
      connectionsPerOrigin: budget.limits.maxPerHost,
    }));
  const checkUrl = (raw: string | URL): URL => checkTargetUrl(raw, allowed);

  const doFetch = async (raw: string | URL, opts: FetchOptions = {}): Promise<FetchResult> => {
    const timeoutMs = Math.max(1, Math.min(opts.timeoutMs ?? cfg.fetchTimeoutMs, cfg.fetchTimeoutMs));
    const maxBytes = Math.max(0, Math.min(opts.maxBytes ?? cfg.fetchMaxBytes, cfg.fetchMaxBytes));
    const maxRedirects = Math.max(0, Math.min(opts.maxRedirects ?? MAX_REDIRECTS, MAX_REDIRECTS));
    const url = checkUrl(raw);
    const method: FetchMethod = opts.method ?? 'GET';
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(opts.headers ?? {})) {
      if (!OWN_HEADERS.has(k.toLowerCase())) headers[k.toLowerCase()] = v;
    }
    headers['user-agent'] ??= userAgent;
    headers['accept'] = opts.accept ?? headers['accept'] ?? '*/*';
    headers['accept-encoding'] = 'gzip, deflate, br';

    const deadlineAt = Date.now() + timeoutMs;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new DeadlineError('deadline')), timeoutMs);
    const onCallerAbort = () => controller.abort(opts.signal?.reason);
    if (opts.signal?.aborted) onCallerAbort();
    else opts.signal?.addEventListener('abort', onCallerAbort, { once: true });
    const signal = controller.signal;
    // A wait for budget room ends with 429 before the deadline would end it with 504.
    const waitOptions = () => ({ signal: opts.signal, waitMs: deadlineAt - Date.now() });

    let lease: Awaited<ReturnType<FetchBudget['acquire']>> | undefined;
    try {
      lease = await budget.acquire(url.hostname, maxBytes, waitOptions());
      return await exchange({
        agent: await guardedAgent(),
        url,
        method,
        headers,
        body: opts.body,
        checkUrl,
        lease,
        waitOptions,
        signal,
        deadlineAt,
        maxRedirects,
        maxBytes,
        overflow: opts.overflow ?? 'error',
        contentTypes: opts.contentTypes,
      });
    } catch (err) {
      throw classify(err, signal, opts.signal, maxBytes);
    } finally {
      lease?.release();
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onCallerAbort);
    }
  };

  return {
    config: cfg,
    fetch: doFetch,
    checkUrl,
    close: async () => {
      await (await agent)?.close();
    },
  };
}
