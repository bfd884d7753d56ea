import { createHash, randomBytes } from 'node:crypto';
import type { OAuthClientProvider } from '@modelcontextprotocol/client';
import { expect } from 'vitest';

type ClientMetadata = OAuthClientProvider['clientMetadata'];
type Info = Awaited<ReturnType<OAuthClientProvider['clientInformation']>>;
type Tokens = Awaited<ReturnType<OAuthClientProvider['tokens']>>;

/** An OAuthClientProvider kept in memory, as a hosted assistant's would be: it records where it was sent. */
export class MemoryOAuthClient implements OAuthClientProvider {
  info: Info;
  saved: Tokens;
  verifier = '';
  authUrl: URL | undefined;
  constructor(
    readonly redirectUrl: string,
    readonly name = 'Test Assistant',
    readonly clientMetadataUrl?: string,
  ) {}
  get clientMetadata(): ClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    } as ClientMetadata;
  }
  clientInformation(): Info {
    return this.info;
  }
  saveClientInformation(i: NonNullable<Info>): void {
    this.info = i;
  }
  tokens(): Tokens {
    return this.saved;
  }
  saveTokens(t: NonNullable<Tokens>): void {
    this.saved = t;
  }
  redirectToAuthorization(url: URL): void {
    this.authUrl = url;
  }
  saveCodeVerifier(v: string): void {
    this.verifier = v;
  }
  codeVerifier(): string {
    return this.verifier;
  }
}

/** A browser's cookie jar, enough for one sign-in (cookies sent on every path of the one origin). */
export class Browser {
  readonly cookies = new Map<string, string>();
  async get(url: string): Promise<Response> {
    return this.#send(url, { method: 'GET' });
  }
  async post(url: string, form: Record<string, string>): Promise<Response> {
    return this.#send(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form).toString() });
  }
  async #send(url: string, init: RequestInit): Promise<Response> {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(url, { ...init, redirect: 'manual', headers: { ...(init.headers as Record<string, string>), ...(cookie ? { cookie } : {}) } });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair!.indexOf('=');
      const name = pair!.slice(0, i);
      const value = pair!.slice(i + 1);
      if (/expires=Thu, 01 Jan 1970/i.test(c) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return res;
  }
}

/** The hidden CSRF field of a sign-in page. */
export function csrfOf(html: string): string {
  const m = /name="csrf" value="([^"]+)"/.exec(html);
  expect(m, 'the sign-in page has a CSRF field').not.toBeNull();
  return m![1]!;
}

/** The location a redirect points to, absolute. */
export function locationOf(res: Response, base: string): string {
  expect([302, 303], `a redirect, got ${res.status}`).toContain(res.status);
  return new URL(res.headers.get('location')!, base).toString();
}

/**
 * What a user does in the browser: opens the authorization URL, lands on the sign-in page, pastes
 * the key and approves. Resolves with the redirect back to the client (its query has code, state, iss).
 */
export async function signIn(authUrl: URL, apiKey: string, browser = new Browser()): Promise<URL> {
  const base = authUrl.origin;
  const pageUrl = locationOf(await browser.get(authUrl.toString()), base);
  expect(new URL(pageUrl).pathname).toMatch(/^\/oauth\/interaction\//);
  const page = await browser.get(pageUrl);
  expect(page.status).toBe(200);
  const html = await page.text();
  const approved = await browser.post(pageUrl, { csrf: csrfOf(html), api_key: apiKey, action: 'approve' });
  const resume = locationOf(approved, base);
  const back = await browser.get(resume);
  return new URL(locationOf(back, base));
}

/** A PKCE pair (RFC 7636, S256). */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** Registers a public client (RFC 7591) and resolves with its id. */
export async function registerClient(base: string, redirectUri = 'http://127.0.0.1:9/callback', name = 'Raw Client'): Promise<string> {
  const r = await fetch(`${base}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: name, redirect_uris: [redirectUri], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' }),
  });
  expect(r.status).toBe(201);
  return ((await r.json()) as { client_id: string }).client_id;
}

/** The authorization URL of a code flow. */
export function authorizeUrl(base: string, p: { clientId: string; challenge: string; redirectUri?: string; resource?: string; method?: string; state?: string }): URL {
  const u = new URL(`${base}/oauth/authorize`);
  u.search = new URLSearchParams({
    response_type: 'code',
    client_id: p.clientId,
    redirect_uri: p.redirectUri ?? 'http://127.0.0.1:9/callback',
    code_challenge: p.challenge,
    code_challenge_method: p.method ?? 'S256',
    scope: 'mcp offline_access',
    resource: p.resource ?? `${base}/mcp`,
    state: p.state ?? 'st-123',
  }).toString();
  return u;
}

/** POST to the token endpoint (a form), resolving with the status and the JSON. */
export async function tokenRequest(base: string, form: Record<string, string>): Promise<{ status: number; json: Record<string, unknown> }> {
  const r = await fetch(`${base}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form).toString() });
  return { status: r.status, json: (await r.json()) as Record<string, unknown> };
}

/** A whole code flow by hand: register, sign in with the key, exchange the code. */
export async function codeFlow(base: string, apiKey: string): Promise<{ clientId: string; access: string; refresh: string }> {
  const clientId = await registerClient(base);
  const { verifier, challenge } = pkce();
  const back = await signIn(authorizeUrl(base, { clientId, challenge }), apiKey);
  const t = await tokenRequest(base, { grant_type: 'authorization_code', code: back.searchParams.get('code')!, redirect_uri: 'http://127.0.0.1:9/callback', code_verifier: verifier, client_id: clientId, resource: `${base}/mcp` });
  expect(t.status, JSON.stringify(t.json)).toBe(200);
  return { clientId, access: String(t.json.access_token), refresh: String(t.json.refresh_token) };
}
