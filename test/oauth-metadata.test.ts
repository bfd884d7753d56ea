import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenOAuthApp, type OAuthApp } from './oauth-app.js';
import { authorizeUrl, pkce, registerClient } from './oauth-signin.js';

let app: OAuthApp;
beforeAll(async () => {
  app = await listenOAuthApp();
});
afterAll(async () => {
  await app.close();
});

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
};
const post = (path: string, headers: Record<string, string> = {}) =>
  fetch(`${app.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(initialize) });

describe('sign-in metadata (RFC 9728, RFC 8414)', () => {
  it('publishes the protected resource metadata of /mcp at both well-known paths', async () => {
    const expected = {
      resource: `${app.url}/mcp`,
      authorization_servers: [app.url],
      scopes_supported: ['mcp'],
      bearer_methods_supported: ['header'],
      resource_name: 'devtoolbox-mcp',
      resource_documentation: `${app.url}/docs`,
    };
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
      const res = await fetch(`${app.url}${path}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toStrictEqual(expected);
    }
  });

  it('publishes the authorization server metadata: code flow, PKCE S256 only, registration, revocation, resource indicators', async () => {
    const res = await fetch(`${app.url}/.well-known/oauth-authorization-server`);
    expect(res.status).toBe(200);
    const m = (await res.json()) as Record<string, unknown>;
    expect(m).toMatchObject({
      issuer: app.url,
      authorization_endpoint: `${app.url}/oauth/authorize`,
      token_endpoint: `${app.url}/oauth/token`,
      registration_endpoint: `${app.url}/oauth/register`,
      revocation_endpoint: `${app.url}/oauth/revoke`,
      code_challenge_methods_supported: ['S256'],
      response_types_supported: ['code'],
      authorization_response_iss_parameter_supported: true,
    });
    expect(m.grant_types_supported).toEqual(expect.arrayContaining(['authorization_code', 'refresh_token']));
    expect(m.scopes_supported).toEqual(expect.arrayContaining(['mcp']));
    // The OIDC discovery path answers the same document.
    const oidc = await (await fetch(`${app.url}/.well-known/openid-configuration`)).json();
    expect(oidc).toStrictEqual(m);
  });
});

describe('behind a proxy that ends TLS (PUBLIC_BASE_URL https, plain HTTP on the last hop)', () => {
  it('the metadata names the public https endpoints, whatever a client sends as forwarded headers; the sign-in cookies are Secure', async () => {
    const pub = 'https://public.example';
    const proxied = await listenOAuthApp({ PUBLIC_BASE_URL: pub });
    try {
      // Before: the endpoints took the last hop's scheme and Host (http://…), beside an https issuer.
      for (const headers of [{}, { 'x-forwarded-proto': 'http', 'x-forwarded-host': 'evil.example' }] as Record<string, string>[]) {
        const m = (await (await fetch(`${proxied.url}/.well-known/oauth-authorization-server`, { headers })).json()) as Record<string, unknown>;
        expect(m).toMatchObject({
          issuer: pub,
          authorization_endpoint: `${pub}/oauth/authorize`,
          token_endpoint: `${pub}/oauth/token`,
          registration_endpoint: `${pub}/oauth/register`,
          revocation_endpoint: `${pub}/oauth/revoke`,
        });
      }
      const clientId = await registerClient(proxied.url);
      const u = authorizeUrl(proxied.url, { clientId, challenge: pkce().challenge, resource: `${pub}/mcp` });
      const res = await fetch(u, { redirect: 'manual' });
      expect(res.status).toBe(303);
      const cookies = res.headers.getSetCookie();
      expect(cookies.length).toBeGreaterThan(0);
      for (const c of cookies) expect(c.toLowerCase()).toContain('; secure');
    } finally {
      await proxied.close();
    }
  });
});

describe('/mcp/auth and /mcp', () => {
  it('/mcp/auth answers a tokenless request 401 with resource_metadata', async () => {
    const res = await post('/mcp/auth');
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer realm="devtoolbox", resource_metadata="${app.url}/.well-known/oauth-protected-resource/mcp", scope="mcp"`,
    );
    expect(await res.json()).toMatchObject({ jsonrpc: "2.0", id: 1, error: { code: -32600 } });
  });

  it('/mcp/auth serves a caller with an API key as /mcp does', async () => {
    const reg = await fetch(`${app.url}/api/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'meta@example.com' }) });
    const { api_key } = (await reg.json()) as { api_key: string };
    const res = await post('/mcp/auth', { authorization: `Bearer ${api_key}` });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { result: { protocolVersion: string } }).result.protocolVersion).toBe('2025-06-18');
  });

  it('/mcp stays keyless by default', async () => {
    const res = await post('/mcp');
    expect(res.status).toBe(200);
  });

  it('an unknown bearer token is 401 invalid_token with the way to sign in', async () => {
    const res = await post('/mcp/auth', { authorization: 'Bearer abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG' });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer realm="devtoolbox", error="invalid_token", resource_metadata="${app.url}/.well-known/oauth-protected-resource/mcp", scope="mcp"`,
    );
  });

  it('a token in the query string is refused, on /mcp and REST', async () => {
    for (const path of ['/mcp?access_token=abc', '/mcp/auth?access_token=abc']) {
      const res = await post(path);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toContain('error="invalid_request"');
    }
    const rest = await fetch(`${app.url}/api/tools?access_token=abc`);
    expect(rest.status).toBe(401);
    expect(((await rest.json()) as { error: { message: string } }).error.message).toMatch(/Authorization header/);
  });
});

describe('MCP_AUTH=required', () => {
  it('makes /mcp itself ask for sign-in', async () => {
    const strict = await listenOAuthApp({ MCP_AUTH: 'required' });
    try {
      const res = await fetch(`${strict.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify(initialize) });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toContain(`resource_metadata="${strict.url}/.well-known/oauth-protected-resource/mcp"`);
    } finally {
      await strict.close();
    }
  });
});
