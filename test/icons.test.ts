/**
 * The icons: rendered from assets/icons/*.svg by scripts/icons.ts into src/docs/icons.generated.ts
 * (checked here for staleness, like schemas/), one per family plus the server's, served under
 * /icons/ as PNG and shown on / and /docs.
 */
import fs from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { ICON_MODULE, iconsModule, renderIcons } from '../scripts/icons-render.js';
import { ICON_NAMES, ICON_SIZES, iconPng, SERVER_ICON } from '../src/docs/icons.js';
import { createRegistry } from '../src/tools/index.js';
import { useTestApp } from './harness.js';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Width and height from a PNG's IHDR chunk (the first chunk, right after the signature). */
function pngSize(png: Buffer): { width: number; height: number } {
  expect(png.subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true);
  expect(png.toString('latin1', 12, 16)).toBe('IHDR');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

const expectedFiles = ICON_NAMES.flatMap((n) => ICON_SIZES.map((s) => `${n}-${s}.png`));

describe('icons', () => {
  it('src/docs/icons.generated.ts is what scripts/icons.ts renders from the SVGs (run `npx tsx scripts/icons.ts` when this fails)', async () => {
    const rendered = await renderIcons();
    expect([...rendered.keys()]).toStrictEqual(expectedFiles);
    expect(fs.readFileSync(ICON_MODULE, 'utf8')).toBe(iconsModule(rendered));
  });

  it('has the server icon and one per family, nothing else', () => {
    const families = createRegistry().groups.map((g) => g.name);
    expect([...ICON_NAMES].sort()).toStrictEqual([SERVER_ICON, ...families].sort());
  });

  it('every icon is a PNG of its stated size', () => {
    for (const file of expectedFiles) {
      const size = Number(/-(\d+)\.png$/.exec(file)![1]);
      expect(pngSize(iconPng(file)!), file).toStrictEqual({ width: size, height: size });
    }
  });
});

describe('GET /icons/<name>-<size>.png', () => {
  const t = useTestApp();
  let landing: string;
  let docs: string;
  let css: string;
  beforeAll(async () => {
    landing = await (await t.request('GET', '/')).text();
    docs = await (await t.request('GET', '/docs')).text();
    css = await (await t.request('GET', '/docs/assets/devtoolbox.css')).text();
  });

  it('serves each icon as image/png, uncompressed, cached for a week, with ETag revalidation', async () => {
    for (const file of expectedFiles) {
      const res = await t.request('GET', `/icons/${file}`, undefined, { 'accept-encoding': 'gzip' });
      expect(res.status, file).toBe(200);
      expect(res.headers.get('content-type'), file).toBe('image/png');
      expect(res.headers.get('cache-control'), file).toBe('public, max-age=604800');
      expect(res.headers.get('content-encoding'), file).toBeNull();
      expect(res.headers.get('x-content-type-options'), file).toBe('nosniff');
      expect(Buffer.from(await res.arrayBuffer()).equals(iconPng(file)!), file).toBe(true);
      const again = await t.request('GET', `/icons/${file}`, undefined, { 'if-none-match': res.headers.get('etag')! });
      expect(again.status, file).toBe(304);
    }
  });

  it('answers 404 NOT_FOUND for anything else', async () => {
    for (const bad of ['/icons/devtoolbox-64.png', '/icons/devtoolbox.svg', '/icons/..%2Fpackage.json', '/icons/constructor', '/icons/__proto__', '/icons/']) {
      const res = await t.request('GET', bad);
      expect(res.status, bad).toBe(404);
      expect(((await res.json()) as { error: { code: string } }).error.code, bad).toBe('NOT_FOUND');
    }
  });

  it('shows the server icon on / and /docs, and each family icon beside its heading on /', async () => {
    for (const html of [landing, docs]) {
      expect(html).toContain(`class="dtb-icon dtb-icon-${SERVER_ICON}`);
      expect(html).toContain(`<link rel="icon" type="image/png" href="/icons/${SERVER_ICON}-48.png" sizes="48x48">`);
    }
    for (const g of createRegistry().groups) expect(landing, g.name).toMatch(new RegExp(`<h3 id="group-${g.name}"><span class="dtb-icon dtb-icon-${g.name}" aria-hidden="true"></span>`));
  });

  it('the stylesheet names every icon at both sizes, and every URL it names is served', async () => {
    const urls = [...new Set([...css.matchAll(/url\(([^)]+)\)/g)].map((m) => m[1]!))];
    expect(urls.sort()).toStrictEqual(expectedFiles.map((f) => `/icons/${f}`).sort());
    for (const u of urls) expect((await t.request('GET', u)).status, u).toBe(200);
  });
});
