import { z } from 'zod';
import { defineTool } from '../../registry.js';
import { scorePage } from './checks.js';
import { cut, fetchPage } from './page.js';
import { CheckOut, GradeOut, IssueOut, Score, UrlIn } from './schema.js';

export const seoCheck = defineTool({
  name: 'seo_check',
  view: 'seo',
  title: 'SEO checker',
  description:
    'Fetch a web page and score its on-page SEO 0-100 with a grade A-F and a list of issues, each with a severity (error, warning, info) and a stable code an agent can act on (title_missing, title_too_long, description_missing, h1_missing, h1_multiple, img_alt_missing, canonical_missing, viewport_missing, lang_missing, not_https, noindex, og_missing, status_not_200, …). format=full adds every check with its weight and whether it passed. Deterministic: the same page always gets the same score.',
  input: z.object({
    url: UrlIn,
    // The published description says format defaults to full (checks included).
    format: z.enum(['full', 'summary']).default('full').describe('full (default): score, grade, issues and every check with passed/failed; summary: score, grade and issues'),
  }),
  output: z.object({
    url: z.string().describe('Final URL, after redirects'),
    score: Score,
    grade: GradeOut,
    issues: z.array(IssueOut).describe('Problems found: errors first, then warnings, then info; in check order within each'),
    checks: z.array(CheckOut).optional().describe('full: every check, passed or not'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: true },
  longRunning: true,
  rest: [
    { method: 'POST', path: '/api/seo-check' },
    { method: 'GET', path: '/api/seo-check' },
  ],
  example: { url: 'https://example.com/', format: 'full' },
  handler: async ({ url, format }, ctx) => {
    const p = await fetchPage(url, ctx);
    const scored = scorePage(p);
    await ctx.progress(3, 3, 'scored');
    // The output cap: a fixed list of checks, each message cut to 2,000 characters (a message can
    // quote the page's canonical URL or lang, which the page may make megabytes long).
    const issues = scored.issues.map((i) => ({ ...i, message: cut(i.message) }));
    const { score, grade } = scored;
    if (format !== 'full') return { url: p.url, score, grade, issues };
    return { url: p.url, score, grade, issues, checks: scored.checks.map((c) => ({ ...c, message: cut(c.message) })) };
  },
});
