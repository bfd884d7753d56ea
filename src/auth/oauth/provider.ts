import { timingSafeEqual } from 'node:crypto';
import type Provider from 'oidc-provider';
import type { Fetcher } from '../../net/fetch.js';
import type { Store } from '../../state/index.js';
import { findApiKeyById } from '../keys.js';
import { hashClientSecret, SECRET_HASH_PREFIX, StoreAdapter } from './adapter.js';
import { errorPage } from './page.js';
import type { OAuthSecretRecord } from './secrets.js';
import { OAUTH_SCOPE, type OAuthUrls } from './urls.js';

/** Lifetimes (seconds). Access tokens are short; refresh tokens rotate on every use. */
export const TTL = {
  AccessToken: 3600,
  AuthorizationCode: 60,
  RefreshToken: 30 * 24 * 3600,
  Grant: 30 * 24 * 3600,
  Interaction: 600,
  Session: 600,
} as const;

/** Every endpoint of the authorization server lives under /oauth/ (discovery aside). */
const ROUTES = {
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  registration: '/oauth/register',
  revocation: '/oauth/revoke',
  jwks: '/oauth/jwks',
  end_session: '/oauth/session/end',
  userinfo: '/oauth/me',
  introspection: '/oauth/token/introspection',
  device_authorization: '/oauth/device/auth',
  code_verification: '/oauth/device',
  pushed_authorization_request: '/oauth/request',
  backchannel_authentication: '/oauth/backchannel',
  challenge: '/oauth/challenge',
  credential: '/oauth/credential',
};

export interface ProviderDeps {
  store: Store;
  /** The guarded fetcher (private addresses refused unless FETCH_ALLOW_PRIVATE, size and time capped). */
  fetcher: Fetcher;
  now: () => number;
  urls: OAuthUrls;
  secrets: OAuthSecretRecord;
}

/**
 * oidc-provider, configured as the authorization server of one resource (our /mcp): the
 * authorization code flow with PKCE S256 (required of every client; `plain` is not implemented
 * by oidc-provider 9), RFC 8707 resource indicators (the only resource is /mcp; its tokens are
 * opaque and live an hour), dynamic client registration, revocation, and refresh tokens that
 * rotate (a used one presented again revokes its grant: oidc-provider's refresh_token grant).
 * The account is the API key (its key_id): looked up on every use, so a removed key stops its
 * grants at once.
 */
export async function createProvider(deps: ProviderDeps): Promise<Provider> {
  // Imported on first use: a server nobody signs in to never loads it (nor prints its Node 20 warning).
  const { default: Provider, errors } = await import('oidc-provider');
  const { store, now, urls, secrets, fetcher } = deps;
  const resource = urls.resource;
  const provider = new Provider(urls.issuer, {
    adapter: (model: string) => new StoreAdapter(model, store, now),
    clients: [],
    findAccount: async (_ctx: unknown, sub: string) => {
      const rec = await findApiKeyById(store, sub);
      return rec ? { accountId: rec.key_id, claims: () => ({ sub: rec.key_id }) } : undefined;
    },
    cookies: { keys: [secrets.cookie_key] },
    jwks: { keys: [secrets.jwk] },
    routes: ROUTES,
    scopes: ['openid', 'offline_access', OAUTH_SCOPE],
    responseTypes: ['code'],
    pkce: { required: () => true },
    // Confidential clients (Claude.ai registers with client_secret_post) keep their secret only as
    // a hash (adapter.ts): no method that needs the secret itself as a key (client_secret_jwt, HS*).
    clientAuthMethods: ['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt'],
    enabledJWA: {
      clientAuthSigningAlgValues: ['RS256', 'PS256', 'ES256', 'Ed25519', 'EdDSA'],
      requestObjectSigningAlgValues: ['RS256', 'PS256', 'ES256', 'Ed25519', 'EdDSA'],
    },
    clientDefaults: { grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none', id_token_signed_response_alg: 'ES256' },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      revocation: { enabled: true },
      userinfo: { enabled: false },
      // Client ID Metadata Documents: an https client_id names its own JSON document (fetched
      // through our guarded fetcher; its client_id must equal the URL; at most 5 KiB; cached, LRU
      // of 100, 30 s to 1 day as its Cache-Control says).
      clientIdMetadataDocument: { enabled: true, ack: 'draft-02' },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, indicator: string) => {
          if (indicator !== resource) throw new errors.InvalidTarget!(`the only resource here is ${resource}`);
          return { scope: OAUTH_SCOPE, audience: resource, accessTokenTTL: TTL.AccessToken, accessTokenFormat: 'opaque' };
        },
      },
    },
    fetch: (url: string | URL) => fetchDocument(fetcher, url),
    issueRefreshToken: (_ctx: unknown, client: { grantTypeAllowed(t: string): boolean }) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: () => true,
    ttl: TTL,
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/oauth/interaction/${interaction.uid}` },
    renderError: (ctx: { type: string; body: string; status: number }, out: { error?: string; error_description?: string }) => {
      ctx.type = 'html';
      ctx.body = errorPage(out.error ?? 'error', out.error_description ?? 'The sign-in request is not valid.');
    },
  });
  compareHashedSecrets(provider);
  // Requests reach it as the public base URL shows them (src/http/oauth.ts sets the forwarded
  // scheme and host on each): its endpoints in the metadata and its cookies' Secure flag follow
  // PUBLIC_BASE_URL, not the hop from a TLS proxy.
  provider.proxy = true;
  return provider;
}

/**
 * A client's secret is stored as its hash (adapter.ts): oidc-provider's constant-time comparison,
 * made on the hash of the presented secret. oidc-provider offers no hook for it; its Client class
 * is per provider, so this touches no other instance (test/oauth-tokens.test.ts holds it to a real
 * client_secret_post and client_secret_basic exchange).
 */
function compareHashedSecrets(provider: Provider): void {
  const proto = (provider.Client as unknown as { prototype: { clientSecret?: string; compareClientSecret(actual: string): Promise<boolean> | boolean } }).prototype;
  const stock = proto.compareClientSecret;
  proto.compareClientSecret = function (this: typeof proto, actual: string) {
    const stored = this.clientSecret;
    if (typeof stored !== 'string' || !stored.startsWith(SECRET_HASH_PREFIX)) return stock.call(this, actual);
    const a = Buffer.from(hashClientSecret(String(actual)));
    const b = Buffer.from(stored);
    return a.length === b.length && timingSafeEqual(a, b);
  };
}

/** Largest client metadata document fetched (oidc-provider's own limit is 5 KiB). */
const DOCUMENT_MAX_BYTES = 64 * 1024;

/**
 * oidc-provider's outgoing fetch (client metadata documents) through our guarded fetcher, as a
 * web Response: no redirects, JSON only, 64 KiB and 5 s at most. A refused address or an
 * oversized body throws, which oidc-provider answers invalid_client.
 */
async function fetchDocument(fetcher: Fetcher, url: string | URL): Promise<Response> {
  const r = await fetcher.fetch(url, { accept: 'application/json', maxRedirects: 0, maxBytes: DOCUMENT_MAX_BYTES, timeoutMs: 5000 });
  return new Response(r.status === 204 || r.status === 304 ? null : new Uint8Array(r.body), { status: r.status, headers: r.headers });
}
