/**
 * From a fetched HTML page to the facts both SEO tools report: decode, scan (html-scan.ts, linear
 * time), then pick the title, description, canonical, favicon, Open Graph / Twitter tags and
 * JSON-LD out of the scan. Pure functions except `fetchPage`, which goes through the guarded
 * fetcher.
 */
import { ToolError } from '../../errors.js';
import type { ToolContext } from '../../registry.js';
import { depthExceeds, MAX_DEPTH } from '../shared.js';
import { decodeHtml } from './charset.js';
import { collapseWhitespace, scanHtml, type Attrs, type ScannedHtml } from './html-scan.js';

/** Only this much of the body is decoded and scanned (the head is at the start anyway). */
export const MAX_PARSED_BYTES = 2 * 1024 * 1024;
/** Largest page downloaded at all (also capped by FETCH_MAX_BYTES); larger ones → 502. */
export const MAX_FETCH_BYTES = 10 * 1024 * 1024;
/** Strings in the output are cut to this many characters. */
export const MAX_OUTPUT_CHARS = 2_000;
/** At most this many og:* (and, separately, twitter:*) values are reported. */
export const MAX_SOCIAL_VALUES = 200;
/** At most this many JSON-LD objects are reported. */
export const MAX_STRUCTURED = 50;

const HTML_TYPES = ['text/html', 'application/xhtml+xml'];

export type SocialTags = Record<string, string | string[]>;

/** Everything the tools report or score about one page. */
export interface PageFacts {
  /** Final URL after redirects. */
  url: string;
  /** The document base URL (`<base href>` resolved against url, else url). */
  baseUrl: string;
  status: number;
  /** First document title (null when there is no <title>). Full length; cut on output. */
  title: string | null;
  titleCount: number;
  description: string | null;
  descriptionCount: number;
  /** Canonical URL, absolute (null when none or not a valid URL). */
  canonical: string | null;
  /** The canonical href as written, when one was declared. */
  canonicalHref: string | null;
  canonicalCount: number;
  lang: string | null;
  favicon: string;
  faviconDeclared: boolean;
  og: SocialTags;
  twitter: SocialTags;
  structuredData: Array<Record<string, unknown>>;
  jsonLdBlocks: number;
  jsonLdInvalid: number;
  viewport: string | null;
  /** Where a noindex came from ('meta robots', 'X-Robots-Tag'), empty when indexable. */
  noindex: string[];
  h1Count: number;
  imgCount: number;
  imgWithoutAlt: number;
  doctype: boolean;
  /** Bytes of HTML received; only the first MAX_PARSED_BYTES were analysed when larger. */
  bytes: number;
  truncated: boolean;
  charsetDeclared: boolean;
}

export function cut(s: string, max = MAX_OUTPUT_CHARS): string {
  if (s.length <= max) return s;
  // Do not leave half a surrogate pair at the end.
  const end = /[\uD800-\uDBFF]/.test(s.charAt(max - 1)) ? max - 1 : max;
  return s.slice(0, end);
}

/** Number of characters as a reader counts them (code points, not UTF-16 units). */
export function charLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

export function resolveUrl(href: string, base: string): string | null {
  try {
    const u = new URL(href.trim(), base);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
  } catch {
    return null;
  }
}

function relTokens(a: Attrs): string[] {
  return (a.get('rel') ?? '').toLowerCase().split(/[\t\n\f\r ]+/).filter(Boolean);
}

/** `og:*` / `twitter:*` values keyed without the prefix; repeated keys become arrays. */
function socialTags(metas: Attrs[], prefix: 'og:' | 'twitter:'): SocialTags {
  const map = new Map<string, string[]>();
  let total = 0;
  for (const m of metas) {
    const content = m.get('content');
    if (content === undefined) continue;
    const key = [m.get('property'), m.get('name')]
      .map((k) => (k ?? '').trim().toLowerCase())
      .find((k) => k.startsWith(prefix) && k.length > prefix.length);
    if (!key) continue;
    const name = cut(key.slice(prefix.length), 200);
    if (name === '__proto__') continue;
    if (total++ >= MAX_SOCIAL_VALUES) break;
    const list = map.get(name) ?? [];
    list.push(cut(content.trim()));
    map.set(name, list);
  }
  const out: SocialTags = {};
  for (const [k, v] of map) out[k] = v.length === 1 ? v[0]! : v;
  return out;
}

/** JSON-LD text → objects. Arrays are flattened one level; `@graph` is kept as written. */
function parseJsonLd(blocks: string[]): { objects: Array<Record<string, unknown>>; invalid: number } {
  const objects: Array<Record<string, unknown>> = [];
  let invalid = 0;
  for (const raw of blocks) {
    // Some CMSs wrap the JSON in an HTML comment or a CDATA section.
    const text = raw
      .trim()
      .replace(/^(?:\/\/\s*)?(?:<!--|<!\[CDATA\[)/, '')
      .replace(/(?:\/\/\s*)?(?:-->|\]\]>)$/, '')
      .trim();
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      invalid++;
      continue;
    }
    // The result is nested a few levels deeper in the output; keep it well inside MAX_DEPTH.
    const items = Array.isArray(value) ? value : [value];
    const ok = items.length > 0 && items.every((v) => typeof v === 'object' && v !== null && !Array.isArray(v)) && !depthExceeds(value, MAX_DEPTH - 8);
    if (!ok) {
      invalid++;
      continue;
    }
    for (const item of items) if (objects.length < MAX_STRUCTURED) objects.push(item as Record<string, unknown>);
  }
  return { objects, invalid };
}

/** Directives of a robots value: "noindex, nofollow" or "googlebot: noindex". */
function robotsNoindex(value: string): boolean {
  return value
    .toLowerCase()
    .split(',')
    .map((t) => t.replace(/^\s*[a-z0-9_-]+\s*:\s*(?=[a-z])/, '').trim())
    .some((t) => t === 'noindex' || t === 'none');
}

/** The facts of a page from its scan, its final URL, status and response headers. */
export function pageFacts(
  scan: ScannedHtml,
  res: { url: string; status: number; headers: Record<string, string>; bytes: number; truncated: boolean; charsetDeclared: boolean },
): PageFacts {
  const base = (scan.baseHref !== null && resolveUrl(scan.baseHref, res.url)) || res.url;
  const metaNamed = (name: string): Attrs[] => scan.metas.filter((m) => (m.get('name') ?? '').trim().toLowerCase() === name);

  const descriptions = metaNamed('description');
  const description = descriptions[0] ? collapseWhitespace(descriptions[0].get('content') ?? '') : null;

  const canonicals = scan.links.filter((l) => relTokens(l).includes('canonical'));
  const canonicalHref = canonicals[0]?.get('href') ?? null;

  const icons = scan.links.filter((l) => relTokens(l).includes('icon'));
  const touch = scan.links.filter((l) => relTokens(l).some((t) => t === 'apple-touch-icon' || t === 'apple-touch-icon-precomposed'));
  const declaredIcon = [...icons, ...touch].map((l) => resolveUrl(l.get('href')!, base)).find((u) => u !== null) ?? null;

  const viewports = metaNamed('viewport');
  const noindex: string[] = [];
  if ([...metaNamed('robots'), ...metaNamed('googlebot')].some((m) => robotsNoindex(m.get('content') ?? ''))) noindex.push('meta robots');
  if (robotsNoindex(res.headers['x-robots-tag'] ?? '')) noindex.push('X-Robots-Tag');

  const { objects, invalid } = parseJsonLd(scan.jsonLd);

  return {
    url: res.url,
    baseUrl: base,
    status: res.status,
    title: scan.titles[0] ?? null,
    titleCount: scan.titles.length,
    description,
    descriptionCount: descriptions.length,
    canonical: canonicalHref === null ? null : resolveUrl(canonicalHref, base),
    canonicalHref,
    canonicalCount: canonicals.length,
    lang: scan.htmlLang || null,
    favicon: declaredIcon ?? new URL('/favicon.ico', res.url).href,
    faviconDeclared: declaredIcon !== null,
    og: socialTags(scan.metas, 'og:'),
    twitter: socialTags(scan.metas, 'twitter:'),
    structuredData: objects,
    jsonLdBlocks: scan.jsonLd.length,
    jsonLdInvalid: invalid,
    viewport: viewports[0] ? (viewports[0].get('content') ?? '').trim() : null,
    noindex,
    h1Count: scan.h1Count,
    imgCount: scan.imgCount,
    imgWithoutAlt: scan.imgWithoutAlt,
    doctype: scan.doctype,
    bytes: res.bytes,
    truncated: res.truncated,
    charsetDeclared: res.charsetDeclared,
  };
}

/** Decodes and scans a body: the pure half of fetchPage, used by tests and benchmarks. */
export function analyseBody(
  body: Uint8Array,
  res: { url: string; status: number; headers: Record<string, string>; charset: string | null },
): PageFacts {
  const truncated = body.length > MAX_PARSED_BYTES;
  const decoded = decodeHtml(truncated ? body.subarray(0, MAX_PARSED_BYTES) : body, res.charset);
  const scan = scanHtml(decoded.text);
  return pageFacts(scan, {
    url: res.url,
    status: res.status,
    headers: res.headers,
    bytes: body.length,
    truncated,
    charsetDeclared: decoded.source !== 'default',
  });
}

/**
 * Fetches a page through the guarded fetcher and analyses it. A 2xx answer must be HTML (the
 * fetcher refuses other types before reading the body); a non-2xx answer is analysed when it
 * carries HTML (its status is then scored) and is a 502 otherwise.
 */
export async function fetchPage(url: string, ctx: ToolContext): Promise<PageFacts> {
  const res = await ctx.services.fetcher.fetch(url, {
    accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.1',
    contentTypes: HTML_TYPES,
    maxBytes: MAX_FETCH_BYTES,
    signal: ctx.signal,
  });
  if (!HTML_TYPES.includes(res.contentType)) {
    throw new ToolError(
      'UPSTREAM_ERROR',
      `The URL answered HTTP ${res.status} with content type "${res.contentType || 'none'}", not an HTML page`,
      { status: res.status, contentType: res.contentType },
    );
  }
  await ctx.progress(1, 3, 'fetched');
  const facts = analyseBody(res.body, res);
  await ctx.progress(2, 3, 'parsed');
  return facts;
}
