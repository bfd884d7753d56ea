import type { Context, Hono } from 'hono';
import type { Config } from '../config.js';
import { ToolError } from '../errors.js';
import type { RouteKit } from '../http/kit.js';
import type { Registry } from '../registry.js';
import { buildAssets, iconAsset, type StaticAsset } from './assets.js';
import { iconPng } from './icons.js';
import { docsPage, landingPage, OWN_ASSETS } from './pages.js';

/**
 * What the pages may load: only this server. Swagger UI styles some elements inline; images
 * include data: URIs from its stylesheet. `connect-src 'self'` keeps "try it" on this origin.
 */
export const DOCS_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': DOCS_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

function acceptsGzip(c: Context): boolean {
  return /\bgzip\b/i.test(c.req.header('accept-encoding') ?? '');
}

/** Swagger UI files change only with the package version (in their ?v=); ours revalidate; icons change between releases only. */
const CACHE = { long: 'public, max-age=86400', revalidate: 'no-cache', icon: 'public, max-age=604800' } as const;

function serveAsset(c: Context, asset: StaticAsset, cache: string): Response {
  const gzip = asset.compressible && acceptsGzip(c);
  const etag = gzip ? asset.etag.replace(/"$/, '-gz"') : asset.etag;
  const headers: Record<string, string> = {
    'content-type': asset.contentType,
    etag,
    'x-content-type-options': 'nosniff',
    'cache-control': cache,
  };
  if (asset.compressible) headers.vary = 'Accept-Encoding';
  const match = c.req.header('if-none-match');
  if (match !== undefined && match.split(',').some((t) => t.trim() === etag)) return new Response(null, { status: 304, headers });
  const body = gzip ? asset.gzipped() : asset.body();
  if (gzip) headers['content-encoding'] = 'gzip';
  headers['content-length'] = String(body.byteLength);
  return new Response(c.req.method === 'HEAD' ? null : (body as Uint8Array<ArrayBuffer>), { status: 200, headers });
}

/**
 * GET / (landing page: MCP connection), GET /docs (Swagger UI over /openapi.json) and the
 * static files they use under /docs/assets/ and /icons/, all from this server: the pages work offline.
 * Pages are built once, from the registry, on first request.
 */
export function docsRoutes(registry: Registry, config: Pick<Config, 'publicBaseUrl'>): (app: Hono, helpers: RouteKit) => void {
  return (app, helpers) => {
    let built: { assets: Map<string, StaticAsset>; docs: string; landing: string } | undefined;
    const pages = () => {
      if (!built) {
        const { assets, version } = buildAssets(OWN_ASSETS);
        built = { assets, docs: docsPage(version), landing: landingPage(registry, config.publicBaseUrl) };
      }
      return built;
    };
    app.get('/', (c) => c.body(pages().landing, 200, PAGE_HEADERS));
    app.get('/docs', (c) => c.body(pages().docs, 200, PAGE_HEADERS));
    app.get('/docs/', (c) => c.redirect('/docs', 301));
    app.get('/docs/assets/:name', (c) => {
      const name = c.req.param('name');
      const asset = pages().assets.get(name);
      if (!asset) return helpers.errorResponse(c, new ToolError('NOT_FOUND', `No asset ${name.slice(0, 100)}`));
      return serveAsset(c, asset, name in OWN_ASSETS ? CACHE.revalidate : CACHE.long);
    });
    // Icons (server and families): PNG, already compressed; a week of cache, an ETag after that.
    const icons = new Map<string, StaticAsset>();
    app.get('/icons/:file', (c) => {
      const file = c.req.param('file');
      let asset = icons.get(file);
      if (!asset) {
        const png = iconPng(file);
        if (!png) return helpers.errorResponse(c, new ToolError('NOT_FOUND', `No icon ${file.slice(0, 100)}`));
        icons.set(file, (asset = iconAsset(png)));
      }
      return serveAsset(c, asset, CACHE.icon);
    });
  };
}
