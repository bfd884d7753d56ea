import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { listenTestApp, type ListeningApp } from './harness.js';
import { describeNeeding } from './machine.js';

// Debian's Chromium (apt-get install chromium; .ci/run installs it). A test tool's own browser
// download cannot work on these machines, so only this binary is used.
const CHROMIUM = '/usr/bin/chromium';
const chromiumNeed = { program: CHROMIUM, present: fs.existsSync(CHROMIUM), install: 'apt-get install -y chromium (.ci/run installs it)' };

const OUT_DIR = path.join(import.meta.dirname, '..', 'test-output');

describeNeeding(chromiumNeed, '/docs and short links in Chromium', () => {
  let t: ListeningApp;
  let browser: Browser;
  let context: BrowserContext;
  let fixture: http.Server;
  let fixtureUrl = '';
  /** Every request the pages tried to send anywhere but the two loopback servers. */
  const offsite: string[] = [];
  /** Console errors (CSP violations, failed loads, script errors). */
  const consoleErrors: string[] = [];

  beforeAll(async () => {
    fixture = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><title>Fixture landing</title><h1 id="landed">landed on ${req.url}</h1>`);
    });
    await new Promise<void>((r) => fixture.listen(0, '127.0.0.1', r));
    fixtureUrl = `http://127.0.0.1:${(fixture.address() as AddressInfo).port}`;
    [t, browser] = await Promise.all([
      listenTestApp(),
      chromium.launch({
        executablePath: CHROMIUM,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      }),
    ]);
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    // Swagger UI renders every tool's operation: on a slow, busy machine (the suite runs files in
    // parallel) a click there took over 10 s to settle. A bound against hangs, not a speed check.
    context.setDefaultTimeout(30_000);
    // The machine may have no internet: anything not served by our two servers is refused and noted.
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(`${t.url}/`) || url.startsWith(`${fixtureUrl}/`) || url.startsWith('data:')) return route.continue();
      offsite.push(url);
      return route.abort();
    });
    context.on('console', (msg) => {
      if (msg.type() === 'error') consoleErrors.push(msg.text());
    });
  }, 20_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await new Promise<void>((r) => (fixture ? fixture.close(() => r()) : r()));
  });

  it('runs POST /api/base-convert with "try it" and shows "ff" for 255; screenshot in test-output/docs.png', async () => {
    const page = await context.newPage();
    await page.goto(`${t.url}/docs`);
    const summary = page.locator('.opblock-summary-path[data-path="/api/base-convert"]');
    await summary.click();
    const op = page.locator('.opblock', { has: summary });
    await op.locator('button.try-out__btn').click();
    const body = op.locator('textarea.body-param__text');
    await body.fill('{"value":"255"}');
    await op.locator('button.execute').click();
    const shown = op.locator('.live-responses-table .response-col_description pre').first();
    await shown.waitFor();
    const text = (await shown.textContent()) ?? '';
    expect(text).toContain('"hex": "ff"');
    expect(JSON.parse(text)).toStrictEqual({ success: true, input: '255', from: 'dec', dec: '255', bin: '11111111', oct: '377', hex: 'ff' });
    // The status column of the live response: a real 200 from this server, not a CORS failure.
    expect((await op.locator('.live-responses-table .response .response-col_status').first().textContent())?.trim()).toBe('200');

    // Grouped: every tool family of the registry is a section of the page.
    for (const g of t.registry.groups) {
      await page.locator(`.opblock-tag-section h3[data-tag="${g.tag.name}"]`).waitFor();
    }
    fs.mkdirSync(OUT_DIR, { recursive: true });
    await page.screenshot({ path: path.join(OUT_DIR, 'docs.png'), fullPage: true });
    expect(fs.statSync(path.join(OUT_DIR, 'docs.png')).size).toBeGreaterThan(10_000);
    await page.close();

    expect(offsite).toStrictEqual([]);
    expect(consoleErrors).toStrictEqual([]);
  }, 120_000);

  it('renders the landing page with the MCP URL and a link to /docs', async () => {
    const page = await context.newPage();
    await page.goto(`${t.url}/`);
    expect(await page.locator('#mcp-url').textContent()).toBe(`${t.services.config.publicBaseUrl}/mcp`);
    expect(await page.locator('#stdio-command').textContent()).toBe('npx -y devtoolbox-mcp stdio');
    expect(JSON.parse((await page.locator('#config-http').textContent()) ?? '')).toStrictEqual({
      mcpServers: { devtoolbox: { type: 'http', url: `${t.services.config.publicBaseUrl}/mcp` } },
    });
    await page.locator('nav.links a[href="/docs"]').click();
    await page.waitForURL(`${t.url}/docs`);
    await page.locator('.opblock-summary-path[data-path="/api/base-convert"]').waitFor();
    await page.close();
    expect(offsite).toStrictEqual([]);
    expect(consoleErrors).toStrictEqual([]);
  }, 120_000);

  it('opens /s/{code} of a created short link and lands on the loopback fixture page', async () => {
    expect(t.registry.get('url_shorten'), 'the url_shorten tool is in the registry').toBeDefined();
    const created = await fetch(`${t.url}/api/shorten`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${fixtureUrl}/landing?from=short-link`, code: 'browser-test' }),
    });
    const link = (await created.json()) as { success: boolean; code: string; shortUrl: string };
    expect(created.status, JSON.stringify(link)).toBe(201);
    const probe = await fetch(`${t.url}/s/does-not-exist`, { redirect: 'manual' });
    const probeBody = (await probe.json()) as { error?: { message?: string } };
    expect(probeBody.error?.message ?? '', 'GET /s/{code} is mounted').not.toMatch(/^No route/);

    const page = await context.newPage();
    const res = await page.goto(`${t.url}/s/${link.code}`);
    expect(page.url()).toBe(`${fixtureUrl}/landing?from=short-link`);
    expect(res?.status()).toBe(200);
    expect(await page.title()).toBe('Fixture landing');
    expect(await page.locator('#landed').textContent()).toBe('landed on /landing?from=short-link');
    await page.close();

    const stats = await fetch(`${t.url}/api/shorten?code=${link.code}`);
    expect(((await stats.json()) as { clicks: number }).clicks).toBe(1);
  });
});
