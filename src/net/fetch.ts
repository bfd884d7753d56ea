/**
 * The guarded fetcher: the ONE module through which the service fetches a URL (image_convert,
 * meta_extract / seo_check, signed webhooks). CONTRACT §6.
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
 *   signal,                   // the caller's AbortSignal (ctx.signal)
 * });
 * // → { url (final, after redirects), status, headers (lower-case names), body: Buffer
 * //     (decoded: gzip/deflate/br undone), contentType ('text/html', lower-case, no params;
 * //     '' when absent), charset (or null), redirects (hops followed) }
 * ```
 * Any final status is returned (a 404 page is a result; check `status` yourself). Failures are
 * ToolErrors with generic messages (nothing that turns the service into a port scanner):
 * - 400 INVALID_INPUT — the string is not a URL;
 * - 400 URL_NOT_ALLOWED — not http(s), credentials in the URL, a forbidden port, or an address
 *   that is not public unicast (checked for every resolved address, at connect time, on every
 *   redirect hop — DNS rebinding cannot slip through);
 * - 502 UPSTREAM_ERROR — DNS, refused, reset, TLS, malformed HTTP, undecodable body, body over
 *   the cap, too many redirects, unexpected content type;
 * - 504 UPSTREAM_TIMEOUT — connect, headers, idle body or the overall deadline ran out.
 *
 * How: an undici 7 Agent whose connector refuses literal IPs outside policy and resolves host
 * names through a `lookup` that checks every address (ipaddr.js `range() === 'unicast'`, after
 * unwrapping IPv4-mapped IPv6). Redirects are followed here, by hand, each hop through the same
 * Agent. Node's own fetch and `http.Agent` options are not used: they bypass this connector.
 */
import dns from 'node:dns';
import net from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector, request, type Dispatcher } from 'undici';
import type { Config } from '../config.js';
import { ToolError } from '../errors.js';

/** A resolved address, as `dns.lookup(host, {all: true})` gives it. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address. Injectable so tests can stub DNS. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) => {
  const list = await dns.promises.lookup(hostname, { all: true, verbatim: true });
  return list.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

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
  /** Largest decoded body in bytes (default and cap: FETCH_MAX_BYTES). */
  maxBytes?: number;
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
   * Checks a URL without fetching it (scheme, credentials, port, literal IP address): for
   * URLs stored now and fetched later, e.g. webhook callbacks. Host names are checked at fetch
   * time. Returns the parsed URL; throws ToolError (INVALID_INPUT / URL_NOT_ALLOWED).
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
}

/** Redirect hops at most (CONTRACT §6). */
export const MAX_REDIRECTS = 5;

const REDIRECT_STATUS = new Set([301, 302, 303, 307, 308]);

/** The Fetch standard's "bad ports": services that must never be spoken to in HTTP. */
const BAD_PORTS = new Set([
  0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110, 111,
  113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554,
  556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666,
  6667, 6668, 6669, 6679, 6697, 10080,
]);

/** Request headers the fetcher owns. */
const OWN_HEADERS = new Set(['host', 'accept-encoding', 'content-length', 'connection', 'transfer-encoding', 'keep-alive', 'upgrade', 'te']);
/** Request headers dropped when a redirect leaves the origin. */
const CREDENTIAL_HEADERS = new Set(['authorization', 'cookie', 'proxy-authorization']);

const MSG_BLOCKED = 'The URL points to an address that is not allowed (private, loopback, link-local or otherwise non-public)';
const MSG_CONNECT = 'Could not connect to the URL';
const MSG_TIMEOUT = 'The URL did not answer in time';

/** Thrown inside the connector; mapped to URL_NOT_ALLOWED. */
class BlockedAddressError extends Error {
  override readonly name = 'BlockedAddressError';
  readonly code = 'DTB_BLOCKED_ADDRESS';
}
class TooLargeError extends Error {
  override readonly name = 'TooLargeError';
}
class DeadlineError extends Error {
  override readonly name = 'DeadlineError';
}

/**
 * True when `address` is a public unicast address. IPv4-mapped IPv6 (`::ffff:127.0.0.1`) is
 * judged as the IPv4 address it carries; anything unparsable is not public.
 */
export function isPublicAddress(address: string): boolean {
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.process(address.replace(/^\[|\]$/g, ''));
  } catch {
    return false;
  }
  return addr.range() === 'unicast';
}

function normalisedAddress(address: string): string | null {
  try {
    return ipaddr.process(address.replace(/^\[|\]$/g, '')).toNormalizedString();
  } catch {
    return null;
  }
}

/** The status code a ToolError from a failed fetch should carry, by cause. */
function classify(err: unknown, deadline: AbortSignal, callerSignal: AbortSignal | undefined, maxBytes: number): ToolError {
  if (err instanceof ToolError) return err;
  if (deadline.aborted && deadline.reason instanceof DeadlineError) return new ToolError('UPSTREAM_TIMEOUT', MSG_TIMEOUT);
  if (callerSignal?.aborted) return new ToolError('UPSTREAM_TIMEOUT', 'The request was cancelled');
  const seen = new Set<unknown>();
  const codes: string[] = [];
  let tooLarge = false;
  let blocked = false;
  const walk = (e: unknown): void => {
    if (!e || typeof e !== 'object' || seen.has(e)) return;
    seen.add(e);
    if (e instanceof BlockedAddressError) blocked = true;
    if (e instanceof TooLargeError) tooLarge = true;
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
    walk((e as { cause?: unknown }).cause);
    const errors = (e as { errors?: unknown }).errors;
    if (Array.isArray(errors)) errors.forEach(walk);
  };
  walk(err);
  if (blocked) return new ToolError('URL_NOT_ALLOWED', MSG_BLOCKED);
  if (tooLarge) return new ToolError('UPSTREAM_ERROR', `The response body is larger than ${maxBytes} bytes`);
  const timeouts = ['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT', 'ESOCKETTIMEDOUT'];
  if (codes.some((c) => timeouts.includes(c))) return new ToolError('UPSTREAM_TIMEOUT', MSG_TIMEOUT);
  if (codes.some((c) => c === 'ENOTFOUND' || c === 'EAI_AGAIN' || c === 'ENODATA')) {
    return new ToolError('UPSTREAM_ERROR', 'The URL\'s host name could not be resolved');
  }
  if (codes.some((c) => c.startsWith('Z_'))) return new ToolError('UPSTREAM_ERROR', 'The response body could not be decoded');
  if (codes.some((c) => c.startsWith('HPE_') || c === 'UND_ERR_INVALID_ARG' || c === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH')) {
    return new ToolError('UPSTREAM_ERROR', 'The server sent a malformed HTTP response');
  }
  return new ToolError('UPSTREAM_ERROR', MSG_CONNECT);
}

function headerRecord(raw: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [k, v] of Object.entries(raw)) {
    if (v === undefined) continue;
    out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  }
  return { ...out };
}

function parseContentType(value: string | undefined): { type: string; charset: string | null } {
  if (!value) return { type: '', charset: null };
  const [type = '', ...params] = value.split(';');
  let charset: string | null = null;
  for (const p of params) {
    const m = /^\s*charset\s*=\s*"?([^";\s]+)"?\s*$/i.exec(p);
    if (m) charset = m[1]!.toLowerCase();
  }
  return { type: type.trim().toLowerCase(), charset };
}

/** Decoders for a Content-Encoding value, in the order to apply them ('deflate' is decided later). */
function decoders(encoding: string | undefined): Array<NodeJS.ReadWriteStream | 'deflate'> {
  if (!encoding) return [];
  const codings = encoding.toLowerCase().split(',').map((s) => s.trim()).filter((s) => s && s !== 'identity');
  if (codings.length > 3) throw new ToolError('UPSTREAM_ERROR', 'The response body could not be decoded');
  // Lenient about a missing end of stream, like browsers.
  const flush = { flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH };
  return codings.reverse().map((c) => {
    if (c === 'gzip' || c === 'x-gzip') return zlib.createGunzip(flush);
    if (c === 'br') return zlib.createBrotliDecompress({ flush: zlib.constants.BROTLI_OPERATION_FLUSH, finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH });
    if (c === 'deflate') return 'deflate' as const;
    throw new ToolError('UPSTREAM_ERROR', 'The response uses an unsupported content encoding');
  });
}

/** Waits for the first bytes of a body and puts them back; null at end of stream. */
function peek(body: Readable, signal: AbortSignal): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const done = () => {
      body.off('readable', onReadable).off('end', onEnd).off('error', onError);
      signal.removeEventListener('abort', onAbort);
    };
    const onReadable = () => {
      const chunk = body.read() as Buffer | null;
      if (chunk === null) return;
      done();
      body.unshift(chunk);
      resolve(chunk);
    };
    const onEnd = () => (done(), resolve(null));
    const onError = (err: Error) => (done(), reject(err));
    const onAbort = () => (done(), reject(signal.reason));
    body.on('readable', onReadable).on('end', onEnd).on('error', onError);
    signal.addEventListener('abort', onAbort, { once: true });
    onReadable();
  });
}

/** A zlib stream for `deflate`: zlib-wrapped per the RFC, but some servers send it raw. */
function inflaterFor(first: Buffer | null): NodeJS.ReadWriteStream {
  const flush = { flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH };
  const b0 = first?.[0];
  const b1 = first?.[1];
  const wrapped = b0 !== undefined && (b0 & 0x0f) === 8 && (b1 === undefined || (b0 * 256 + b1) % 31 === 0);
  return wrapped ? zlib.createInflate(flush) : zlib.createInflateRaw(flush);
}

/** Reads a body stream through its decoders, counting decoded bytes; past `maxBytes` it aborts. */
async function readBody(body: Readable, encoding: string | undefined, maxBytes: number, signal: AbortSignal): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  let tooLarge = false;
  const sink = async (source: AsyncIterable<Buffer>): Promise<void> => {
    for await (const chunk of source) {
      total += chunk.length;
      if (total > maxBytes) {
        tooLarge = true;
        throw new TooLargeError('body too large');
      }
      chunks.push(chunk);
    }
  };
  let stages: NodeJS.ReadWriteStream[];
  try {
    const codings = decoders(encoding);
    // Only the first decoder sees the raw body; a deflate coding later in the chain is zlib-wrapped.
    const first = codings[0] === 'deflate' ? await peek(body, signal) : null;
    stages = codings.map((c, i) => (c === 'deflate' ? (i === 0 ? inflaterFor(first) : zlib.createInflate()) : c));
  } catch (err) {
    discard(body);
    throw err;
  }
  try {
    // The variadic overloads of pipeline() do not type a spread of stages.
    await (pipeline as unknown as (...args: unknown[]) => Promise<void>)(body, ...stages, sink, { signal });
  } catch (err) {
    throw tooLarge ? new TooLargeError('body too large') : err;
  }
  return Buffer.concat(chunks, total);
}

/** Destroys a body stream nobody will read; its abort error is expected, not uncaught. */
function discard(body: Readable): void {
  body.on('error', () => {});
  if (!body.destroyed) body.destroy();
}

function mediaTypeAllowed(type: string, allowed: string[]): boolean {
  return allowed.some((a) => {
    const x = a.toLowerCase();
    return x.endsWith('/') ? type.startsWith(x) : type === x;
  });
}

/** Builds the guarded fetcher for a process (or a test). */
export function createFetcher(config: Config | Fetcher['config'], options: FetcherOptions = {}): Fetcher {
  const cfg = { fetchAllowPrivate: config.fetchAllowPrivate, fetchTimeoutMs: config.fetchTimeoutMs, fetchMaxBytes: config.fetchMaxBytes };
  const allowPrivate = options.allowPrivate ?? cfg.fetchAllowPrivate;
  const resolver = options.resolver ?? systemResolver;
  const exempt = new Set((options.allowAddresses ?? []).map((a) => normalisedAddress(a)).filter((a): a is string => a !== null));
  const userAgent = options.userAgent ?? 'devtoolbox-mcp/0.1 (+https://github.com/devtoolbox-mcp)';

  const addressAllowed = (address: string): boolean => {
    if (allowPrivate) return net.isIP(address.replace(/^\[|\]$/g, '')) !== 0;
    const n = normalisedAddress(address);
    return n !== null && (exempt.has(n) || isPublicAddress(address));
  };

  // Node calls `lookup` only for host names; every answer is checked, and Node then connects
  // to exactly the addresses we hand back, so no second resolution can differ.
  const lookup = (
    hostname: string,
    opts: { all?: boolean; family?: number },
    cb: (err: Error | null, address?: string | ResolvedAddress[], family?: number) => void,
  ): void => {
    resolver(hostname).then(
      (list) => {
        let addrs = list;
        if (opts.family === 4 || opts.family === 6) addrs = list.filter((a) => a.family === opts.family);
        if (addrs.length === 0) {
          const e = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
          cb(e);
          return;
        }
        if (!addrs.every((a) => addressAllowed(a.address))) {
          cb(new BlockedAddressError('blocked address'));
          return;
        }
        if (opts.all) cb(null, addrs);
        else cb(null, addrs[0]!.address, addrs[0]!.family);
      },
      (err: unknown) => cb(err instanceof Error ? err : new Error(String(err))),
    );
  };

  const connectTimeout = Math.min(options.connectTimeoutMs ?? 10_000, cfg.fetchTimeoutMs);
  const baseConnect = buildConnector({ timeout: connectTimeout, lookup } as buildConnector.BuildOptions);
  const connect: buildConnector.connector = (opts, cb) => {
    // Literal IPs never reach `lookup`: check them here, at connect time, on every hop.
    if (net.isIP(opts.hostname) !== 0 && !addressAllowed(opts.hostname)) {
      cb(new BlockedAddressError('blocked address'), null);
      return;
    }
    baseConnect(opts, cb);
  };
  const agent = new Agent({ connect, keepAliveTimeout: 4_000, keepAliveMaxTimeout: 10_000, maxHeaderSize: 64 * 1024 });

  const checkUrl = (raw: string | URL): URL => {
    let url: URL;
    try {
      url = new URL(String(raw));
    } catch {
      throw new ToolError('INVALID_INPUT', 'Not a valid absolute URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ToolError('URL_NOT_ALLOWED', 'Only http and https URLs can be fetched');
    if (url.username || url.password) throw new ToolError('URL_NOT_ALLOWED', 'URLs with credentials (user:password@) are not allowed');
    const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
    if (BAD_PORTS.has(port)) throw new ToolError('URL_NOT_ALLOWED', `Port ${port} is not allowed`);
    // WHATWG parsing has already normalised 2130706434, 0177.0.0.2 and 0x7f.0.0.2 to 127.0.0.2.
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (net.isIP(host) !== 0 && !addressAllowed(host)) throw new ToolError('URL_NOT_ALLOWED', MSG_BLOCKED);
    return url;
  };

  const doFetch = async (raw: string | URL, opts: FetchOptions = {}): Promise<FetchResult> => {
    const timeoutMs = Math.max(1, Math.min(opts.timeoutMs ?? cfg.fetchTimeoutMs, cfg.fetchTimeoutMs));
    const maxBytes = Math.max(0, Math.min(opts.maxBytes ?? cfg.fetchMaxBytes, cfg.fetchMaxBytes));
    const maxRedirects = Math.max(0, Math.min(opts.maxRedirects ?? MAX_REDIRECTS, MAX_REDIRECTS));
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new DeadlineError('deadline')), timeoutMs);
    const onCallerAbort = () => controller.abort(opts.signal?.reason);
    if (opts.signal?.aborted) onCallerAbort();
    else opts.signal?.addEventListener('abort', onCallerAbort, { once: true });
    const signal = controller.signal;
    const deadlineAt = Date.now() + timeoutMs;

    let url = checkUrl(raw);
    let method: FetchMethod = opts.method ?? 'GET';
    let body: string | Uint8Array | undefined = opts.body;
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(opts.headers ?? {})) {
      if (!OWN_HEADERS.has(k.toLowerCase())) headers[k.toLowerCase()] = v;
    }
    headers['user-agent'] ??= userAgent;
    headers['accept'] = opts.accept ?? headers['accept'] ?? '*/*';
    headers['accept-encoding'] = 'gzip, deflate, br';

    let current: Dispatcher.ResponseData | undefined;
    try {
      for (let hop = 0; ; hop++) {
        const remaining = Math.max(1, deadlineAt - Date.now());
        current = await request(url, {
          dispatcher: agent,
          method,
          headers,
          body: method === 'GET' || method === 'HEAD' ? undefined : body,
          signal,
          headersTimeout: remaining,
          bodyTimeout: remaining,
        });
        const res = current;
        const location = res.headers['location'];
        if (REDIRECT_STATUS.has(res.statusCode) && typeof location === 'string' && maxRedirects > 0) {
          await res.body.dump({ limit: 64 * 1024 }).catch(() => {});
          if (hop >= maxRedirects) throw new ToolError('UPSTREAM_ERROR', `Too many redirects (more than ${maxRedirects})`);
          let next: URL;
          try {
            next = new URL(location, url);
          } catch {
            throw new ToolError('UPSTREAM_ERROR', 'The server sent an invalid redirect');
          }
          next = checkUrl(next);
          if (next.origin !== url.origin) for (const h of CREDENTIAL_HEADERS) delete headers[h];
          if (res.statusCode === 303 ? method !== 'HEAD' : (res.statusCode === 301 || res.statusCode === 302) && method === 'POST') {
            method = 'GET';
            body = undefined;
            delete headers['content-type'];
          }
          url = next;
          continue;
        }
        const { type, charset } = parseContentType(typeof res.headers['content-type'] === 'string' ? res.headers['content-type'] : undefined);
        const okStatus = res.statusCode >= 200 && res.statusCode < 300;
        if (okStatus && opts.contentTypes && !mediaTypeAllowed(type, opts.contentTypes)) {
          discard(res.body);
          throw new ToolError('UPSTREAM_ERROR', `The URL answered with content type "${type || 'none'}", expected ${opts.contentTypes.join(' or ')}`);
        }
        const encoding = typeof res.headers['content-encoding'] === 'string' ? res.headers['content-encoding'] : undefined;
        const declared = Number(res.headers['content-length']);
        if (!encoding && Number.isFinite(declared) && declared > maxBytes) {
          discard(res.body);
          throw new TooLargeError('declared too large');
        }
        const noBody = method === 'HEAD' || res.statusCode === 204 || res.statusCode === 304;
        const data = noBody ? (await res.body.dump().catch(() => {}), Buffer.alloc(0)) : await readBody(res.body, encoding, maxBytes, signal);
        return {
          url: url.href,
          status: res.statusCode,
          headers: headerRecord(res.headers),
          body: data,
          contentType: type,
          charset,
          redirects: hop,
        };
      }
    } catch (err) {
      if (current) discard(current.body);
      throw classify(err, signal, opts.signal, maxBytes);
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onCallerAbort);
    }
  };

  return {
    config: cfg,
    fetch: doFetch,
    checkUrl,
    close: () => agent.close(),
  };
}
