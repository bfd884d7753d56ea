import { z } from 'zod';
import type { Services } from '../../services.js';
import { LINK_CLICKS, shortUrlFor, type LinkRecord } from './links.js';
import { optionsOf, optionsOutput } from './options.js';
import { linkTraffic } from './traffic.js';

/** A managed link as url_list and url_update answer it. */
export const linkItem = z.object({
  code: z.string().describe('The short code'),
  shortUrl: z.string().describe('The short link'),
  url: z.string().describe('The long URL'),
  createdAt: z.string().describe('Creation time, ISO 8601'),
  clicks: z.number().int().min(0).describe('Redirects to the long URL served (counted within about a second)'),
  lastClickedAt: z.string().nullable().describe('Time of the latest redirect, ISO 8601, or null'),
  ...optionsOutput,
});

/** The answer for a stored link: its clicks as url_stats counts them. */
export async function itemOf(services: Services, link: LinkRecord): Promise<z.output<typeof linkItem>> {
  const { clicks, lastClickedAt } = linkTraffic(services).merged(link.code, await services.store.collection(LINK_CLICKS).get(link.code));
  return { code: link.code, shortUrl: shortUrlFor(services, link.code), url: link.url, createdAt: link.createdAt, clicks, lastClickedAt, ...optionsOf(link) };
}
