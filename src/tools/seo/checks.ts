/**
 * The SEO checks, their weights and the score. Pure and deterministic: the same PageFacts always
 * give the same score, issues (in this order) and messages. docs/seo.md documents this table;
 * keep the two in step (a test compares them).
 */
import { charLength, type PageFacts } from './page.js';

export type Severity = 'error' | 'warning' | 'info';

export interface Issue {
  severity: Severity;
  code: string;
  message: string;
}

export interface CheckResult {
  id: string;
  passed: boolean;
  message: string;
  weight: number;
  points: number;
}

export interface SeoReport {
  score: number;
  grade: Grade;
  issues: Issue[];
  checks: CheckResult[];
}

export type Grade = 'A' | 'B' | 'C' | 'D' | 'F';

export const TITLE_MIN = 10;
export const TITLE_MAX = 60;
export const DESCRIPTION_MIN = 50;
export const DESCRIPTION_MAX = 160;
/** Score ceiling for a page that is not indexable (noindex) or did not answer 2xx. */
export const BLOCKED_CAP = 40;

interface Outcome {
  /** Shown when the check passed (no issues). */
  ok: string;
  /** What failed; an info issue fails an advisory (weight 0) check without costing points. */
  issues: Issue[];
  /** Info issues that are worth knowing but do not fail the check. */
  notes?: Issue[];
}

interface Check {
  id: string;
  weight: number;
  run(p: PageFacts): Outcome;
}

const issue = (severity: Severity, code: string, message: string): Issue => ({ severity, code, message });
const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** The checks in report order. Weights add up to 100. */
export const CHECKS: readonly Check[] = [
  {
    id: 'status',
    weight: 10,
    run: (p) => ({
      ok: 'The page answered HTTP 200',
      issues: p.status === 200 ? [] : [issue('error', 'status_not_200', `The page answered HTTP ${p.status}, not 200`)],
    }),
  },
  {
    id: 'https',
    weight: 10,
    run: (p) => ({
      ok: 'The page is served over HTTPS',
      issues: new URL(p.url).protocol === 'https:' ? [] : [issue('error', 'not_https', 'The page is not served over HTTPS')],
    }),
  },
  {
    id: 'title',
    weight: 14,
    run: (p) => {
      const issues: Issue[] = [];
      const len = p.title === null ? 0 : charLength(p.title);
      if (p.title === null || len === 0) issues.push(issue('error', 'title_missing', p.title === null ? 'The page has no <title>' : 'The <title> is empty'));
      else if (len < TITLE_MIN) issues.push(issue('warning', 'title_too_short', `The title is ${plural(len, 'character')}; aim for ${TITLE_MIN}-${TITLE_MAX}`));
      else if (len > TITLE_MAX) issues.push(issue('warning', 'title_too_long', `The title is ${plural(len, 'character')}; search results cut it after about ${TITLE_MAX}`));
      if (p.titleCount > 1) issues.push(issue('warning', 'title_multiple', `The page has ${p.titleCount} <title> elements; the first one is used`));
      return { ok: `The title is ${plural(len, 'character')}`, issues };
    },
  },
  {
    id: 'description',
    weight: 10,
    run: (p) => {
      const issues: Issue[] = [];
      const len = p.description === null ? 0 : charLength(p.description);
      if (p.description === null || len === 0) {
        issues.push(issue('error', 'description_missing', p.description === null ? 'The page has no meta description' : 'The meta description is empty'));
      } else if (len < DESCRIPTION_MIN) {
        issues.push(issue('warning', 'description_too_short', `The meta description is ${plural(len, 'character')}; aim for ${DESCRIPTION_MIN}-${DESCRIPTION_MAX}`));
      } else if (len > DESCRIPTION_MAX) {
        issues.push(issue('warning', 'description_too_long', `The meta description is ${plural(len, 'character')}; search results cut it after about ${DESCRIPTION_MAX}`));
      }
      if (p.descriptionCount > 1) issues.push(issue('warning', 'description_multiple', `The page has ${p.descriptionCount} meta descriptions; the first one is used`));
      return { ok: `The meta description is ${plural(len, 'character')}`, issues };
    },
  },
  {
    id: 'h1',
    weight: 10,
    run: (p) => ({
      ok: 'The page has exactly one <h1>',
      issues:
        p.h1Count === 0
          ? [issue('error', 'h1_missing', 'The page has no <h1> heading')]
          : p.h1Count > 1
            ? [issue('warning', 'h1_multiple', `The page has ${p.h1Count} <h1> headings; use one for the main topic`)]
            : [],
    }),
  },
  {
    id: 'img_alt',
    weight: 6,
    run: (p) => ({
      ok: p.imgCount === 0 ? 'The page has no images' : `All ${plural(p.imgCount, 'image')} have an alt attribute`,
      issues:
        p.imgWithoutAlt > 0
          ? [issue('warning', 'img_alt_missing', `${p.imgWithoutAlt} of ${plural(p.imgCount, 'image')} have no alt attribute`)]
          : [],
    }),
  },
  {
    id: 'canonical',
    weight: 6,
    run: (p) => {
      const issues: Issue[] = [];
      const notes: Issue[] = [];
      if (p.canonicalHref === null) issues.push(issue('warning', 'canonical_missing', 'The page declares no <link rel="canonical">'));
      else if (p.canonical === null) issues.push(issue('warning', 'canonical_invalid', 'The canonical link is not a valid http(s) URL'));
      else if (p.canonical !== p.url) notes.push(issue('info', 'canonical_other_url', `The canonical URL ${p.canonical} differs from the page URL`));
      if (p.canonicalCount > 1) issues.push(issue('warning', 'canonical_multiple', `The page declares ${p.canonicalCount} canonical links; search engines may ignore them all`));
      return { ok: `The canonical URL is ${p.canonical ?? ''}`, issues, notes };
    },
  },
  {
    id: 'viewport',
    weight: 10,
    run: (p) => ({
      ok: 'The page declares a mobile viewport',
      issues: p.viewport ? [] : [issue('error', 'viewport_missing', 'The page has no <meta name="viewport">; it will not render well on phones')],
    }),
  },
  {
    id: 'lang',
    weight: 4,
    run: (p) => ({
      ok: `The page language is ${p.lang ?? ''}`,
      issues: p.lang ? [] : [issue('warning', 'lang_missing', 'The <html> element has no lang attribute')],
    }),
  },
  {
    id: 'robots',
    weight: 14,
    run: (p) => ({
      ok: 'The page may be indexed',
      issues: p.noindex.length ? [issue('error', 'noindex', `The page asks not to be indexed (${p.noindex.join(' and ')})`)] : [],
    }),
  },
  {
    id: 'og',
    weight: 6,
    run: (p) => {
      const basics = ['title', 'description', 'image'];
      const missing = basics.filter((k) => p.og[k] === undefined);
      const issues =
        missing.length === basics.length
          ? [issue('warning', 'og_missing', 'The page has no Open Graph tags (og:title, og:description, og:image)')]
          : missing.length
            ? [issue('warning', 'og_incomplete', `Open Graph tags missing: ${missing.map((k) => `og:${k}`).join(', ')}`)]
            : [];
      return { ok: 'The page has og:title, og:description and og:image', issues };
    },
  },
  {
    id: 'twitter_card',
    weight: 0,
    run: (p) => ({
      ok: 'The page declares a Twitter card',
      issues: p.twitter['card'] === undefined ? [issue('info', 'twitter_card_missing', 'The page has no twitter:card tag')] : [],
    }),
  },
  {
    id: 'structured_data',
    weight: 0,
    run: (p) => {
      const issues: Issue[] = [];
      if (p.jsonLdInvalid > 0) {
        issues.push(issue('warning', 'structured_data_invalid', `${p.jsonLdInvalid} of ${plural(p.jsonLdBlocks, 'JSON-LD block')} could not be parsed`));
      }
      if (p.structuredData.length === 0) issues.push(issue('info', 'structured_data_missing', 'The page has no valid JSON-LD structured data'));
      return { ok: `The page has ${plural(p.structuredData.length, 'JSON-LD object')}`, issues };
    },
  },
  {
    id: 'favicon',
    weight: 0,
    run: (p) => ({
      ok: 'The page declares a favicon',
      issues: p.faviconDeclared ? [] : [issue('info', 'favicon_missing', 'The page declares no icon; browsers will try /favicon.ico')],
    }),
  },
  {
    id: 'charset',
    weight: 0,
    run: (p) => ({
      ok: 'The character encoding is declared',
      issues: p.charsetDeclared ? [] : [issue('info', 'charset_missing', 'Neither the Content-Type header nor a <meta charset> declares the encoding')],
    }),
  },
  {
    id: 'doctype',
    weight: 0,
    run: (p) => ({
      ok: 'The page starts with a doctype',
      issues: p.doctype ? [] : [issue('info', 'doctype_missing', 'The page has no <!doctype html>; browsers render it in quirks mode')],
    }),
  },
  {
    id: 'page_size',
    weight: 0,
    run: (p) => ({
      ok: `The HTML is ${plural(p.bytes, 'byte')}`,
      issues: p.truncated ? [issue('warning', 'html_too_large', `The HTML is ${p.bytes} bytes; only the first 2 MiB were analysed`)] : [],
    }),
  },
];

const PENALTY: Record<Severity, number> = { error: 1, warning: 0.5, info: 0 };
const SEVERITY_ORDER: Record<Severity, number> = { error: 0, warning: 1, info: 2 };

export function gradeFor(score: number): Grade {
  if (score >= 90) return 'A';
  if (score >= 80) return 'B';
  if (score >= 70) return 'C';
  if (score >= 60) return 'D';
  return 'F';
}

/**
 * Runs every check. A check loses its whole weight for an error, half for a warning, nothing
 * for info (the worst issue counts once). A page that is not 2xx or asks not to be indexed is
 * capped at BLOCKED_CAP: it cannot rank whatever its markup.
 */
export function scorePage(p: PageFacts): SeoReport {
  const issues: Issue[] = [];
  const checks: CheckResult[] = [];
  let total = 0;
  for (const c of CHECKS) {
    const o = c.run(p);
    const penalty = Math.max(0, ...o.issues.map((i) => PENALTY[i.severity]));
    const points = Math.round(c.weight * (1 - penalty));
    const passed = o.issues.length === 0;
    checks.push({ id: c.id, passed, message: passed ? o.ok : o.issues.map((i) => i.message).join('; '), weight: c.weight, points });
    issues.push(...o.issues, ...(o.notes ?? []));
    total += points;
  }
  // Most severe first; within a severity, check order (Array.prototype.sort is stable).
  issues.sort((a, b) => SEVERITY_ORDER[a.severity] - SEVERITY_ORDER[b.severity]);
  const blocked = p.status < 200 || p.status > 299 || p.noindex.length > 0;
  const score = blocked ? Math.min(total, BLOCKED_CAP) : total;
  return { score, grade: gradeFor(score), issues, checks };
}
