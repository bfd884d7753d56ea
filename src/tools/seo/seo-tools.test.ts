import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnyTool } from '../../registry.js';
import { toolHarness, useToolHarness, type ToolHarness } from '../../../test/harness.js';
import { HOSTILE_DIVS, startFixtureSite, type FixtureSite } from '../../../test/fixtures/seo/site.js';
import { growth, GROWTH_TIMEOUT_MS, MAX_GROWTH } from '../../../test/growth.js';
import { metaExtract } from './meta-extract.js';
import { seoCheck } from './seo-check.js';

const t = useToolHarness();
let site: FixtureSite;
let S: string;
beforeAll(async () => {
  site = await startFixtureSite();
  S = site.url;
});
afterAll(async () => {
  await site.close();
});

const meta = (path: string, format?: string) => t.call(metaExtract, { url: S + path, ...(format ? { format } : {}) });
const seo = (path: string, format?: string) => t.call(seoCheck, { url: S + path, ...(format ? { format } : {}) });
const failure = async (tool: AnyTool, input: Record<string, unknown>, h: ToolHarness = t) => {
  const { code, message } = await h.failure(tool, input);
  return { code, message };
};

const notHttps = { severity: 'error', code: 'not_https', message: 'The page is not served over HTTPS' };
const noCanonical = { severity: 'warning', code: 'canonical_missing', message: 'The page declares no <link rel="canonical">' };
const noViewport = { severity: 'error', code: 'viewport_missing', message: 'The page has no <meta name="viewport">; it will not render well on phones' };
const noDescription = { severity: 'error', code: 'description_missing', message: 'The page has no meta description' };
const noOg = { severity: 'warning', code: 'og_missing', message: 'The page has no Open Graph tags (og:title, og:description, og:image)' };
const noTwitter = { severity: 'info', code: 'twitter_card_missing', message: 'The page has no twitter:card tag' };
const noJsonLd = { severity: 'info', code: 'structured_data_missing', message: 'The page has no valid JSON-LD structured data' };
const noFavicon = { severity: 'info', code: 'favicon_missing', message: 'The page declares no icon; browsers will try /favicon.ico' };
const noCharset = { severity: 'info', code: 'charset_missing', message: 'Neither the Content-Type header nor a <meta charset> declares the encoding' };

describe('meta_extract', () => {
  it('extracts every field of a complete page', async () => {
    expect(await meta('/complete.html')).toStrictEqual({
      url: `${S}/complete.html`,
      status: 200,
      title: 'Complete Page & Friends — Devtoolbox Fixture',
      description: 'A complete fixture page with every tag an SEO checker looks for, used by the devtoolbox-mcp tests.',
      canonical: `${S}/complete.html`,
      lang: 'en',
      favicon: `${S}/static/icon.png`,
      og: {
        title: 'Complete Page',
        description: 'Every tag in place.',
        image: ['/img/cover-1.png', 'https://cdn.example.com/cover-2.png'],
        type: 'website',
      },
      twitter: { card: 'summary_large_image', site: '@devtoolbox' },
      structuredData: [{ '@context': 'https://schema.org', '@type': 'WebPage', name: 'Complete Page' }],
      seo: { score: 90, grade: 'A', issues: [notHttps] },
    });
  });

  it('gives the summary shape', async () => {
    expect(await meta('/complete.html', 'summary')).toStrictEqual({
      url: `${S}/complete.html`,
      title: 'Complete Page & Friends — Devtoolbox Fixture',
      description: 'A complete fixture page with every tag an SEO checker looks for, used by the devtoolbox-mcp tests.',
      image: `${S}/img/cover-1.png`,
      seo: { score: 90 },
    });
  });

  it('follows two redirects and reports the final URL', async () => {
    const before = site.hits.length;
    const r = await meta('/redirect-1', 'summary');
    expect(r).toStrictEqual({ ...(await meta('/complete.html', 'summary')), url: `${S}/complete.html` });
    expect(site.hits.slice(before, before + 3)).toStrictEqual(['/redirect-1', '/redirect-2', '/complete.html']);
  });

  it('decodes a Shift_JIS page declared by <meta charset>', async () => {
    expect(await meta('/sjis.html')).toStrictEqual({
      url: `${S}/sjis.html`,
      status: 200,
      title: '日本語のページ：表示テスト',
      description: 'シフトJISで書かれたページです。ソフトウェアの表示を確認します。',
      canonical: null,
      lang: 'ja',
      favicon: `${S}/favicon.ico`,
      og: { title: '日本語タイトル' },
      twitter: {},
      structuredData: [],
      seo: {
        score: 69,
        grade: 'D',
        issues: [
          notHttps,
          noViewport,
          { severity: 'warning', code: 'description_too_short', message: 'The meta description is 33 characters; aim for 50-160' },
          noCanonical,
          { severity: 'warning', code: 'og_incomplete', message: 'Open Graph tags missing: og:description, og:image' },
          noTwitter,
          noJsonLd,
          noFavicon,
        ],
      },
    });
  });

  it('decodes a GBK page declared by the Content-Type header', async () => {
    expect(await meta('/gbk.html', 'summary')).toStrictEqual({
      url: `${S}/gbk.html`,
      title: '中文页面测试 — 编码',
      description: '这是一个用GBK编码的网页，用来测试字符集的识别。',
      image: null,
      seo: { score: 69 },
    });
  });

  it('keeps duplicate tags as arrays, uses the first title/description/canonical and resolves against <base>', async () => {
    const r = await meta('/duplicates.html');
    expect(r).toStrictEqual({
      url: `${S}/duplicates.html`,
      status: 200,
      title: 'First title of the page',
      description: 'First description that is long enough to be a decent summary of the page.',
      canonical: 'https://static.example.org/fr/page.html',
      lang: 'fr-CA',
      favicon: 'https://static.example.org/fr/touch.png',
      og: { title: 'Duplicates', image: ['one.png', 'two.png', 'three.png'], 'image:width': ['100', '200'] },
      twitter: { card: 'summary', title: 'Tw "quoted" title' },
      structuredData: [],
      seo: {
        score: 67,
        grade: 'D',
        issues: [
          notHttps,
          { severity: 'warning', code: 'title_multiple', message: 'The page has 2 <title> elements; the first one is used' },
          { severity: 'warning', code: 'description_multiple', message: 'The page has 2 meta descriptions; the first one is used' },
          { severity: 'warning', code: 'h1_multiple', message: 'The page has 2 <h1> headings; use one for the main topic' },
          { severity: 'warning', code: 'canonical_multiple', message: 'The page declares 2 canonical links; search engines may ignore them all' },
          { severity: 'warning', code: 'og_incomplete', message: 'Open Graph tags missing: og:description' },
          { severity: 'info', code: 'canonical_other_url', message: 'The canonical URL https://static.example.org/fr/page.html differs from the page URL' },
          noJsonLd,
        ],
      },
    });
    expect(Object.getPrototypeOf(r['og'])).toBe(Object.prototype);
  });

  it('skips broken JSON-LD blocks, flattens arrays and keeps @graph', async () => {
    const r = await meta('/broken-jsonld.html');
    expect([r['structuredData'], (r['seo'] as { score: number }).score]).toStrictEqual([
      [
        { '@context': 'https://schema.org', '@type': 'Organization', name: 'Acme' },
        { '@type': 'Person', name: 'Ada' },
        { '@type': 'Person', name: 'Grace' },
        {
          '@context': 'https://schema.org',
          '@graph': [
            { '@type': 'WebSite', '@id': '#site' },
            { '@type': 'WebPage', isPartOf: { '@id': '#site' } },
          ],
        },
        { '@type': 'Event', name: 'Wrapped </scrip in a comment' },
      ],
      64,
    ]);
    expect((r['seo'] as { issues: unknown[] }).issues).toContainEqual({
      severity: 'warning',
      code: 'structured_data_invalid',
      message: '3 of 7 JSON-LD blocks could not be parsed',
    });
  });

  it('refuses non-HTML resources with 502', async () => {
    expect(await failure(metaExtract, { url: `${S}/data.json` })).toStrictEqual({
      code: 'UPSTREAM_ERROR',
      message: 'The URL answered with content type "application/json", expected text/html or application/xhtml+xml',
    });
    expect(await failure(metaExtract, { url: `${S}/image.png` })).toStrictEqual({
      code: 'UPSTREAM_ERROR',
      message: 'The URL answered with content type "image/png", expected text/html or application/xhtml+xml',
    });
    expect(await failure(metaExtract, { url: `${S}/missing.txt` })).toStrictEqual({
      code: 'UPSTREAM_ERROR',
      message: 'The URL answered HTTP 404 with content type "text/plain", not an HTML page',
    });
  });

  it('reports progress: fetched, parsed, scored', async () => {
    const seen: unknown[] = [];
    await t.run(metaExtract, { url: `${S}/poor.html` }, { progress: async (...a) => void seen.push(a) });
    expect(seen).toStrictEqual([
      [1, 3, 'fetched'],
      [2, 3, 'parsed'],
      [3, 3, 'scored'],
    ]);
  });

  it('rejects bad URLs with 4xx, never 500', async () => {
    const run = (url: unknown) => failure(metaExtract, { url });
    expect(await run('not a url')).toStrictEqual({ code: 'INVALID_INPUT', message: 'Not a valid absolute URL' });
    expect(await run('ftp://127.0.0.1/x')).toStrictEqual({ code: 'URL_NOT_ALLOWED', message: 'Only http and https URLs can be fetched' });
    expect((await run('')).code).toBe('INVALID_INPUT');
    expect((await run('http://x/' + 'a'.repeat(3000))).code).toBe('INVALID_INPUT');
    expect((await run(42)).code).toBe('INVALID_INPUT');
  });

  it('refuses loopback when private fetches are not allowed', async () => {
    const strict = await toolHarness({ env: { FETCH_ALLOW_PRIVATE: 'false' } });
    try {
      const err = await failure(seoCheck, { url: `${S}/complete.html` }, strict);
      expect(err.code).toBe('URL_NOT_ALLOWED');
    } finally {
      await strict.close();
    }
  });
});

describe('seo_check', () => {
  it('scores a poor page with every issue, full format', async () => {
    const r = await seo('/poor.html', 'full');
    expect({ ...r, checks: undefined }).toStrictEqual({
      url: `${S}/poor.html`,
      score: 21,
      grade: 'F',
      issues: [
        notHttps,
        { severity: 'error', code: 'title_missing', message: 'The page has no <title>' },
        noDescription,
        { severity: 'error', code: 'h1_missing', message: 'The page has no <h1> heading' },
        noViewport,
        { severity: 'error', code: 'noindex', message: 'The page asks not to be indexed (meta robots)' },
        { severity: 'warning', code: 'img_alt_missing', message: '2 of 3 images have no alt attribute' },
        noCanonical,
        { severity: 'warning', code: 'lang_missing', message: 'The <html> element has no lang attribute' },
        noOg,
        noTwitter,
        noJsonLd,
        noFavicon,
        noCharset,
        { severity: 'info', code: 'doctype_missing', message: 'The page has no <!doctype html>; browsers render it in quirks mode' },
      ],
      checks: undefined,
    });
    expect((r['checks'] as Array<{ id: string; passed: boolean; points: number }>).map((c) => [c.id, c.passed, c.points])).toStrictEqual([
      ['status', true, 10],
      ['https', false, 0],
      ['title', false, 0],
      ['description', false, 0],
      ['h1', false, 0],
      ['img_alt', false, 3],
      ['canonical', false, 3],
      ['viewport', false, 0],
      ['lang', false, 2],
      ['robots', false, 0],
      ['og', false, 3],
      ['twitter_card', false, 0],
      ['structured_data', false, 0],
      ['favicon', false, 0],
      ['charset', false, 0],
      ['doctype', false, 0],
      ['page_size', true, 0],
    ]);
  });

  it('seo_check without format answered summary, the published description says full: the default lists the checks', async () => {
    expect(await seo('/complete.html', 'summary')).toStrictEqual({ url: `${S}/complete.html`, score: 90, grade: 'A', issues: [notHttps] });
    const full = await seo('/complete.html', 'full');
    expect(await seo('/complete.html')).toStrictEqual(full);
    expect((full['checks'] as unknown[]).length).toBe(17);
    expect((full['checks'] as unknown[]).slice(0, 3)).toStrictEqual([
      { id: 'status', passed: true, message: 'The page answered HTTP 200', weight: 10, points: 10 },
      { id: 'https', passed: false, message: 'The page is not served over HTTPS', weight: 10, points: 0 },
      { id: 'title', passed: true, message: 'The title is 44 characters', weight: 14, points: 14 },
    ]);
  });

  it('analyses an HTML 404 page and caps its score', async () => {
    expect(await seo('/missing.html', 'summary')).toStrictEqual({
      url: `${S}/missing.html`,
      score: 40,
      grade: 'F',
      issues: [
        { severity: 'error', code: 'status_not_200', message: 'The page answered HTTP 404, not 200' },
        notHttps,
        noDescription,
        noViewport,
        noCanonical,
        noOg,
        noTwitter,
        noJsonLd,
        noFavicon,
        noCharset,
      ],
    });
  });

  it('reads noindex from the X-Robots-Tag header', async () => {
    expect(await seo('/noindex.html', 'summary')).toStrictEqual({
      url: `${S}/noindex.html`,
      score: 40,
      grade: 'F',
      issues: [
        notHttps,
        { severity: 'error', code: 'noindex', message: 'The page asks not to be indexed (X-Robots-Tag)' },
        { severity: 'info', code: 'canonical_other_url', message: `The canonical URL ${S}/complete.html differs from the page URL` },
      ],
    });
  });

  it('analyses only the first 2 MiB of a huge page', async () => {
    const r = await seo('/huge.html');
    expect([r['score'], (r['issues'] as Array<{ code: string }>).map((i) => i.code)]).toStrictEqual([
      54,
      ['not_https', 'description_missing', 'h1_missing', 'viewport_missing', 'canonical_missing', 'og_missing', 'html_too_large', 'twitter_card_missing', 'structured_data_missing', 'favicon_missing'],
    ]);
  });

  // html-scan.test.ts times the scanner alone; this times the whole tool (fetch, decode, scan,
  // checks) at n and 4n unclosed <div> in CPU time: a tree builder grows ≈ 16× (35 s for 50,000).
  it('handles 50,000 unclosed <div> in linear time and finds the <h1> after them', async () => {
    const h1Found = (r: Record<string, unknown>) => [r['score'], (r['checks'] as Array<{ id: string; passed: boolean }>).find((c) => c.id === 'h1')?.passed];
    expect(h1Found(await seo('/hostile.html', 'full'))).toStrictEqual([64, true]);
    // Up to 400,000 <div> (4n), inside the 2 MiB the tools read.
    const g = await growth(async (n) => expect(h1Found(await seo(`/hostile-${n}.html`, 'full'))).toStrictEqual([64, true]), { from: HOSTILE_DIVS, max: 400_000 });
    expect(g.ratio, g.text).toBeLessThan(MAX_GROWTH);
  }, GROWTH_TIMEOUT_MS);

  it('seo_check quoted a megabyte-long canonical URL and lang in its messages: every message is cut to 2,000 characters', async () => {
    const r = await seo('/long-canonical.html', 'full');
    const messages = [...(r['issues'] as Array<{ message: string }>), ...(r['checks'] as Array<{ message: string }>)].map((m) => m.message);
    expect(messages.some((m) => m.startsWith(`The canonical URL ${S}/aaaa`))).toBe(true);
    expect(Math.max(...messages.map((m) => m.length))).toBe(2000);
    expect(JSON.stringify(r).length).toBeLessThan(100_000);
  });

  it('gives the same page the same result', async () => {
    expect(await seo('/duplicates.html', 'full')).toStrictEqual(await seo('/duplicates.html', 'full'));
  });
});
