import { z } from 'zod';
import { defineTool } from '../../registry.js';
import { LINK_VISITS, LINKS, ownerTimeOf, type LinkRecord } from './links.js';
import { itemOf, linkItem } from './link-item.js';
import { codeInput, distinctTags, futureInstant, linkNotFound, managingKey, optionFields } from './options.js';
import { announceLinkChange } from './traffic.js';
import { normaliseLongUrl } from './long-url.js';

export const urlUpdate = defineTool({
  name: 'url_update',
  title: 'Update a short link',
  description:
    'Change the long URL or options of one of your short links (expiresAt, expiredUrl, maxVisits, tags, title); null clears an option, ' +
    'an absent field stays as it is. The code never changes. Every instance redirects to the new URL within 2 seconds. Needs the API key that created it.',
  input: z.object({
    code: codeInput,
    url: z.string().trim().min(1).max(2048).optional().describe('The new long URL (http or https)'),
    expiresAt: optionFields.expiresAt.nullable().optional().describe('New expiry (ISO 8601 date-time, in the future); null: never expires'),
    expiredUrl: optionFields.expiredUrl.nullable().optional().describe('Where the link sends visitors once expired or used up; null: a 410 Gone page'),
    maxVisits: optionFields.maxVisits.nullable().optional().describe(
      'Redirects allowed in all. Set where the link had no limit, it counts from 0; changed from one number to another, ' +
        'the redirects served so far still count (raising it reopens a used-up link); null: no limit',
    ),
    tags: optionFields.tags.nullable().optional().describe('The new tags (replace the old ones); null: none'),
    title: optionFields.title.nullable().optional().describe('The new title; null: none'),
  }),
  output: linkItem,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  rest: { method: 'PATCH', path: '/api/links/{code}' },
  example: { code: 'my-link', url: 'https://example.com/new', tags: ['launch'] },
  handler: async (input, { services, caller }) => {
    const keyId = managingKey(caller, 'url_update');
    const base = services.config.publicBaseUrl;
    const now = services.clock.now();
    // Checked before the write: a bad field changes nothing.
    const change: Partial<LinkRecord> = {};
    if (input.url !== undefined) change.url = normaliseLongUrl(input.url, base, 'url', 'url_update');
    if (input.expiresAt !== undefined) change.expiresAt = input.expiresAt === null ? null : futureInstant(input.expiresAt, now, 'expiresAt', 'url_update');
    if (input.expiredUrl !== undefined) change.expiredUrl = input.expiredUrl === null ? null : normaliseLongUrl(input.expiredUrl, base, 'expiredUrl', 'url_update');
    if (input.maxVisits !== undefined) change.maxVisits = input.maxVisits;
    if (input.tags !== undefined) change.tags = input.tags === null ? [] : distinctTags(input.tags);
    if (input.title !== undefined) change.title = input.title === null || input.title === '' ? null : input.title;
    const links = services.store.collection(LINKS);
    let updated: LinkRecord;
    for (;;) {
      const cur = await links.get(input.code);
      if (!cur || cur.creatorKeyId !== keyId) throw linkNotFound(input.code);
      // A limit where there was none counts from 0. Visits are counted only under a limit, so
      // the count is dropped before the limit is written: no increment made under it is lost.
      if (typeof change.maxVisits === 'number' && typeof cur.maxVisits !== 'number') await services.store.collection(LINK_VISITS).delete(input.code);
      // A link stored before the owner index gets it now (url_list shows it from then on).
      updated = { ...cur, ownerTime: ownerTimeOf(keyId, cur.createdAt, cur.code), ...change };
      // Written only over the record read (else read again): the limit then is the one the count was dropped for.
      if (await links.compareAndSet(input.code, cur, updated)) break;
    }
    await announceLinkChange(services, input.code);
    return itemOf(services, updated);
  },
});
