import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import zlib from 'node:zlib';

/** One file the server hands out under /docs/assets/ or /icons/: bytes, type, and a gzip copy made on first use. */
export interface StaticAsset {
  contentType: string;
  etag: string;
  /** False for formats that are compressed already (PNG): no gzip copy, no Vary. */
  compressible: boolean;
  body(): Buffer;
  gzipped(): Buffer;
}

/** The files of `swagger-ui-dist` that /docs uses; nothing else of the package is reachable. */
const SWAGGER_FILES: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
};

/** The installed swagger-ui-dist: its folder and version (no CDN: the server serves these files). */
export function swaggerUiDist(): { dir: string; version: string } {
  const require = createRequire(import.meta.url);
  // Resolving package.json (not the main module) avoids loading the 1.7 MB bundle into Node.
  const pkgPath = require.resolve('swagger-ui-dist/package.json');
  const pkg = JSON.parse(fs.readFileSync(pkgPath, 'utf8')) as { version: string };
  return { dir: path.dirname(pkgPath), version: pkg.version };
}

function lazyAsset(contentType: string, etag: string, load: () => Buffer): StaticAsset {
  let data: Buffer | undefined;
  let gz: Buffer | undefined;
  const body = () => (data ??= load());
  return { contentType, etag, compressible: true, body, gzipped: () => (gz ??= zlib.gzipSync(body(), { level: 9 })) };
}

/** A PNG icon as an asset: served as is (gzip would not shrink it). */
export function iconAsset(png: Buffer): StaticAsset {
  return { contentType: 'image/png', etag: `"icon-${simpleHash(png)}"`, compressible: false, body: () => png, gzipped: () => png };
}

/** Asset table: the chosen swagger-ui-dist files plus the service's own generated ones. */
export function buildAssets(own: Record<string, { contentType: string; text: string }>): { assets: Map<string, StaticAsset>; version: string } {
  const { dir, version } = swaggerUiDist();
  const assets = new Map<string, StaticAsset>();
  for (const [name, type] of Object.entries(SWAGGER_FILES)) {
    assets.set(name, lazyAsset(type, `"swagger-ui-${version}-${name}"`, () => fs.readFileSync(path.join(dir, name))));
  }
  for (const [name, { contentType, text }] of Object.entries(own)) {
    const data = Buffer.from(text, 'utf8');
    const hash = simpleHash(data);
    assets.set(name, lazyAsset(contentType, `"own-${hash}"`, () => data));
  }
  return { assets, version };
}

function simpleHash(buf: Buffer): string {
  // FNV-1a: enough for an ETag of a few kilobytes that only change between releases.
  let h = 0x811c9dc5;
  for (const b of buf) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h.toString(16);
}
