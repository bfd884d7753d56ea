import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeNeeding } from './machine.js';
import { listenOAuthApp, type OAuthApp } from './oauth-app.js';
import { authorizeUrl, pkce, registerClient, tokenRequest } from './oauth-signin.js';

const CHROMIUM = '/usr/bin/chromium';
const chromiumNeed = { program: CHROMIUM, present: fs.existsSync(CHROMIUM), install: 'apt-get install -y chromium (.ci/run installs it)' };

describeNeeding(chromiumNeed, 'the sign-in page in Chromium (issue 30)', () => {
  let app: OAuthApp;
  let browser: Browser;
  let context: BrowserContext;
  let fixture: http.Server;
  let callback = '';
  const consoleErrors: string[] = [];

  beforeAll(async () => {
    // The client's redirect target: a loopback page that shows what it received.
    fixture = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><title>Client</title><h1 id="back">back at the client</h1>`);
    });
    await new Promise<void>((r) => fixture.listen(0, '127.0.0.1', r));
    callback = `http://127.0.0.1:${(fixture.address() as AddressInfo).port}/callback`;
    [app, browser] = await Promise.all([
      listenOAuthApp(),
      chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] }),
    ]);
    context = await browser.newContext({ viewport: { width: 1024, height: 800 }, javaScriptEnabled: false });
    context.setDefaultTimeout(10_000);
    context.on('console', (msg) => {
      if (msg.type() === 'error') consoleErrors.push(msg.text());
    });
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await new Promise<void>((r) => (fixture ? fixture.close(() => r()) : r()));
  });

  it('works without JavaScript: the page names the client, the key is pasted, approve returns to the client with a code that redeems', async () => {
    const r = await fetch(`${app.url}/api/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'chromium@example.com' }) });
    const key = ((await r.json()) as { api_key: string }).api_key;
    const clientId = await registerClient(app.url, callback, 'Chromium Assistant');
    const { verifier, challenge } = pkce();
    const page = await context.newPage();
    await page.goto(authorizeUrl(app.url, { clientId, challenge, redirectUri: callback }).toString());
    expect(new URL(page.url()).pathname).toMatch(/^\/oauth\/interaction\//);
    expect(await page.locator('#client-name').textContent()).toBe('Chromium Assistant');
    expect(await page.locator('#redirect-host').textContent()).toBe(new URL(callback).host);
    // The /docs stylesheet loaded under the page's own CSP.
    expect(await page.evaluate(() => document.styleSheets.length)).toBeGreaterThan(0);
    await page.fill('#api_key', key);
    await page.click('#approve');
    await page.waitForURL((u) => u.toString().startsWith(callback)).catch(async (e: unknown) => {
      throw new Error(`stuck at ${page.url()}: ${(await page.content()).slice(0, 600)} ${consoleErrors.join(' | ')}`, { cause: e });
    });
    expect(await page.locator('#back').textContent()).toBe('back at the client');
    const back = new URL(page.url());
    expect(back.searchParams.get('state')).toBe('st-123');
    const t = await tokenRequest(app.url, { grant_type: 'authorization_code', code: back.searchParams.get('code')!, redirect_uri: callback, code_verifier: verifier, client_id: clientId });
    expect(t.status).toBe(200);
    // Nothing of the key in any URL the browser visited.
    expect(page.url()).not.toContain(key);
    expect(consoleErrors).toStrictEqual([]);
    await page.close();
  }, 30_000);

  it('cannot be framed', async () => {
    const clientId = await registerClient(app.url, callback);
    const target = authorizeUrl(app.url, { clientId, challenge: pkce().challenge, redirectUri: callback }).toString();
    const page = await context.newPage();
    await page.goto(`${app.url}/docs`);
    await page.setContent(`<iframe id="f" src="${target}"></iframe>`);
    // The frame follows the redirect to the sign-in page, which Chromium then refuses to render
    // (X-Frame-Options DENY / frame-ancestors 'none'): no form inside. Rendered, #approve would be there.
    const frameEl = page.locator('#f');
    await frameEl.waitFor();
    await page.waitForTimeout(1500);
    const frame = await (await frameEl.elementHandle())!.contentFrame();
    const inside = frame ? await frame.locator('#approve').count() : 0;
    expect(inside).toBe(0);
    // The same page outside a frame has the form: the check above looks at the right thing.
    const direct = await context.newPage();
    await direct.goto(target);
    expect(await direct.locator('#approve').count()).toBe(1);
    await direct.close();
    await page.close();
  }, 30_000);
});
