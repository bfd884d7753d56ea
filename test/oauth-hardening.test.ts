/**
 * Issue 30, what session 8 added: a confidential client's secret is stored as a hash (and still
 * authenticates, basic and post); Dynamic Client Registration is bounded per client address.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OAUTH_RECORDS } from '../src/auth/oauth/adapter.js';
import { DCR_LIMIT } from '../src/auth/oauth/limits.js';
import { listenOAuthApp, type OAuthApp } from './oauth-app.js';
import { authorizeUrl, pkce, signIn, tokenRequest } from './oauth-signin.js';
import { jsonWithoutRequestId } from './request-ids.js';

let app: OAuthApp;
let limited: OAuthApp;
let apiKey: string;
beforeAll(async () => {
  app = await listenOAuthApp();
  // Limits on; X-Forwarded-For believed from loopback, so one test can speak from several addresses.
  limited = await listenOAuthApp({ RATE_LIMITS: 'on', TRUSTED_PROXIES: '127.0.0.1' });
  const r = await fetch(`${app.url}/api/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'secret@example.com' }) });
  apiKey = ((await jsonWithoutRequestId(r)) as { api_key: string }).api_key;
});
afterAll(async () => {
  await limited?.close();
  await app?.close();
});

const REDIRECT = 'http://127.0.0.1:9/callback';

async function registerConfidential(base: string, method: string): Promise<{ clientId: string; secret: string }> {
  const r = await fetch(`${base}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Hosted Assistant', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: method }),
  });
  const body = (await jsonWithoutRequestId(r)) as { client_id: string; client_secret?: string };
  expect(r.status, JSON.stringify(body)).toBe(201);
  expect(typeof body.client_secret).toBe('string');
  return { clientId: body.client_id, secret: body.client_secret! };
}

/** A signed-in authorization code for a client, with its verifier. */
async function codeFor(clientId: string): Promise<{ code: string; verifier: string }> {
  const { verifier, challenge } = pkce();
  const back = await signIn(authorizeUrl(app.url, { clientId, challenge }), apiKey);
  return { code: back.searchParams.get('code')!, verifier };
}

describe('a confidential client (Claude.ai registers with client_secret_post)', () => {
  for (const method of ['client_secret_post', 'client_secret_basic'] as const) {
    it(`${method}: the secret is returned once, stored only as its hash, and authenticates the token request`, async () => {
      const { clientId, secret } = await registerConfidential(app.url, method);
      const stored = JSON.stringify(await app.services.store.collection(OAUTH_RECORDS).query({ where: { model: 'Client' } }));
      expect(stored).toContain(clientId);
      expect(stored).not.toContain(secret);
      expect(stored).toContain('sha256$');

      const send = async (presented: string) => {
        const { code, verifier } = await codeFor(clientId);
        const form: Record<string, string> = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier, resource: `${app.url}/mcp` };
        if (method === 'client_secret_post') return tokenRequest(app.url, { ...form, client_id: clientId, client_secret: presented });
        const r = await fetch(`${app.url}/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(presented)}`).toString('base64')}` },
          body: new URLSearchParams(form).toString(),
        });
        return { status: r.status, json: (await jsonWithoutRequestId(r)) as Record<string, unknown> };
      };
      const ok = await send(secret);
      expect(ok.status, JSON.stringify(ok.json)).toBe(200);
      expect(typeof ok.json.access_token).toBe('string');
      // The wrong secret, and the stored hash itself presented as the secret: both refused.
      const hash = /"client_secret":"(sha256\$[^"]+)"/.exec(stored)![1]!;
      for (const wrong of [`${secret}x`, hash]) {
        const no = await send(wrong);
        expect([no.status, no.json.error]).toStrictEqual([401, 'invalid_client']);
      }
    });
  }

  it('client_secret_jwt (the secret as an HMAC key) is not offered', async () => {
    const meta = (await (await fetch(`${app.url}/.well-known/oauth-authorization-server`)).json()) as { token_endpoint_auth_methods_supported: string[] };
    expect(meta.token_endpoint_auth_methods_supported).not.toContain('client_secret_jwt');
    expect(meta.token_endpoint_auth_methods_supported).toEqual(expect.arrayContaining(['none', 'client_secret_post', 'client_secret_basic']));
    const r = await fetch(`${app.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'client_secret_jwt' }),
    });
    expect(r.status).toBe(400);
  });
});

describe('an authorization request without scope', () => {
  it('gets the default scope (RFC 6749 §3.3) instead of access_denied (the conformance suite\'s code grant sends none)', async () => {
    const r = await fetch(`${app.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }),
    });
    const clientId = ((await jsonWithoutRequestId(r)) as { client_id: string }).client_id;
    const { verifier, challenge } = pkce();
    const url = authorizeUrl(app.url, { clientId, challenge });
    url.searchParams.delete('scope');
    const back = await signIn(url, apiKey);
    expect(back.searchParams.get('error')).toBeNull();
    expect(back.searchParams.get('state')).toBe('st-123');
    const t = await tokenRequest(app.url, { grant_type: 'authorization_code', code: back.searchParams.get('code')!, redirect_uri: REDIRECT, code_verifier: verifier, client_id: clientId, resource: `${app.url}/mcp` });
    expect([t.status, t.json.scope, t.json.token_type]).toStrictEqual([200, 'mcp', 'Bearer']);
  });
});

describe('Dynamic Client Registration is bounded per address', () => {
  const register = (ip: string) =>
    fetch(`${limited.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': ip },
      body: JSON.stringify({ client_name: 'Flood', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }),
    });

  it(`${DCR_LIMIT.limit} an hour; then 429 in the contract's shape with Retry-After; another address is not affected`, async () => {
    for (let i = 0; i < DCR_LIMIT.limit; i++) expect((await register('198.51.100.7')).status).toBe(201);
    const refused = await register('198.51.100.7');
    expect(refused.status).toBe(429);
    const retry = Number(refused.headers.get('retry-after'));
    expect(retry).toBeGreaterThan(0);
    expect(retry).toBeLessThanOrEqual(3600);
    expect(await jsonWithoutRequestId(refused)).toStrictEqual({
      success: false,
      error: { code: 'RATE_LIMITED', message: `Too many client registrations from this address: ${DCR_LIMIT.limit} per hour; retry after ${retry} s`, details: { limit: DCR_LIMIT.limit } },
    });
    expect((await register('198.51.100.8')).status).toBe(201);
    // Only registration is bounded so: the metadata document still answers the refused address.
    expect((await fetch(`${limited.url}/.well-known/oauth-authorization-server`, { headers: { 'x-forwarded-for': '198.51.100.7' } })).status).toBe(200);
  }, 60_000);

  it('every spelling of the path oidc-provider takes for registration (another case, a trailing slash) is counted too', async () => {
    const variants = ['/oauth/register/', '/oauth/Register', '/oauth/REGISTER/'];
    const at = (p: string) =>
      fetch(`${limited.url}${p}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.9' },
        body: JSON.stringify({ client_name: 'Flood', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }),
      });
    const statuses: number[] = [];
    for (let i = 0; i < DCR_LIMIT.limit; i++) statuses.push((await at(variants[i % variants.length]!)).status);
    // Each spelling registers (so each must count) …
    expect(statuses).toStrictEqual(Array.from({ length: DCR_LIMIT.limit }, () => 201));
    // … and once the address has used its hour, none of them registers any more.
    for (const p of ['/oauth/register', ...variants]) expect((await at(p)).status).toBe(429);
  }, 60_000);
});
