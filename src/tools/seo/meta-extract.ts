import { z } from 'zod';
import { defineTool } from '../../registry.js';
import { scorePage } from './checks.js';
import { cut, fetchPage, resolveUrl, type PageFacts, type SocialTags } from './page.js';
import { GradeOut, IssueOut, Score, UrlIn } from './schema.js';

const Social = z.record(z.string(), z.union([z.string(), z.array(z.string())]));

const Output = z.object({
  url: z.string().describe('Final URL, after redirects'),
  status: z.number().int().optional().describe('full: HTTP status of the final answer'),
  title: z.string().nullable().describe('Document title (first <title>), whitespace collapsed; null when absent'),
  description: z.string().nullable().describe('Meta description; null when absent'),
  canonical: z.string().nullable().optional().describe('full: canonical URL, absolute; null when absent or invalid'),
  lang: z.string().nullable().optional().describe('full: lang attribute of <html>; null when absent'),
  favicon: z.string().optional().describe('full: icon URL, absolute (declared icon, else /favicon.ico)'),
  og: Social.optional().describe('full: every og:* tag, key without the prefix; repeated tags as arrays'),
  twitter: Social.optional().describe('full: every twitter:* tag, key without the prefix; repeated tags as arrays'),
  structuredData: z
    .array(z.record(z.string(), z.unknown()))
    .optional()
    .describe('full: parsed JSON-LD objects (invalid blocks skipped, @graph kept as written)'),
  image: z.string().nullable().optional().describe('summary: og:image (else twitter:image), absolute; null when none'),
  seo: z
    .object({
      score: Score,
      grade: GradeOut.optional().describe('full: letter grade'),
      issues: z.array(IssueOut).optional().describe('full: the problems found (same as seo_check)'),
    })
    .describe('SEO score (and, in full, grade and issues) from the same checks as seo_check'),
});

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

function shareImage(p: PageFacts): string | null {
  const raw = [first(p.og['image']), first(p.og['image:url']), first(p.twitter['image']), first(p.twitter['image:src'])].find((v) => v);
  return raw ? resolveUrl(raw, p.baseUrl) : null;
}

const cutOrNull = (s: string | null): string | null => (s === null ? null : cut(s));

export const metaExtract = defineTool({
  name: 'meta_extract',
  view: 'seo',
  title: 'Page metadata extractor',
  description:
    'Fetch a web page (HTML only) and extract its metadata: final URL and status, title, meta description, canonical URL, language, favicon, every Open Graph (og:*) and Twitter (twitter:*) tag, JSON-LD structured data, and an SEO score with its issues. format=summary returns only url, title, description, share image and score.',
  input: z.object({
    url: UrlIn,
    format: z.enum(['full', 'summary']).default('full').describe('full (default): every field; summary: url, title, description, image, seo.score'),
  }),
  output: Output,
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: true },
  longRunning: true,
  rest: { method: 'POST', path: '/api/meta-extract' },
  example: { url: 'https://example.com/', format: 'full' },
  handler: async ({ url, format }, ctx) => {
    const p = await fetchPage(url, ctx);
    const report = scorePage(p);
    await ctx.progress(3, 3, 'scored');
    if (format === 'summary') {
      return { url: p.url, title: cutOrNull(p.title), description: cutOrNull(p.description), image: shareImage(p), seo: { score: report.score } };
    }
    return {
      url: p.url,
      status: p.status,
      title: cutOrNull(p.title),
      description: cutOrNull(p.description),
      canonical: p.canonical,
      lang: p.lang === null ? null : cut(p.lang, 100),
      favicon: p.favicon,
      og: p.og satisfies SocialTags,
      twitter: p.twitter,
      structuredData: p.structuredData,
      seo: { score: report.score, grade: report.grade, issues: report.issues },
    };
  },
});
