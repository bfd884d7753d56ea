/**
 * Issue 31, rendering: each view in headless Chromium (Debian's), inside a test host built on the
 * ext-apps SDK's AppBridge (test/apps-host/host.ts, bundled here with esbuild) that a loopback
 * server serves together with a forward of /mcp to the running devtoolbox server. The tests check
 * what a person sees, that the view's own tool calls reach the server, and that no request leaves
 * the host page's origin. `UPDATE_SCREENSHOTS=1` writes docs/apps/<view>.png (nothing compares pixels).
 * Needs `npm run build` (dist/views).
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { build } from 'esbuild';
import jsQRModule from 'jsqr';
import { chromium, type Browser, type BrowserContext, type Frame, type Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { listenTestApp, type ListeningApp } from './harness.js';
import { describeNeeding } from './machine.js';

// jsqr ships CommonJS with a default export; under NodeNext its typings see the module object.
const jsQR = jsQRModule as unknown as typeof jsQRModule.default;
const CHROMIUM = '/usr/bin/chromium';
const chromiumNeed = { program: CHROMIUM, present: fs.existsSync(CHROMIUM), install: 'apt-get install -y chromium (.ci/run installs it)' };
const root = path.join(import.meta.dirname, '..');
const SHOTS = path.join(root, 'docs', 'apps');
/** A page with a few SEO problems: no description, two h1, an image without alt, no canonical. */
const FIXTURE_PAGE =
  '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">' +
  '<title>Devtoolbox fixture page for the SEO view</title><meta property="og:title" content="Fixture card title">' +
  '<meta property="og:image" content="https://cdn.example.com/card.png"><meta name="twitter:card" content="summary_large_image"></head>' +
  '<body><h1>One</h1><h1>Two</h1><img src="x.png"><p>Body text.</p></body></html>';

describeNeeding(chromiumNeed, 'MCP Apps views in a test host (Chromium)', () => {
  let t: ListeningApp;
  let browser: Browser;
  let context: BrowserContext;
  let host: http.Server;
  let hostUrl = '';
  /** Every request the page or its frames tried to send anywhere but the host's origin. */
  const offsite: string[] = [];
  /** The tools/call requests that reached devtoolbox through the host, in order. */
  const served: Array<{ name: string; arguments: Record<string, unknown> }> = [];
  const consoleErrors: string[] = [];
  /** An Authorization header the forward adds (a view of an owner's link), or none. */
  let hostAuth: string | undefined;

  beforeAll(async () => {
    expect(fs.existsSync(path.join(root, 'dist', 'views', 'qrcode.html')), 'run `npm run build` first: it builds dist/views').toBe(true);
    const bundle = await build({ entryPoints: [path.join(import.meta.dirname, 'apps-host', 'host.ts')], bundle: true, format: 'esm', platform: 'browser', write: false, absWorkingDir: root });
    const page = `<!doctype html><html><head><meta charset="utf-8"><title>test host</title></head><body><script type="module">${bundle.outputFiles[0]!.text.replace(/<\/script/gi, '<\\/script')}</script></body></html>`;
    t = await listenTestApp();
    host = http.createServer((req, res) => {
      if (req.method === 'GET' && req.url === '/page.html') {
        // The page devtoolbox fetches for seo_check and meta_extract (the server fetches it, not the browser).
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        return void res.end(FIXTURE_PAGE);
      }
      if (req.method === 'GET' && req.url === '/host.html') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        return void res.end(page);
      }
      if (req.method === 'POST' && req.url === '/mcp') {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const body = Buffer.concat(chunks);
          const msg = JSON.parse(body.toString('utf8')) as { method: string; params: { name?: string; arguments?: Record<string, unknown> } };
          if (msg.method === 'tools/call') served.push({ name: msg.params.name!, arguments: msg.params.arguments ?? {} });
          // Forwarded without the page's Origin: devtoolbox sees a same-machine client.
          const headers: Record<string, string> = {};
          for (const k of ['content-type', 'accept', 'mcp-protocol-version', 'mcp-method', 'mcp-name']) if (typeof req.headers[k] === 'string') headers[k] = req.headers[k] as string;
          if (hostAuth) headers.authorization = hostAuth;
          fetch(`${t.url}/mcp`, { method: 'POST', headers, body }).then(
            async (r) => {
              res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
              res.end(Buffer.from(await r.arrayBuffer()));
            },
            () => void res.writeHead(502).end(),
          );
        });
        return;
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => host.listen(0, '127.0.0.1', r));
    hostUrl = `http://127.0.0.1:${(host.address() as AddressInfo).port}`;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    context = await browser.newContext({ viewport: { width: 820, height: 1000 }, deviceScaleFactor: 1 });
    context.setDefaultTimeout(15_000);
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(`${hostUrl}/`) || url.startsWith('data:') || url === 'about:srcdoc' || url === 'about:blank') return route.continue();
      offsite.push(url);
      return route.abort();
    });
    context.on('console', (msg) => {
      if (msg.type() === 'error') consoleErrors.push(msg.text());
    });
  }, 60_000);

  afterAll(async () => {
    expect(offsite, 'requests that left the host page’s origin').toStrictEqual([]);
    await browser?.close();
    await t?.close();
    await new Promise<void>((r) => (host ? host.close(() => r()) : r()));
  });

  /** Opens the host on one tool call and waits until the view has its result; returns the view's frame. */
  async function open(tool: string, args: Record<string, unknown>): Promise<{ page: Page; view: Frame }> {
    const page = await context.newPage();
    await page.goto(`${hostUrl}/host.html#${encodeURIComponent(JSON.stringify({ tool, args }))}`);
    await page.waitForFunction(() => (window as unknown as { host: { ready: boolean; error?: string } }).host.ready || (window as unknown as { host: { error?: string } }).host.error !== undefined);
    const error = await page.evaluate(() => (window as unknown as { host: { error?: string } }).host.error);
    expect(error).toBeUndefined();
    const view = page.frames().find((f) => f !== page.mainFrame())!;
    expect(view).toBeDefined();
    return { page, view };
  }

  /** docs/apps/<name>.png of the view's frame, only when UPDATE_SCREENSHOTS=1. */
  async function screenshot(page: Page, name: string): Promise<void> {
    if (process.env.UPDATE_SCREENSHOTS !== '1') return;
    fs.mkdirSync(SHOTS, { recursive: true });
    await page.locator('#view').screenshot({ path: path.join(SHOTS, `${name}.png`) });
  }

  /** Decodes the QR code in a PNG screenshot. */
  async function decode(png: Buffer): Promise<string | undefined> {
    const { data, info } = await sharp(png).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    return jsQR(new Uint8ClampedArray(data.buffer, data.byteOffset, data.length), info.width, info.height)?.data;
  }

  it('qrcode_generate: the code decodes from a screenshot; its content; a re-render reaches the server; PNG and SVG download through the host', async () => {
    const content = 'https://example.com/apps?q=devtoolbox';
    const { page, view } = await open('qrcode_generate', { content, format: 'png', size: 256 });
    await expect.poll(() => view.locator('#content').textContent()).toBe(content);
    expect(await decode(await view.locator('#qr').screenshot())).toBe(content);
    await screenshot(page, 'qrcode');

    const before = served.length;
    await view.locator('#opt-size').fill('320');
    await view.locator('#opt-ec').selectOption('H');
    await view.locator('#rerender').click();
    await expect.poll(() => view.locator('#ec').textContent()).toBe('H');
    expect(served.slice(before)).toStrictEqual([{ name: 'qrcode_generate', arguments: { content, format: 'svg', size: 320, fgColor: '000000', bgColor: 'ffffff', ecLevel: 'H' } }]);
    expect(await view.locator('#size').textContent()).toBe('320 × 320 px');
    expect(await decode(await view.locator('#qr').screenshot())).toBe(content);

    await view.locator('#download-png').click();
    await view.locator('#download-svg').click();
    const downloads = await page.evaluate(() => (window as unknown as { host: { downloads: Array<Array<{ resource: { mimeType: string; blob?: string; text?: string } }>> } }).host.downloads);
    expect(downloads.map((d) => d[0]!.resource.mimeType)).toStrictEqual(['image/png', 'image/svg+xml']);
    expect(Buffer.from(downloads[0]![0]!.resource.blob!, 'base64').subarray(1, 4).toString()).toBe('PNG');
    expect(downloads[1]![0]!.resource.text).toContain('<svg');
    await page.close();
  }, 60_000);

  for (const tool of ['seo_check', 'meta_extract'] as const) {
    it(`${tool}: the score and grade, every issue code under its severity, the search and social previews as text`, async () => {
      const url = `${hostUrl}/page.html`;
      const client = await t.mcpClient();
      const direct = (await client.callTool({ name: tool, arguments: { url } })).structuredContent as Record<string, any>;
      const score: number = tool === 'seo_check' ? direct.score : direct.seo.score;
      const issues: Array<{ severity: string; code: string }> = tool === 'seo_check' ? direct.issues : direct.seo.issues;
      expect(issues.length).toBeGreaterThan(2);
      const { page, view } = await open(tool, { url });
      await expect.poll(() => view.locator('#gauge').getAttribute('data-score')).toBe(String(score));
      if (tool === 'seo_check') expect(await view.locator('#gauge').getAttribute('data-grade')).toBe(direct.grade);
      for (const sev of ['error', 'warning', 'info']) {
        const codes = issues.filter((i) => i.severity === sev).map((i) => i.code);
        const shown = codes.length === 0 ? [] : await view.locator(`.group-${sev} code`).allTextContents();
        expect(shown, sev).toStrictEqual(codes);
      }
      await expect.poll(() => view.locator('#search-preview').textContent()).toContain('Devtoolbox fixture page for the SEO view');
      expect(await view.locator('#social-preview').textContent()).toContain('https://cdn.example.com/card.png');
      expect(await view.locator('#social-preview').textContent()).toContain('Fixture card title');
      if (tool === 'seo_check') {
        expect(served.at(-1)).toStrictEqual({ name: 'meta_extract', arguments: { url, format: 'full' } });
        await screenshot(page, 'seo');
      }
      await page.close();
    }, 60_000);
  }

  /** 45 people: three pages of 20; every seventh age empty (a null). */
  const CSV = ['name,age,city', ...Array.from({ length: 45 }, (_, i) => `person${String(i + 1).padStart(2, '0')},${i % 7 === 3 ? '' : ((i * 37) % 90) + 10},${['Paris', 'Lima', 'Oslo'][i % 3]}`)].join('\n');

  it('file_process parse: a paged table of the rows; sorting by a column; the next page', async () => {
    const { page, view } = await open('file_process', { action: 'parse', content: CSV, format: 'csv' });
    await expect.poll(() => view.locator('#page-info').textContent()).toBe('Rows 1–20 of 45');
    const firstColumn = () => view.locator('#table tbody tr td:first-child').allTextContents();
    expect(await firstColumn()).toStrictEqual(Array.from({ length: 20 }, (_, i) => `person${String(i + 1).padStart(2, '0')}`));
    await screenshot(page, 'table');
    // Sorted by age, ascending: the youngest first, the empty ages last.
    await view.locator('th button', { hasText: 'age' }).click();
    const ages = Array.from({ length: 45 }, (_, i) => (i % 7 === 3 ? null : ((i * 37) % 90) + 10)).filter((a): a is number => a !== null).sort((a, b) => a - b);
    await expect.poll(() => view.locator('#table tbody tr td:nth-child(2)').allTextContents()).toStrictEqual(ages.slice(0, 20).map(String));
    await view.locator('#next').click();
    await view.locator('#next').click();
    expect(await view.locator('#page-info').textContent()).toBe('Rows 41–45 of 45');
    expect(await view.locator('#table tbody tr td:nth-child(2)').allTextContents()).toStrictEqual([...ages.map(String), ...Array<string>(45 - ages.length).fill('∅')].slice(40));
    await page.close();
  }, 60_000);

  it('file_process analyze: one card per column with its type, nulls and statistics', async () => {
    const client = await t.mcpClient();
    const direct = (await client.callTool({ name: 'file_process', arguments: { action: 'analyze', content: CSV, format: 'csv' } })).structuredContent as {
      columns: Array<{ name: string; type: string; nullCount: number; stats: Record<string, number> }>;
    };
    const { page, view } = await open('file_process', { action: 'analyze', content: CSV, format: 'csv' });
    await expect.poll(() => view.locator('.column-card h2').allTextContents()).toStrictEqual(['name', 'age', 'city']);
    expect(await view.locator('.column-card .type').allTextContents()).toStrictEqual(direct.columns.map((c) => c.type));
    expect(await view.locator('.column-card .nulls').allTextContents()).toStrictEqual(direct.columns.map((c) => String(c.nullCount)));
    const age = direct.columns[1]!.stats;
    const card = view.locator('.column-card').nth(1);
    expect([await card.locator('.stat-min').textContent(), await card.locator('.stat-max').textContent()]).toStrictEqual([String(age.min), String(age.max)]);
    expect(Number(await card.locator('.stat-mean').textContent())).toBeCloseTo(age.mean!, 3);
    await screenshot(page, 'table-analyze');
    await page.close();
  }, 60_000);

  it('file_process convert: the produced content, and its rows read back by the view through the server', async () => {
    const { page, view } = await open('file_process', { action: 'convert', content: CSV, format: 'csv', to: 'json' });
    await expect.poll(() => view.locator('#page-info').textContent()).toBe('Rows 1–20 of 45');
    expect(served.at(-1)).toMatchObject({ name: 'file_process', arguments: { action: 'parse', format: 'json' } });
    expect(JSON.parse((await view.locator('#content pre').textContent())!)).toHaveLength(45);
    await page.close();
  }, 60_000);

  it('image_convert: the result beside the input, with format, dimensions and bytes of each', async () => {
    const client = await t.mcpClient();
    const qr = await client.callTool({ name: 'qrcode_generate', arguments: { content: 'image view', format: 'png', size: 96 } });
    const png = (qr.content as Array<{ type: string; data?: string }>).find((b) => b.type === 'image')!.data!;
    const args = { data: png, format: 'webp', width: 48 };
    const direct = (await client.callTool({ name: 'image_convert', arguments: args })).structuredContent as { width: number; height: number; bytes: number };
    const { page, view } = await open('image_convert', args);
    await expect.poll(() => view.locator('#result .format').textContent()).toBe('WEBP');
    expect(await view.locator('#result .dimensions').textContent()).toBe(`${direct.width} × ${direct.height} px`);
    expect(await view.locator('#result .bytes').getAttribute('data-bytes')).toBe(String(direct.bytes));
    expect(await view.locator('#input .format').textContent()).toBe('PNG');
    expect(await view.locator('#input .dimensions').textContent()).toBe('96 × 96 px');
    expect(await view.locator('#input .bytes').getAttribute('data-bytes')).toBe(String(Buffer.from(png, 'base64').length));
    // Both images decoded in the frame (the result from its content block).
    expect(await view.locator('#result img').evaluate((i: HTMLImageElement) => i.naturalWidth)).toBe(48);
    await screenshot(page, 'image');
    await page.close();
  }, 60_000);

  it('cron tasks: status, next runs and logs; done and delete from the view reach the server', async () => {
    // Over loopback HTTP, as the host's calls arrive: keyless tasks belong to the client address.
    const client = await t.httpClient();
    const agent = 'view-agent';
    const made: string[] = [];
    for (const [name, schedule] of [['Morning report', '0 9 * * *'], ['Poll the queue', '*/5 * * * *']] as const) {
      const r = await client.callTool({ name: 'cron_task_create', arguments: { agent_id: agent, name, schedule, timezone: 'UTC' } });
      made.push((r.structuredContent as { task: { task_id: string } }).task.task_id);
    }
    const listed = (await client.callTool({ name: 'cron_task_list', arguments: { agent_id: agent } })).structuredContent as { tasks: Array<{ task_id: string; name: string }> };
    const { page, view } = await open('cron_task_list', { agent_id: agent });
    const cards = view.locator('article.task');
    await expect.poll(() => cards.locator('h2').allTextContents()).toStrictEqual(listed.tasks.map((x) => x.name));
    expect(await cards.locator('.task-status').allTextContents()).toStrictEqual(['scheduled', 'scheduled']);
    // Three next runs of each schedule (cron_parse through the host).
    expect((await cards.first().locator('.next-runs').textContent())!.split(' · ')).toHaveLength(3);
    const first = listed.tasks[0]!.task_id;
    const second = listed.tasks[1]!.task_id;
    await screenshot(page, 'tasks');

    await view.locator(`article[data-task-id="${first}"] button.done`).click();
    await expect.poll(() => view.locator(`article[data-task-id="${first}"] .run-count`).textContent()).toBe('1');
    expect(await view.locator(`article[data-task-id="${first}"] .logs li`).first().textContent()).toMatch(/^done /);
    expect(served.some((c) => c.name === 'cron_task_done' && c.arguments.task_id === first && c.arguments.status === 'done')).toBe(true);

    await view.locator(`article[data-task-id="${second}"] button.delete`).click();
    await view.locator(`article[data-task-id="${second}"] button.delete`).click();
    await expect.poll(() => view.locator('article.task').count()).toBe(1);
    expect(served.some((c) => c.name === 'cron_task_delete' && c.arguments.task_id === second)).toBe(true);
    const after = (await client.callTool({ name: 'cron_task_list', arguments: { agent_id: agent } })).structuredContent as { tasks: Array<{ task_id: string; run_count: number }> };
    expect(after.tasks.map((x) => [x.task_id, x.run_count])).toStrictEqual([[first, 1]]);
    expect(made.sort()).toStrictEqual([first, second].sort());
    await page.close();
  }, 60_000);

  it('url_stats: clicks and last click; a refresh (through the server) shows a click made meanwhile', async () => {
    const client = await t.mcpClient();
    const made = (await client.callTool({ name: 'url_shorten', arguments: { url: 'https://example.com/a/long/path', code: 'view-link' } })).structuredContent as { shortUrl: string };
    const { page, view } = await open('url_stats', { code: 'view-link' });
    await expect.poll(() => view.locator('#clicks').textContent()).toBe('0');
    expect(await view.locator('#last-click').textContent()).toBe('never');
    expect(await view.locator('#long-url').textContent()).toBe('https://example.com/a/long/path');
    expect(await view.locator('#short-url').textContent()).toBe(made.shortUrl);
    // A click (the redirect, from this process, not the page), then the view's own refresh.
    expect((await fetch(`${t.url}/s/view-link`, { redirect: 'manual' })).status).toBe(302);
    const stats = async () => ((await client.callTool({ name: 'url_stats', arguments: { code: 'view-link' } })).structuredContent as { clicks: number }).clicks;
    await expect.poll(stats).toBe(1);
    await view.locator('#refresh').click();
    await expect.poll(() => view.locator('#clicks').textContent()).toBe('1');
    expect(await view.locator('#last-click').textContent()).not.toBe('never');
    expect(served.at(-1)).toStrictEqual({ name: 'url_stats', arguments: { code: 'view-link' } });
    await screenshot(page, 'link');
    await page.close();
  }, 60_000);

  it('url_stats of an owned link: the visits per day as bars, top referrers, browsers, systems, devices, and bots apart', async () => {
    const reg = await fetch(`${t.url}/api/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'view-owner@example.com' }) });
    const key = ((await reg.json()) as { api_key: string }).api_key;
    const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const made = await fetch(`${t.url}/api/shorten`, { method: 'POST', headers: auth, body: JSON.stringify({ url: 'https://example.com/launch', code: 'view-owned' }) });
    expect(made.status).toBe(201);
    const chrome = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
    const iphone = 'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1';
    const visits: [string, string | undefined][] = [
      [chrome, 'https://news.example.com/story?id=1'],
      [chrome, 'https://news.example.com/other'],
      [iphone, undefined],
      [chrome, 'https://www.google.com/search?q=x'],
      ['Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)', undefined],
      ['Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)', undefined],
    ];
    for (const [ua, referer] of visits) {
      const r = await fetch(`${t.url}/s/view-owned`, { headers: { 'user-agent': ua, ...(referer ? { referer } : {}) }, redirect: 'manual' });
      expect(r.status).toBe(302);
    }
    hostAuth = `Bearer ${key}`;
    try {
      const { page, view } = await open('url_stats', { code: 'view-owned' });
      await expect.poll(() => view.locator('#clicks').textContent()).toBe('4');
      const today = new Date().toISOString().slice(0, 10);
      expect(await view.locator('#day-chart rect').count()).toBe(90);
      expect(await view.locator('#day-chart rect').last().getAttribute('data-day')).toBe(today);
      expect(await view.locator('#day-chart rect title').last().textContent()).toBe(`${today}: 4 visits`);
      expect(Number(await view.locator('#day-chart rect').last().getAttribute('height'))).toBeGreaterThan(70); // the busiest day: a full bar
      expect(Number(await view.locator('#day-chart rect').first().getAttribute('height'))).toBe(0);
      expect(await view.locator('#days h2').textContent()).toMatch(new RegExp(`^Visits per day: 4 from \\d{4}-\\d{2}-\\d{2} to ${today} \\(UTC\\)$`));
      const rows = (id: string) => view.locator(`#${id} li`).evaluateAll((lis) => lis.map((li) => `${li.querySelector('.label')!.textContent} ${li.querySelector('.count')!.textContent}`));
      expect(await rows('referrers')).toStrictEqual(['news.example.com 2', 'direct 1', 'www.google.com 1']);
      expect(await rows('browsers')).toStrictEqual(['Chrome 3', 'Safari 1']);
      expect(await rows('os')).toStrictEqual(['Windows 3', 'iOS 1']);
      expect(await rows('devices')).toStrictEqual(['desktop 3', 'mobile 1']);
      expect(await view.locator('#bot-visits').textContent()).toBe('2');
      expect(await rows('bot-names')).toStrictEqual(['Googlebot 1', 'SlackBot 1']);
      expect(served.at(-1)).toStrictEqual({ name: 'url_stats', arguments: { code: 'view-owned' } });
      await screenshot(page, 'link-analytics');
      await page.close();
    } finally {
      hostAuth = undefined;
    }
  }, 60_000);

  it('the views raise no console errors (CSP violations, script errors)', () => {
    expect(consoleErrors).toStrictEqual([]);
  });
});
