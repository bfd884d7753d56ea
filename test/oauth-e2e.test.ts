import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2, UnauthorizedError } from '@modelcontextprotocol/client';
import { listenOAuthApp, type OAuthApp } from './oauth-app.js';
import { authorizeUrl, Browser, csrfOf, locationOf, MemoryOAuthClient, pkce, registerClient, signIn } from './oauth-signin.js';

let app: OAuthApp;
let apiKey: string;
beforeAll(async () => {
  app = await listenOAuthApp({ RATE_LIMITS: 'on', LOG_LEVEL: process.env.DBG ? 'debug' : 'silent' });
  const reg = await fetch(`${app.url}/api/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'signin@example.com' }) });
  apiKey = ((await reg.json()) as { api_key: string }).api_key;
});
afterAll(async () => {
  await app.close();
});

const ERAS = { modern: { pin: '2026-07-28' }, legacy: 'legacy' } as const;

describe('the SDK v2 client signs in through /mcp/auth (DCR, PKCE, resource) and calls as the key', () => {
  for (const [era, mode] of Object.entries(ERAS)) {
    it(`${era} era`, async () => {
      const oauth = new MemoryOAuthClient('http://127.0.0.1:9/callback');
      const endpoint = new URL(`${app.url}/mcp/auth`);
      const first = new ClientV2({ name: 'assistant', version: '1.0.0' }, { versionNegotiation: { mode } });
      const transport = new HttpV2(endpoint, { authProvider: oauth });
      await expect(first.connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
      // Discovery from the 401 led it to register (DCR) and to our authorize endpoint with PKCE S256 and the resource.
      expect(oauth.info?.client_id).toBeTypeOf('string');
      const auth = oauth.authUrl!;
      expect(auth.origin + auth.pathname).toBe(`${app.url}/oauth/authorize`);
      expect(auth.searchParams.get('code_challenge_method')).toBe('S256');
      expect(auth.searchParams.get('resource')).toBe(`${app.url}/mcp`);
      const back = await signIn(auth, apiKey);
      expect(back.origin + back.pathname).toBe('http://127.0.0.1:9/callback');
      expect(back.searchParams.get('state')).toBe(auth.searchParams.get('state'));
      expect(back.searchParams.get('iss')).toBe(app.url);
      await transport.finishAuth(back.searchParams);
      expect(oauth.saved).toMatchObject({ token_type: expect.stringMatching(/^bearer$/i), expires_in: 3600, scope: expect.stringContaining('mcp') });
      expect(oauth.saved?.refresh_token).toBeTypeOf('string');
      expect(oauth.saved?.access_token).not.toMatch(/^dtb_/);

      const c = new ClientV2({ name: 'assistant', version: '1.0.0' }, { versionNegotiation: { mode } });
      await c.connect(new HttpV2(endpoint, { authProvider: oauth }));
      try {
        expect(era === 'modern' ? c.getProtocolEra() : 'legacy').toBe(era);
        const r = await c.callTool({ name: 'auth_info', arguments: {} });
        expect(r.isError).toBeFalsy();
        const info = r.structuredContent as { plan: string; email: string; usage: { day: { used: number } } };
        expect(info.plan).toBe('free');
        expect(info.email).toBe('signin@example.com');
        // Limits are counted on the key: a metered call through the token shows in the key's own usage.
        await c.callTool({ name: 'base_convert', arguments: { value: '255' } });
        const viaKey = await fetch(`${app.url}/api/auth/info`, { headers: { authorization: `Bearer ${apiKey}` } });
        const usage = ((await viaKey.json()) as { usage: { day: { used: number } } }).usage.day.used;
        expect(usage).toBeGreaterThanOrEqual(info.usage.day.used + 1);
      } finally {
        await c.close();
      }
    }, 60_000);
  }
});

describe('the sign-in page applies the registration limit', () => {
  it('keys made on the page count against the address, as POST /api/auth/register does', async () => {
    const clientId = await registerClient(app.url);
    const browser = new Browser();
    const page = locationOf(await browser.get(authorizeUrl(app.url, { clientId, challenge: pkce().challenge }).toString()), app.url);
    let html = await (await browser.get(page)).text();
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await browser.post(page, { csrf: csrfOf(html), email: `limit${i}@example.com`, action: 'register' });
      statuses.push(res.status);
      html = await res.text();
    }
    // One key was registered in beforeAll: four more fit in the hour's five, then 429.
    expect(statuses).toStrictEqual([200, 200, 200, 200, 429, 429]);
    expect(html).toContain('Too many registrations from this address: 5 per hour');
  });
});
