/**
 * One fetch on the wire: the request, redirects followed by hand (each hop re-checked and sent
 * through the same guarded Agent), and the final answer read under its caps — all within one
 * deadline.
 */
import type { Dispatcher } from 'undici';
import { undici } from './connector.js';
import { ToolError } from '../errors.js';
import { discard, headerRecord, mediaTypeAllowed, parseContentType, readBody, type Overflow } from './body.js';
import type { FetchLease, WaitOptions } from './budget.js';
import { TooLargeError } from './fetch-errors.js';
import type { FetchMethod, FetchResult } from './types.js';

/** Redirect hops at most (docs/fetching.md). */
export const MAX_REDIRECTS = 5;

const REDIRECT_STATUS = new Set([301, 302, 303, 307, 308]);
/** Request headers dropped when a redirect leaves the origin. */
const CREDENTIAL_HEADERS = new Set(['authorization', 'cookie', 'proxy-authorization']);

export interface Exchange {
  agent: Dispatcher;
  /** The first URL, already checked. */
  url: URL;
  method: FetchMethod;
  headers: Record<string, string>;
  body: string | Uint8Array | undefined;
  /** Checks each redirect target (same rules as the first URL). */
  checkUrl: (url: URL) => URL;
  /** The budget lease: its host slot follows the hops. */
  lease: FetchLease;
  /** How long a hop may wait for a host slot, now. */
  waitOptions: () => WaitOptions;
  signal: AbortSignal;
  /** Epoch ms when the whole fetch must be over. */
  deadlineAt: number;
  maxRedirects: number;
  maxBytes: number;
  overflow: Overflow;
  contentTypes: string[] | undefined;
}

/** Runs one fetch to its final answer. Throws ToolError or the raw cause (see classify()). */
export async function exchange(x: Exchange): Promise<FetchResult> {
  const { request } = await undici();
  let { url, method, body } = x;
  const headers = { ...x.headers };
  let current: Dispatcher.ResponseData | undefined;
  try {
    for (let hop = 0; ; hop++) {
      const remaining = Math.max(1, x.deadlineAt - Date.now());
      current = await request(url, {
        dispatcher: x.agent,
        method,
        headers,
        body: method === 'GET' || method === 'HEAD' ? undefined : body,
        signal: x.signal,
        headersTimeout: remaining,
        bodyTimeout: remaining,
      });
      const res = current;
      const location = res.headers['location'];
      if (REDIRECT_STATUS.has(res.statusCode) && typeof location === 'string' && x.maxRedirects > 0) {
        await res.body.dump({ limit: 64 * 1024 }).catch(() => {});
        if (hop >= x.maxRedirects) throw new ToolError('UPSTREAM_ERROR', `Too many redirects (more than ${x.maxRedirects})`);
        let next: URL;
        try {
          next = new URL(location, url);
        } catch {
          throw new ToolError('UPSTREAM_ERROR', 'The server sent an invalid redirect');
        }
        next = x.checkUrl(next);
        if (next.origin !== url.origin) for (const h of CREDENTIAL_HEADERS) delete headers[h];
        if (res.statusCode === 303 ? method !== 'HEAD' : (res.statusCode === 301 || res.statusCode === 302) && method === 'POST') {
          method = 'GET';
          body = undefined;
          delete headers['content-type'];
        }
        await x.lease.moveTo(next.hostname, x.waitOptions());
        url = next;
        continue;
      }
      return await finalAnswer(x, res, url, method, hop);
    }
  } catch (err) {
    if (current) discard(current.body);
    throw err;
  }
}

async function finalAnswer(x: Exchange, res: Dispatcher.ResponseData, url: URL, method: FetchMethod, hops: number): Promise<FetchResult> {
  const { type, charset } = parseContentType(typeof res.headers['content-type'] === 'string' ? res.headers['content-type'] : undefined);
  const okStatus = res.statusCode >= 200 && res.statusCode < 300;
  if (okStatus && x.contentTypes && !mediaTypeAllowed(type, x.contentTypes)) {
    discard(res.body);
    throw new ToolError('UPSTREAM_ERROR', `The URL answered with content type "${type || 'none'}", expected ${x.contentTypes.join(' or ')}`);
  }
  const encoding = typeof res.headers['content-encoding'] === 'string' ? res.headers['content-encoding'] : undefined;
  const declared = Number(res.headers['content-length']);
  if (x.overflow === 'error' && !encoding && Number.isFinite(declared) && declared > x.maxBytes) {
    discard(res.body);
    throw new TooLargeError('declared too large');
  }
  const noBody = method === 'HEAD' || res.statusCode === 204 || res.statusCode === 304;
  const data = noBody ? (await res.body.dump().catch(() => {}), Buffer.alloc(0)) : await readBody(res.body, encoding, x.maxBytes, x.signal, x.overflow);
  return {
    url: url.href,
    status: res.statusCode,
    headers: headerRecord(res.headers),
    body: data,
    contentType: type,
    charset,
    redirects: hops,
  };
}
