import { z } from 'zod';
import { defineTool } from '../../registry.js';
import type { Services } from '../../services.js';
import { REMOVE } from '../../state/index.js';
import { ANALYTICS_FLUSH_MS, deleteAnalytics } from './analytics.js';
import { LINK_CLICKS, LINK_EXTERNAL_IDS, LINK_TOMBSTONES, LINK_VISITS, LINKS, TOMBSTONE_DAYS } from './links.js';
import { codeInput, linkNotFound, managingKey } from './options.js';
import { announceLinkChange, CHANGE_RETRIES, retryInBackground, STALE_BOUND_MS } from './traffic.js';

export const urlDelete = defineTool({
  name: 'url_delete',
  title: 'Delete a short link',
  description:
    `Delete one of your short links with its clicks, visit counts and analytics; /s/{code} then answers 404 on every instance within 2 seconds. ` +
    `Generated codes do not reuse the code for ${TOMBSTONE_DAYS} days; you may claim it again as a custom code. Cannot be undone. Needs the API key that created it.`,
  input: z.object({ code: codeInput }),
  output: z.object({
    deleted: z.literal(true).describe('Always true (an unknown link is a 404)'),
    code: z.string().describe('The deleted code'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  rest: { method: 'DELETE', path: '/api/links/{code}' },
  example: { code: 'my-link' },
  handler: async ({ code }, { services, caller }) => {
    const keyId = managingKey(caller, 'url_delete');
    const { store } = services;
    const links = store.collection(LINKS);
    // Not the caller's: nothing written (a tombstone would keep the code from its owner, or a free one from everyone).
    if ((await links.get(code))?.creatorKeyId !== keyId) throw linkNotFound(code);
    // The tombstone before the link goes: a create of the code that finds no link finds it
    // (a custom one by another key checks it again after its insert, see create.ts).
    await store.collection(LINK_TOMBSTONES).put({ code, deletedAt: new Date(services.clock.now()).toISOString(), ownerKeyId: keyId });
    let externalId: string | null | undefined;
    let found = false;
    await links.update(code, (cur) => {
      found = cur !== undefined && cur.creatorKeyId === keyId;
      externalId = cur?.externalId;
      return found ? REMOVE : undefined;
    });
    // Gone meanwhile (a concurrent delete by the same key): its tombstone is the caller's anyway.
    if (!found) throw linkNotFound(code);
    // The caches first (here at once, elsewhere within STALE_BOUND_MS), then what the link kept.
    await announceLinkChange(services, code, true);
    const claim = externalId ? `${keyId}|${externalId}` : undefined;
    try {
      await cleanUp(services, code, claim);
    } catch (err) {
      // The link is gone (a retry would answer 404): what it kept is deleted in the background.
      services.log.warn(`short links: ${code} was deleted, but not yet its counts and analytics; retrying`, err);
      retryInBackground(services, () => cleanUp(services, code, claim), CHANGE_RETRIES, 1000);
    }
    // Visits other instances served from their caches until they read the change log write
    // their counts within a flush after it: deleted again once that is past.
    retryInBackground(services, () => cleanUp(services, code, undefined), 10, STALE_BOUND_MS + 2 * ANALYTICS_FLUSH_MS);
    return { deleted: true as const, code };
  },
});

/**
 * Deletes what a deleted link kept — its clicks, visit count, analytics and externalId claim —
 * unless the code is a link again (its owner claimed it back): then nothing is touched.
 */
async function cleanUp(services: Services, code: string, claim: string | undefined): Promise<void> {
  const { store } = services;
  if (await store.collection(LINKS).get(code)) return;
  await Promise.all([
    store.collection(LINK_CLICKS).delete(code),
    store.collection(LINK_VISITS).delete(code),
    deleteAnalytics(services, code),
    claim ? store.collection(LINK_EXTERNAL_IDS).update(claim, (cur) => (cur?.code === code ? REMOVE : undefined)) : Promise.resolve(),
  ]);
}
