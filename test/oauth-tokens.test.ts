import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../src/core/clock.js';
import { API_KEYS, setPlan } from '../src/auth/keys.js';
import { OAUTH_RECORDS } from '../src/auth/oauth/adapter.js';
import { keysCommand } from '../src/keys-cli.js';
import { tempDir, testConfig } from './harness.js';
import { listenOAuthApp, type OAuthApp } from './oauth-app.js';
import { authorizeUrl, Browser, codeFlow, csrfOf, locationOf, pkce, registerClient, signIn, tokenRequest } from './oauth-signin.js';

const clock = manualClock(Date.now());
let app: OAuthApp;
let base: string;
const keys: Record<string, string> = {};

async function register(email: string): Promise<string> {
  const r = await fetch(`${base}/api/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email }) });
  return ((await r.json()) as { api_key: string }).api_key;
}
const info = (token: string) => fetch(`${base}/api/auth/info`, { headers: { authorization: `Bearer ${token}` } });

beforeAll(async () => {
  app = await listenOAuthApp({}, { clock });
  base = app.url;
  for (const who of ['a', 'b', 'c', 'd']) keys[who] = await register(`${who}@example.com`);
});
afterAll(async () => {
  await app.close();
});

describe('tokens act for their key', () => {
  it('REST accepts the access token wherever a key is, and a plan change applies at once', async () => {
    const { access } = await codeFlow(base, keys.a!);
    const r = await info(access);
    expect(r.status).toBe(200);
    expect(((await r.json()) as { plan: string; email: string })).toMatchObject({ plan: 'free', email: 'a@example.com' });
    await setPlan(app.services.store, 'a@example.com', 'pro');
    expect(((await (await info(access)).json()) as { plan: string }).plan).toBe('pro');
  });

  it('a removed key stops its tokens at once', async () => {
    const { access } = await codeFlow(base, keys.b!);
    expect((await info(access)).status).toBe(200);
    await app.services.store.collection(API_KEYS).delete('b@example.com');
    const r = await info(access);
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });

  it('an expired access token (1 h) is 401 invalid_token', async () => {
    const { access } = await codeFlow(base, keys.c!);
    expect((await info(access)).status).toBe(200);
    clock.advance(3601_000);
    const r = await info(access);
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toContain('error="invalid_token"');
    expect(((await r.json()) as { error: { message: string } }).error.message).toMatch(/unknown, expired or revoked/);
  });

  it('revocation (RFC 7009) ends an access token', async () => {
    const { access, clientId } = await codeFlow(base, keys.d!);
    const rv = await fetch(`${base}/oauth/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: access, client_id: clientId }).toString() });
    expect(rv.status).toBe(200);
    expect((await info(access)).status).toBe(401);
  });

  it('the store keeps no token, only its hash', async () => {
    const { access, refresh } = await codeFlow(base, keys.d!);
    const all = JSON.stringify(await app.services.store.collection(OAUTH_RECORDS).query());
    expect(all).not.toContain(access);
    expect(all).not.toContain(refresh);
    // …and a token is still found by it.
    expect(all).toContain('"model":"AccessToken"');
    expect((await info(access)).status).toBe(200);
  });
});

describe('refresh tokens rotate; a replayed one revokes the grant', () => {
  it('rotation, then replay', async () => {
    const { clientId, refresh } = await codeFlow(base, keys.d!);
    const one = await tokenRequest(base, { grant_type: 'refresh_token', refresh_token: refresh, client_id: clientId });
    expect(one.status).toBe(200);
    expect(one.json.refresh_token).not.toBe(refresh);
    const access2 = String(one.json.access_token);
    expect((await info(access2)).status).toBe(200);
    const replay = await tokenRequest(base, { grant_type: 'refresh_token', refresh_token: refresh, client_id: clientId });
    expect(replay.status).toBe(400);
    expect(replay.json.error).toBe('invalid_grant');
    // The whole grant is gone: the rotated refresh token and the access token it gave.
    const next = await tokenRequest(base, { grant_type: 'refresh_token', refresh_token: String(one.json.refresh_token), client_id: clientId });
    expect(next.json.error).toBe('invalid_grant');
    expect((await info(access2)).status).toBe(401);
  });
});

describe('attacks', () => {
  const codeFor = async (clientId: string, challenge: string) => (await signIn(authorizeUrl(base, { clientId, challenge }), keys.d!)).searchParams.get('code')!;
  const exchange = (clientId: string, code: string, verifier: string) =>
    tokenRequest(base, { grant_type: 'authorization_code', code, redirect_uri: 'http://127.0.0.1:9/callback', code_verifier: verifier, client_id: clientId });

  it('a wrong PKCE verifier gets no token', async () => {
    const clientId = await registerClient(base);
    const code = await codeFor(clientId, pkce().challenge);
    const r = await exchange(clientId, code, pkce().verifier);
    expect(r.status).toBe(400);
    expect(r.json.error).toBe('invalid_grant');
  });

  it('the plain PKCE method is refused', async () => {
    const clientId = await registerClient(base);
    const { verifier } = pkce();
    const res = await new Browser().get(authorizeUrl(base, { clientId, challenge: verifier, method: 'plain' }).toString());
    const back = new URL(locationOf(res, base));
    expect(back.origin + back.pathname).toBe('http://127.0.0.1:9/callback');
    expect(back.searchParams.get('error')).toBe('invalid_request');
    expect(back.searchParams.get('code')).toBeNull();
    expect(back.searchParams.get('state')).toBe('st-123');
  });

  it('a code is good once: a replay fails and revokes what the first use gave', async () => {
    const clientId = await registerClient(base);
    const { verifier, challenge } = pkce();
    const code = await codeFor(clientId, challenge);
    const first = await exchange(clientId, code, verifier);
    expect(first.status).toBe(200);
    const again = await exchange(clientId, code, verifier);
    expect(again.json.error).toBe('invalid_grant');
    expect((await info(String(first.json.access_token))).status).toBe(401);
  });

  it("a code of one client is refused to another", async () => {
    const owner = await registerClient(base);
    const thief = await registerClient(base);
    const { verifier, challenge } = pkce();
    const code = await codeFor(owner, challenge);
    const r = await exchange(thief, code, verifier);
    expect(r.json.error).toBe('invalid_grant');
  });

  it('a redirect URI that was not registered gets an error page, never a redirect', async () => {
    const clientId = await registerClient(base);
    const res = await new Browser().get(authorizeUrl(base, { clientId, challenge: pkce().challenge, redirectUri: 'https://evil.example/cb' }).toString());
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(await res.text()).toContain('redirect_uri');
    const unknown = await new Browser().get(authorizeUrl(base, { clientId: 'no-such-client', challenge: pkce().challenge }).toString());
    expect(unknown.status).toBe(400);
    expect(unknown.headers.get('location')).toBeNull();
  });

  it('a token for another resource is not issued', async () => {
    const clientId = await registerClient(base);
    const res = await new Browser().get(authorizeUrl(base, { clientId, challenge: pkce().challenge, resource: 'https://other.example/mcp' }).toString());
    const back = new URL(locationOf(res, base));
    expect(back.searchParams.get('error')).toBe('invalid_target');
    expect(back.searchParams.get('code')).toBeNull();
  });

  it('the sign-in form refuses a post without its CSRF token, or without the interaction cookie', async () => {
    const clientId = await registerClient(base);
    const browser = new Browser();
    const page = locationOf(await browser.get(authorizeUrl(base, { clientId, challenge: pkce().challenge }).toString()), base);
    const html = await (await browser.get(page)).text();
    const forged = await browser.post(page, { csrf: 'x'.repeat(43), api_key: keys.d!, action: 'approve' });
    expect(forged.status).toBe(403);
    expect(forged.headers.get('location')).toBeNull();
    // As many characters as the token, more bytes (not ASCII): refused the same way, not a 500.
    const wide = await browser.post(page, { csrf: 'é' + csrfOf(html).slice(1), api_key: keys.d!, action: 'approve' });
    expect(wide.status).toBe(403);
    // Another site's form: the browser sends no SameSite=Lax cookie with a cross-site POST.
    const cross = await new Browser().post(page, { csrf: csrfOf(html), api_key: keys.d!, action: 'approve' });
    expect(cross.status).toBe(400);
    expect(cross.headers.get('location')).toBeNull();
  });

  it('the sign-in page is never cached nor framed, and a wrong key is refused on it', async () => {
    const clientId = await registerClient(base, 'http://127.0.0.1:9/callback', 'Name <b>bold</b>');
    const browser = new Browser();
    const page = locationOf(await browser.get(authorizeUrl(base, { clientId, challenge: pkce().challenge }).toString()), base);
    const res = await browser.get(page);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    const html = await res.text();
    expect(html).toContain('Name &#60;b&#62;bold&#60;/b&#62;');
    expect(html).toContain('127.0.0.1:9');
    const wrong = await browser.post(page, { csrf: csrfOf(html), api_key: 'dtb_' + 'x'.repeat(32), action: 'approve' });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toContain('not a known API key');
  });

  it('deny sends the user back with access_denied and the state', async () => {
    const clientId = await registerClient(base);
    const browser = new Browser();
    const page = locationOf(await browser.get(authorizeUrl(base, { clientId, challenge: pkce().challenge }).toString()), base);
    const html = await (await browser.get(page)).text();
    const resume = locationOf(await browser.post(page, { csrf: csrfOf(html), action: 'deny' }), base);
    const back = new URL(locationOf(await browser.get(resume), base));
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('state')).toBe('st-123');
  });

  it('an e-mail gets a new free key on the page, shown once, and signing in with it works', async () => {
    const clientId = await registerClient(base);
    const browser = new Browser();
    const { verifier, challenge } = pkce();
    const page = locationOf(await browser.get(authorizeUrl(base, { clientId, challenge }).toString()), base);
    const html = await (await browser.get(page)).text();
    const made = await browser.post(page, { csrf: csrfOf(html), email: 'new@example.com', action: 'register' });
    expect(made.status).toBe(200);
    const madeHtml = await made.text();
    const key = /<code>(dtb_[A-Za-z0-9]{32})<\/code>/.exec(madeHtml)?.[1];
    expect(key).toBeDefined();
    const resume = locationOf(await browser.post(page, { csrf: csrfOf(madeHtml), api_key: key!, action: 'approve' }), base);
    const back = new URL(locationOf(await browser.get(resume), base));
    const t = await exchange(clientId, back.searchParams.get('code')!, verifier);
    expect(t.status).toBe(200);
    expect(((await (await info(String(t.json.access_token))).json()) as { email: string }).email).toBe('new@example.com');
  });
});

describe('devtoolbox keys: grants', () => {
  it('the admin route lists a key\'s grants and revoke-grants ends them with their tokens', async () => {
    const admin = await listenOAuthApp({ ADMIN_TOKEN: 'admin-token-0123456789' });
    try {
      const r = await fetch(`${admin.url}/api/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'grants@example.com' }) });
      const key = ((await r.json()) as { api_key: string }).api_key;
      const { access, clientId, refresh } = await codeFlow(admin.url, key);
      const h = { authorization: 'Bearer admin-token-0123456789', 'content-type': 'application/json' };
      const list = (await (await fetch(`${admin.url}/admin/keys`, { headers: h })).json()) as { keys: Array<{ email: string; grants?: Array<{ client_id: string }> }> };
      expect(list.keys.find((k) => k.email === 'grants@example.com')?.grants?.map((g) => g.client_id)).toStrictEqual([clientId]);
      const rv = await fetch(`${admin.url}/admin/keys/revoke-grants`, { method: 'POST', headers: h, body: JSON.stringify({ email: 'grants@example.com' }) });
      expect(await rv.json()).toMatchObject({ email: 'grants@example.com', revoked: 1 });
      expect((await fetch(`${admin.url}/api/auth/info`, { headers: { authorization: `Bearer ${access}` } })).status).toBe(401);
      const again = await tokenRequest(admin.url, { grant_type: 'refresh_token', refresh_token: refresh, client_id: clientId });
      expect(again.json.error).toBe('invalid_grant');
    } finally {
      await admin.close();
    }
  });
});

describe('devtoolbox keys on the data dir', () => {
  it('list shows a key\'s grants; revoke-grants ends them', async () => {
    const dir = tempDir();
    const one = await listenOAuthApp({ DATA_DIR: dir });
    let clientId: string;
    try {
      const r = await fetch(`${one.url}/api/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'cli@example.com' }) });
      ({ clientId } = await codeFlow(one.url, ((await r.json()) as { api_key: string }).api_key));
    } finally {
      await one.close();
    }
    const config = testConfig({ DATA_DIR: dir });
    let out = '';
    const io = { out: (s: string) => void (out += s), err: (s: string) => void (out += s) };
    expect(await keysCommand(['list'], config, io, {})).toBe(0);
    expect(out).toMatch(new RegExp(`cli@example\\.com\\n  grant: client ${clientId} until \\d{4}-`));
    out = '';
    expect(await keysCommand(['revoke-grants', 'CLI@example.com'], config, io, {})).toBe(0);
    expect(out).toMatch(/cli@example\.com \(dtb_\w{4}…\): 1 grant revoked/);
    out = '';
    expect(await keysCommand(['list'], config, io, {})).toBe(0);
    expect(out).not.toContain('grant:');
  });
});
