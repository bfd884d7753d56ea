import type Provider from 'oidc-provider';
import { ToolError } from '../../errors.js';
import type { Services } from '../../services.js';
import { sweepExpired } from './adapter.js';
import { createProvider } from './provider.js';
import { oauthSecrets, type OAuthSecretRecord } from './secrets.js';
import { verifyAccessToken } from './tokens.js';
import { bearerChallenge, oauthUrls, type OAuthUrls } from './urls.js';

/** 401 for `?access_token=`: RFC 6750's query form is refused (bearer_methods_supported: header). */
export function tokenInQuery(): ToolError {
  return new ToolError('UNAUTHORIZED', 'Send the access token in the Authorization header ("Bearer <token>"), never in the URL', undefined, {
    'WWW-Authenticate': 'Bearer realm="devtoolbox", error="invalid_request", error_description="token in the query string"',
  });
}

/** How often expired OAuth records are swept (at most SWEEP_BATCH each time: 6,000 an hour). */
export const SWEEP_EVERY_MS = 5 * 60 * 1000;

/** The sign-in machinery of one app: its URLs and the provider, built on first use. */
export interface OAuthServer {
  urls: OAuthUrls;
  /** The challenge of a 401 from a sign-in endpoint (no token, or a bad one). */
  challenge(error?: 'invalid_token' | 'invalid_request'): string;
  provider(): Promise<{ provider: Provider; secrets: OAuthSecretRecord }>;
}

/**
 * The sign-in machinery of one service: the URLs from PUBLIC_BASE_URL, and oidc-provider built on
 * first use (its secrets come from the store). Registers the bearer-token verifier with
 * `services.auth`, so that a token is accepted wherever a key is.
 */
export function createOAuthServer(services: Services): OAuthServer {
  const urls = oauthUrls(services.config.publicBaseUrl);
  let built: Promise<{ provider: Provider; secrets: OAuthSecretRecord }> | undefined;
  const server: OAuthServer = {
    urls,
    challenge: (error) => bearerChallenge(urls, error),
    provider: () =>
      (built ??= oauthSecrets(services.store, services.clock.now()).then(async (secrets) => {
        const provider = await createProvider({ store: services.store, fetcher: services.fetcher, now: () => services.clock.now(), urls, secrets });
        provider.on('server_error', (_ctx: unknown, err: unknown) => services.log.error('oauth: authorization server error', err));
        return { provider, secrets };
      })).catch((err: unknown) => {
        built = undefined; // a store that was down may be back on the next request
        throw err;
      }),
  };
  services.auth.tokens = (token) => verifyAccessToken(server, services, token);
  // Expired artefacts go in bounded batches; every instance sweeps (a delete is idempotent).
  const sweep = setInterval(() => {
    sweepExpired(services.store, services.clock.now()).catch((err: unknown) => services.log.warn('oauth: sweeping expired records failed', err));
  }, SWEEP_EVERY_MS);
  sweep.unref();
  services.closers.push(() => clearInterval(sweep));
  return server;
}
