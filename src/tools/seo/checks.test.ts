import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CHECKS, gradeFor, scorePage } from './checks.js';
import type { PageFacts } from './page.js';

/** A page that passes every check. */
const perfect: PageFacts = {
  url: 'https://example.com/',
  baseUrl: 'https://example.com/',
  status: 200,
  title: 'A title of a good length',
  titleCount: 1,
  description: 'A description that is long enough to be shown as the snippet of the page.',
  descriptionCount: 1,
  canonical: 'https://example.com/',
  canonicalHref: '/',
  canonicalCount: 1,
  lang: 'en',
  favicon: 'https://example.com/icon.png',
  faviconDeclared: true,
  og: { title: 't', description: 'd', image: 'i.png' },
  twitter: { card: 'summary' },
  structuredData: [{ '@type': 'WebPage' }],
  jsonLdBlocks: 1,
  jsonLdInvalid: 0,
  viewport: 'width=device-width',
  noindex: [],
  h1Count: 1,
  imgCount: 2,
  imgWithoutAlt: 0,
  doctype: true,
  bytes: 1000,
  truncated: false,
  charsetDeclared: true,
};

const codes = (p: Partial<PageFacts>) => scorePage({ ...perfect, ...p }).issues.map((i) => `${i.severity}:${i.code}`);
const score = (p: Partial<PageFacts>) => scorePage({ ...perfect, ...p }).score;

describe('scorePage', () => {
  it('gives a perfect page 100, grade A, no issues, every check passed', () => {
    const r = scorePage(perfect);
    expect({ score: r.score, grade: r.grade, issues: r.issues }).toStrictEqual({ score: 100, grade: 'A', issues: [] });
    expect(r.checks.map((c) => [c.id, c.passed, c.points])).toStrictEqual(CHECKS.map((c) => [c.id, true, c.weight]));
  });

  it('has weights that add up to 100', () => {
    expect(CHECKS.reduce((s, c) => s + c.weight, 0)).toBe(100);
  });

  it('draws the title and description length limits at 10-60 and 50-160 characters (code points)', () => {
    expect(codes({ title: 'x'.repeat(60) })).toStrictEqual([]);
    expect(codes({ title: 'x'.repeat(61) })).toStrictEqual(['warning:title_too_long']);
    expect(codes({ title: '😀'.repeat(60) })).toStrictEqual([]);
    expect(codes({ title: 'x'.repeat(9) })).toStrictEqual(['warning:title_too_short']);
    expect(codes({ title: '' })).toStrictEqual(['error:title_missing']);
    expect(codes({ title: null, titleCount: 0 })).toStrictEqual(['error:title_missing']);
    expect(codes({ description: 'd'.repeat(160) })).toStrictEqual([]);
    expect(codes({ description: 'd'.repeat(161) })).toStrictEqual(['warning:description_too_long']);
    expect(codes({ description: 'd'.repeat(49) })).toStrictEqual(['warning:description_too_short']);
  });

  it('takes the whole weight for an error, half for a warning, once per check', () => {
    expect(score({ h1Count: 0 })).toBe(90);
    expect(score({ h1Count: 3 })).toBe(95);
    expect(score({ title: 'x'.repeat(80), titleCount: 2 })).toBe(93);
    expect(score({ title: null, titleCount: 0 })).toBe(86);
    expect(score({ canonical: 'https://example.com/other' })).toBe(100);
    expect(codes({ canonical: 'https://example.com/other' })).toStrictEqual(['info:canonical_other_url']);
    expect(score({ twitter: {}, structuredData: [], jsonLdBlocks: 0, faviconDeclared: false, doctype: false, charsetDeclared: false })).toBe(100);
  });

  it('caps a non-2xx or noindex page at 40', () => {
    expect(score({ status: 404 })).toBe(40);
    expect(score({ status: 204 })).toBe(90);
    expect(score({ noindex: ['X-Robots-Tag'] })).toBe(40);
    expect(scorePage({ ...perfect, status: 500, h1Count: 0, viewport: null, title: null }).score).toBe(40); // 56 before the cap
    expect(scorePage({ ...perfect, status: 500, url: 'http://x/', title: null, description: null, viewport: null, h1Count: 0 }).score).toBe(36);
  });

  it('orders issues by severity, then check order', () => {
    expect(codes({ url: 'http://example.com/', og: {}, lang: null, h1Count: 0, twitter: {} })).toStrictEqual([
      'error:not_https',
      'error:h1_missing',
      'warning:lang_missing',
      'warning:og_missing',
      'info:canonical_other_url',
      'info:twitter_card_missing',
    ]);
  });

  it('is deterministic', () => {
    const p = { ...perfect, title: null, og: { title: 'x' }, imgWithoutAlt: 1 };
    expect(scorePage(p)).toStrictEqual(scorePage(structuredClone(p)));
  });

  it.each([
    [100, 'A'],
    [90, 'A'],
    [89, 'B'],
    [80, 'B'],
    [79, 'C'],
    [70, 'C'],
    [69, 'D'],
    [60, 'D'],
    [59, 'F'],
    [0, 'F'],
  ] as const)('grades %i as %s', (s, g) => {
    expect(gradeFor(s)).toBe(g);
  });

  it('matches the checks table in docs/seo.md', () => {
    const doc = fs.readFileSync(new URL('../../../docs/seo.md', import.meta.url), 'utf8');
    const rows = [...doc.matchAll(/^\| `([a-z0-9_]+)` \| (\d+) \|/gm)].map((m) => [m[1], Number(m[2])]);
    expect(rows).toStrictEqual(CHECKS.map((c) => [c.id, c.weight]));
    // Every issue code the checks can raise is documented.
    const all = new Set<string>();
    const variants: Array<Partial<PageFacts>> = [
      { status: 500, url: 'http://x/', title: null, description: null, h1Count: 0, imgWithoutAlt: 1, canonicalHref: null, canonical: null, viewport: null, lang: null, noindex: ['meta robots'], og: {}, twitter: {}, structuredData: [], jsonLdInvalid: 1, faviconDeclared: false, charsetDeclared: false, doctype: false, truncated: true },
      { title: 'x', titleCount: 2, description: 'x', descriptionCount: 2, h1Count: 2, canonical: null, canonicalCount: 2, og: { title: 't' } },
      { title: 'x'.repeat(99), description: 'x'.repeat(999), canonical: 'https://example.com/b' },
    ];
    for (const v of variants) for (const i of scorePage({ ...perfect, ...v }).issues) all.add(i.code);
    expect(all.size).toBe(29);
    for (const code of all) expect(doc, code).toContain(`\`${code}\``);
  });
});
