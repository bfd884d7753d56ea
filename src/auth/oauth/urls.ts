/** The one scope a token of /mcp carries (what PRM and the 401 advertise). */
export const OAUTH_SCOPE = 'mcp';

/** The public URLs of the sign-in machinery, all derived from PUBLIC_BASE_URL. */
export interface OAuthUrls {
  /** The authorization server's issuer: the public base URL itself (RFC 8414 metadata at its root). */
  issuer: string;
  /** The protected resource (RFC 8707 audience of every token): `<base>/mcp`; /mcp/auth lies under it. */
  resource: string;
  /** Protected Resource Metadata of /mcp (RFC 9728, path-suffixed form): what a 401 points to. */
  resourceMetadata: string;
}

/** The URLs for a public base URL (no trailing slash, as config.ts keeps it). */
export function oauthUrls(publicBaseUrl: string): OAuthUrls {
  const u = new URL(publicBaseUrl);
  const path = u.pathname.replace(/\/+$/, '');
  return {
    issuer: publicBaseUrl,
    resource: `${publicBaseUrl}/mcp`,
    // RFC 9728 §3.1: the well-known segment goes between the host and the resource's path.
    resourceMetadata: `${u.origin}/.well-known/oauth-protected-resource${path}/mcp`,
  };
}

/** RFC 9728 Protected Resource Metadata of /mcp (served at both well-known paths). */
export function protectedResourceMetadata(urls: OAuthUrls): Record<string, unknown> {
  return {
    resource: urls.resource,
    authorization_servers: [urls.issuer],
    scopes_supported: [OAUTH_SCOPE],
    bearer_methods_supported: ['header'],
    resource_name: 'devtoolbox-mcp',
    resource_documentation: `${urls.issuer}/docs`,
  };
}

/** The WWW-Authenticate value of a tokenless (or bad-token) request to a sign-in endpoint. */
export function bearerChallenge(urls: OAuthUrls, error?: 'invalid_token' | 'invalid_request'): string {
  const err = error ? `, error="${error}"` : '';
  return `Bearer realm="devtoolbox"${err}, resource_metadata="${urls.resourceMetadata}", scope="${OAUTH_SCOPE}"`;
}
