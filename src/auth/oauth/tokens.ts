import { ToolError } from '../../errors.js';
import type { Services } from '../../services.js';
import { findApiKeyById, type ApiKeyRecord } from '../keys.js';
import { OAUTH_RECORDS, storedId } from './adapter.js';
import type { OAuthUrls } from './urls.js';

/** What verifying needs of the sign-in machinery (./server.ts). */
export interface TokenIssuer {
  urls: OAuthUrls;
  challenge(error: 'invalid_token'): string;
}

/** 401 `invalid_token` for a bearer token that is not (or no longer) good here, with the way to sign in again. */
function invalidToken(server: TokenIssuer, message: string): ToolError {
  return new ToolError('UNAUTHORIZED', message, undefined, { 'WWW-Authenticate': server.challenge('invalid_token') });
}

/** Access tokens are 43 base64url characters (oidc-provider's opaque format); anything else is not looked up. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{20,128}$/;

/**
 * The API key an access token acts for: the token must exist, be unexpired and issued for our
 * /mcp resource (RFC 8707 audience), and its key must still exist. Read straight from the store
 * (the record oidc-provider wrote through ./adapter.ts, by the token's hash): one get, with no
 * model instance of oidc-provider per call (that cost ≈ half a small call's rate,
 * `BENCH_ONLY=oauth`). The key is read on every call (one indexed lookup, as a key's own call
 * costs), so a removed key or a new plan applies at once; a revoked token is a deleted record.
 */
export async function verifyAccessToken(server: TokenIssuer, services: Services, token: string): Promise<ApiKeyRecord> {
  if (!TOKEN_SHAPE.test(token)) throw invalidToken(server, 'Unknown API key or access token');
  const rec = await services.store.collection(OAUTH_RECORDS).get(storedId('AccessToken', token));
  const now = services.clock.now();
  const p = rec?.model === 'AccessToken' ? rec.payload : undefined;
  // The record's expiry is the token's (the adapter stores it from oidc-provider's expiresIn).
  if (!rec || !p || rec.expiresAt === null || rec.expiresAt <= now) throw invalidToken(server, 'The access token is unknown, expired or revoked');
  const aud = Array.isArray(p.aud) ? p.aud : typeof p.aud === 'string' ? [p.aud] : [];
  if (!aud.includes(server.urls.resource)) throw invalidToken(server, `The access token was not issued for ${server.urls.resource}`);
  const key = typeof p.accountId === 'string' ? await findApiKeyById(services.store, p.accountId) : undefined;
  if (!key) throw invalidToken(server, 'The API key behind this access token was removed');
  return key;
}
