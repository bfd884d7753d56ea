import { z } from 'zod';
import { ToolError } from '../../errors.js';
import { defineTool } from '../../registry.js';
import { analyticsOutput, analyticsRange, readAnalytics } from './analytics-read.js';
import { ANALYTICS_DAYS } from './analytics-counters.js';
import { clicksOf, type Clicks } from './clicks-read.js';
import { CODE_PATTERN, LINKS, shortUrlFor } from './links.js';

const day = z.string().describe(`A UTC day, YYYY-MM-DD, within the last ${ANALYTICS_DAYS} days`);

export const urlStats = defineTool({
  name: 'url_stats',
  view: 'link',
  title: 'Short link statistics',
  description:
    'Look up a short link: its long URL, how many times it was followed, when it was created and last clicked. ' +
    `For your own links (created with your API key) also the visit analytics: visits per day (last ${ANALYTICS_DAYS} days, or from/to) and per hour (last 48 h), top referrer hosts, browsers, operating systems, device types, and bots (crawlers and link previews, not counted as clicks).`,
  input: z.object({
    code: z.string().regex(CODE_PATTERN, 'must be 3-20 characters of A-Z a-z 0-9 _ -').describe('The short code (the part after /s/)'),
    from: day.optional().describe(`First UTC day of the analytics, YYYY-MM-DD (default: ${ANALYTICS_DAYS - 1} days ago); your own links only`),
    to: day.optional().describe('Last UTC day of the analytics, YYYY-MM-DD (default: today); your own links only'),
  }),
  output: z.object({
    code: z.string().describe('The short code'),
    url: z.string().describe('The long URL it redirects to'),
    shortUrl: z.string().describe('The short link'),
    clicks: z.number().int().min(0).describe('Redirects served to people (counted within about a second; bots apart)'),
    createdAt: z.string().describe('Creation time, ISO 8601'),
    lastClickedAt: z.string().nullable().describe('Time of the latest redirect, ISO 8601, or null if never followed'),
    ...analyticsOutput,
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  rest: { method: 'GET', path: '/api/shorten' },
  example: { code: 'my-link' },
  handler: async ({ code, from, to }, { services, caller }) => {
    // Checked first: a bad range is a 400 whoever asks, before anything is looked up.
    const range = analyticsRange(services.clock.now(), from, to);
    const link = await services.store.collection(LINKS).get(code);
    // A link created with an API key is that key's: anyone else gets the same 404 as for no link.
    if (!link || (link.creatorKeyId !== null && link.creatorKeyId !== caller.keyId)) throw new ToolError('NOT_FOUND', `No short link with code "${code}"`, { code });
    // What is stored plus this instance's clicks not written yet (./clicks.ts).
    const [{ clicks, lastClickedAt }] = (await clicksOf(services, [link])) as [Clicks];
    const stats = { code, url: link.url, shortUrl: shortUrlFor(services, code), clicks, createdAt: link.createdAt, lastClickedAt };
    // A keyless link's stats stay public, with the clicks only; analytics are the owner's.
    return link.creatorKeyId === null ? stats : { ...stats, ...(await readAnalytics(services, code, link.createdAt, range)) };
  },
});
