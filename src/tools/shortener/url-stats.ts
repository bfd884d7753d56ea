import { z } from 'zod';
import { ToolError } from '../../errors.js';
import { defineTool } from '../../registry.js';
import { CODE_PATTERN, LINK_CLICKS, LINKS, shortUrlFor } from './links.js';
import { linkTraffic } from './traffic.js';

export const urlStats = defineTool({
  name: 'url_stats',
  view: 'link',
  title: 'Short link statistics',
  description: 'Look up a short link: its long URL, how many times it was followed, when it was created and last clicked.',
  input: z.object({
    code: z.string().regex(CODE_PATTERN, 'must be 3-20 characters of A-Z a-z 0-9 _ -').describe('The short code (the part after /s/)'),
  }),
  output: z.object({
    code: z.string().describe('The short code'),
    url: z.string().describe('The long URL it redirects to'),
    shortUrl: z.string().describe('The short link'),
    clicks: z.number().int().min(0).describe('Redirects served (counted within about a second)'),
    createdAt: z.string().describe('Creation time, ISO 8601'),
    lastClickedAt: z.string().nullable().describe('Time of the latest redirect, ISO 8601, or null if never followed'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  rest: { method: 'GET', path: '/api/shorten' },
  example: { code: 'my-link' },
  handler: async ({ code }, { services, caller }) => {
    const link = await services.store.collection(LINKS).get(code);
    // A link created with an API key is that key's: anyone else gets the same 404 as for no link.
    if (!link || (link.creatorKeyId !== null && link.creatorKeyId !== caller.keyId)) throw new ToolError('NOT_FOUND', `No short link with code "${code}"`, { code });
    // What is stored plus this instance's clicks not written yet (see LinkTraffic).
    const { clicks, lastClickedAt } = linkTraffic(services).merged(code, await services.store.collection(LINK_CLICKS).get(code));
    return { code, url: link.url, shortUrl: shortUrlFor(services, code), clicks, createdAt: link.createdAt, lastClickedAt };
  },
});
