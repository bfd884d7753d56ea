import { defineFamily } from '../../core/family.js';
import { shortLinkPreroute, shortLinkRoutes } from './routes.js';
import { urlShorten } from './url-shorten.js';
import { urlStats } from './url-stats.js';

export { countLinksCreatedToday, linkOwnerKey } from './links.js';
export { resolveShortLink } from './traffic.js';

/** Short links, their redirect and click counts. */
export const shortenerFamily = defineFamily({
  instructions: 'create short links under /s/{code} and read their click counts.',
  tag: { name: 'Shortener', description: 'Short links under /s/{code} with click counts.' },
  tools: [urlShorten, urlStats],
  errors: ['NOT_FOUND', 'STORAGE_UNAVAILABLE'],
  routes: shortLinkRoutes,
  preroute: shortLinkPreroute,
});
