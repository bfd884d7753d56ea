/**
 * JWKS documents for jwt_decode: fetched only through the guarded fetcher (its address policy
 * refuses private addresses with URL_NOT_ALLOWED), small, and cached per service with a bound
 * on entries and age so a caller cannot grow memory by naming many URLs.
 */
import { createLocalJWKSet, type JSONWebKeySet } from 'jose';
import { ToolError } from '../../errors.js';
import type { ToolContext } from '../../registry.js';
import type { Services } from '../../services.js';

/** Largest JWKS document read. */
export const JWKS_MAX_BYTES = 256 * 1024;
/** How long a fetched JWKS is reused. */
export const JWKS_TTL_MS = 5 * 60_000;
/** Most JWKS documents kept per service (least recently fetched dropped first). */
export const JWKS_CACHE_ENTRIES = 32;

type KeySet = ReturnType<typeof createLocalJWKSet>;
interface Entry {
  at: number;
  keys: Promise<KeySet>;
}

const caches = new WeakMap<Services, Map<string, Entry>>();

async function load(url: string, ctx: ToolContext): Promise<KeySet> {
  const res = await ctx.services.fetcher.fetch(url, { accept: 'application/jwk-set+json, application/json', maxBytes: JWKS_MAX_BYTES, timeoutMs: 10_000, signal: ctx.signal });
  if (res.status !== 200) throw new ToolError('UPSTREAM_ERROR', `JWKS URL answered HTTP ${res.status}`, { status: res.status });
  let doc: unknown;
  try {
    doc = JSON.parse(res.body.toString('utf8'));
  } catch {
    throw new ToolError('UPSTREAM_ERROR', 'JWKS URL did not answer JSON');
  }
  try {
    return createLocalJWKSet(doc as JSONWebKeySet);
  } catch {
    throw new ToolError('UPSTREAM_ERROR', 'JWKS URL did not answer a JSON Web Key Set ({"keys": [...]})');
  }
}

/** The key set at `url`, from the cache when fresh; a failed fetch is not cached. */
export function jwksFor(url: string, ctx: ToolContext): Promise<KeySet> {
  let cache = caches.get(ctx.services);
  if (!cache) caches.set(ctx.services, (cache = new Map()));
  const now = ctx.services.clock.now();
  const hit = cache.get(url);
  if (hit && now - hit.at < JWKS_TTL_MS) return hit.keys;
  cache.delete(url);
  const keys = load(url, ctx);
  cache.set(url, { at: now, keys });
  keys.catch(() => {
    if (cache.get(url)?.keys === keys) cache.delete(url);
  });
  // Map order is insertion order: the first entry is the oldest fetch.
  while (cache.size > JWKS_CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
  return keys;
}
