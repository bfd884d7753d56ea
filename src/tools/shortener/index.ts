import { defineFamily } from '../../core/family.js';
import { shortLinkFastPath, shortLinkRoutes } from './routes.js';
import { urlShorten } from './url-shorten.js';
import { urlShortenBulk } from './url-shorten-bulk.js';
import { urlDelete } from './url-delete.js';
import { urlList } from './url-list.js';
import { urlStats } from './url-stats.js';
import { urlUpdate } from './url-update.js';

export { countLinksCreatedToday, linkOwnerKey } from './links.js';
export { resolveShortLink } from './traffic.js';

/** Short links, their redirect and click counts, and their management by the owning key. */
export const shortenerFamily = defineFamily({
  instructions: 'create short links under /s/{code} (up to 100 at once with url_shorten_bulk) and read their click counts; with an API key, list, update and delete your links.',
  tag: { name: 'Shortener', description: 'Short links under /s/{code} with click counts.' },
  tools: [urlShorten, urlShortenBulk, urlStats, urlList, urlUpdate, urlDelete],
  errors: ['NOT_FOUND', 'STORAGE_UNAVAILABLE', 'UNAUTHORIZED'],
  routes: shortLinkRoutes,
  preroute: shortLinkFastPath,
});
