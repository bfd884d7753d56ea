import { ToolError } from '../../errors.js';
import type { Services } from '../../services.js';
import { findApiKeyById, type ApiKeyRecord } from '../keys.js';
import type Provider from 'oidc-provider';
import type { OAuthUrls } from './urls.js';

/** What verifying needs of the sign-in machinery (./server.ts). */
export interface TokenIssuer {
  urls: OAuthUrls;
  challenge(error: 'invalid_token'): string;
  provider(): Promise<{ provider: Provider }>;
}

/** 401 `invalid_token` for a bearer token that is not (or no longer) good here, with the way to sign in again. */
function invalidToken(server: TokenIssuer, message: string): ToolError {
  return new ToolError('UNAUTHORIZED', message, undefined, { 'WWW-Authenticate': server.challenge('invalid_token') });
}

/** Access tokens are 43 base64url characters (oidc-provider's opaque format); anything else is not looked up. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{20,128}$/;

/**
 * The API key an access token acts for: the token must exist, be unexpired and issued for our
 * /mcp resource (RFC 8707 audience), and its key must still exist. The key is read on every call
 * (one indexed lookup, as a key's own call costs), so a removed key or a new plan applies at once.
 */
export async function verifyAccessToken(server: TokenIssuer, services: Services, token: string): Promise<ApiKeyRecord> {
  if (!TOKEN_SHAPE.test(token)) throw invalidToken(server, 'Unknown API key or access token');
  const { provider } = await server.provider();
  const at = await provider.AccessToken.find(token);
  if (!at || at.isExpired) throw invalidToken(server, 'The access token is unknown, expired or revoked');
  const aud = Array.isArray(at.aud) ? at.aud : at.aud === undefined ? [] : [at.aud];
  if (!aud.includes(server.urls.resource)) throw invalidToken(server, `The access token was not issued for ${server.urls.resource}`);
  const rec = await findApiKeyById(services.store, at.accountId);
  if (!rec) throw invalidToken(server, 'The API key behind this access token was removed');
  return rec;
}
