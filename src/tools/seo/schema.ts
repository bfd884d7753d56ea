/** Zod pieces shared by meta_extract and seo_check. */
import { z } from 'zod';

export const UrlIn = z
  .string()
  .min(1)
  .max(2048)
  .describe('Absolute http(s) URL of the page to fetch (redirects are followed, at most 5)');

export const IssueOut = z.object({
  severity: z.enum(['error', 'warning', 'info']).describe('error and warning cost points (the whole weight of the check, or half); info costs nothing'),
  code: z.string().describe('Stable identifier of the problem, e.g. title_missing, h1_multiple, noindex (list in docs/seo.md)'),
  message: z.string().describe('Human-readable explanation'),
});

export const CheckOut = z.object({
  id: z.string().describe('Check id: status, https, title, description, h1, img_alt, canonical, viewport, lang, robots, og, twitter_card, structured_data, favicon, charset, doctype, page_size'),
  passed: z.boolean().describe('True when the check found nothing to fix (advisory checks of weight 0 can fail without costing points)'),
  message: z.string().describe('What was found'),
  weight: z.number().int().describe('Points the check is worth (the weights add up to 100)'),
  points: z.number().int().describe('Points earned'),
});

export const Score = z.number().int().min(0).max(100).describe('SEO score 0-100 (same page, same score)');
export const GradeOut = z.enum(['A', 'B', 'C', 'D', 'F']).describe('A ≥ 90, B ≥ 80, C ≥ 70, D ≥ 60, F below');
