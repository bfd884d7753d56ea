import { z } from 'zod';
import type { Services } from '../../services.js';
import { clicksOf } from './clicks-read.js';
import { shortUrlFor, type LinkRecord } from './links.js';
import { optionsOf, optionsOutput } from './options.js';

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

/** The answers for stored links: their clicks as url_stats counts them (read together). */
export async function itemsOf(services: Services, links: readonly LinkRecord[]): Promise<z.output<typeof linkItem>[]> {
  const clicks = await clicksOf(services, links);
  return links.map((link, i) => ({ code: link.code, shortUrl: shortUrlFor(services, link.code), url: link.url, createdAt: link.createdAt, ...clicks[i]!, ...optionsOf(link) }));
}

/** The answer for a stored link. */
export async function itemOf(services: Services, link: LinkRecord): Promise<z.output<typeof linkItem>> {
  return (await itemsOf(services, [link]))[0]!;
}
