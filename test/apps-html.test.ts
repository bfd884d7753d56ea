/**
 * Issue 31: the views' HTML. Each is built from the sources in the repository (dist/views is what
 * scripts/build-views.mjs makes of src/views, byte for byte: not stale) and is self-contained: no
 * element or style loads anything, and the only URLs in it are identifiers no browser fetches
 * (JSON Schema dialect ids and the SVG namespace in the bundled libraries). Needs `npm run build`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { VIEWS, VIEWS_DIR } from '../src/views/index.js';
import { tempDir } from './harness.js';

const root = path.join(import.meta.dirname, '..');

/**
 * URL text that may appear in a view, and why it is never a request: JSON Schema `$schema`
 * identifiers in zod and the SDK, a documentation example and a repository name in the SDK's
 * messages, an IPv6 URL the SDK builds to validate a host, the SVG namespace.
 */
const IDENTIFIERS = new Set([
  'https://json-schema.org/draft/2020-12/schema',
  'http://json-schema.org/draft/2020-12/schema',
  'https://json-schema.org/draft/2019-09/schema',
  'http://json-schema.org/draft/2019-09/schema',
  'https://json-schema.org/draft-07/schema',
  'http://json-schema.org/draft-07/schema',
  'https://json-schema.org/draft-06/schema',
  'http://json-schema.org/draft-06/schema',
  'http://json-schema.org/draft-07/schema#',
  'http://json-schema.org/draft-04/schema#',
  'https://github.com/cfworker',
  'https://*.example.com',
  'http://[${e}]',
  'http://www.w3.org/2000/svg',
]);

/** What in an HTML document would make a browser load something from elsewhere. */
function loads(html: string): string[] {
  const found: string[] = [];
  for (const re of [/<script\b[^>]*\bsrc\s*=/gi, /<link\b/gi, /<(img|iframe|embed|object|audio|video|source|base)\b[^>]*\b(src|href|data)\s*=\s*["']?(https?:)?\/\//gi, /<meta\b[^>]*http-equiv\s*=\s*["']?refresh/gi]) {
    for (const m of html.matchAll(re)) found.push(m[0]);
  }
  // CSS loads through url() and @import: checked in the style sheets (the script's `new URL(…)` is not CSS).
  for (const [, css] of html.matchAll(/<style\b[^>]*>([\s\S]*?)<\/style>/gi)) {
    for (const m of css!.matchAll(/url\(\s*["']?(?!data:)[^)]*\)|@import[^;]*/gi)) found.push(m[0]);
  }
  return found;
}

describe('MCP Apps views: built from the sources, self-contained', () => {
  it('every view in src/views/index.ts has sources and a built document, and nothing else is built', async () => {
    const { viewNames } = (await import(path.join(root, 'scripts', 'build-views.mjs'))) as { viewNames(): string[] };
    expect(viewNames()).toStrictEqual(VIEWS.map((v) => v.name).sort());
    const built = fs.readdirSync(VIEWS_DIR).filter((f) => f.endsWith('.html')).sort();
    expect(built, 'run `npm run build`').toStrictEqual(VIEWS.map((v) => `${v.name}.html`).sort());
  });

  it('dist/views is exactly what the build makes of the sources now, and each document loads nothing from anywhere', async () => {
    const { buildViews } = (await import(path.join(root, 'scripts', 'build-views.mjs'))) as { buildViews(dir: string): Promise<Record<string, number>> };
    const dir = tempDir('dtb-views-');
    const sizes = await buildViews(dir);
    for (const v of VIEWS) {
      const html = fs.readFileSync(path.join(dir, `${v.name}.html`), 'utf8');
      expect(fs.readFileSync(path.join(VIEWS_DIR, `${v.name}.html`), 'utf8') === html, `${v.name}: dist/views is stale; run \`npm run build\``).toBe(true);
      expect(sizes[v.name]).toBe(Buffer.byteLength(html));
      expect(html.startsWith('<!doctype html><html lang="en"><head><meta charset="utf-8">'), v.name).toBe(true);
      expect(loads(html), v.name).toStrictEqual([]);
      const urls = [...new Set(html.match(/https?:\/\/[^\s"'`)\\<>,;]*/g) ?? [])];
      expect(urls.filter((u) => !IDENTIFIERS.has(u)), v.name).toStrictEqual([]);
      // One inline script and one inline style, nothing else executable.
      expect([html.match(/<script\b/gi)?.length, html.match(/<style\b/gi)?.length], v.name).toStrictEqual([1, 1]);
    }
  }, 60_000);

  it('the reference check itself catches what it is for', () => {
    expect(loads('<script src="https://cdn.example/x.js"></script>')).toHaveLength(1);
    expect(loads('<link rel="stylesheet" href="x.css">')).toHaveLength(1);
    expect(loads('<img src="https://a.example/i.png">')).toHaveLength(1);
    expect(loads('<style>body{background:url(//a.example/b.png)}</style>')).toHaveLength(1);
    expect(loads('<style>@import "x.css";</style>')).toHaveLength(1);
    expect(loads('<img src="data:image/png;base64,AAAA">')).toStrictEqual([]);
  });
});
