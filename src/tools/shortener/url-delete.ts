import { z } from 'zod';
import { defineTool } from '../../registry.js';
import { REMOVE } from '../../state/index.js';
import { deleteAnalytics } from './analytics.js';
import { LINK_CLICKS, LINK_EXTERNAL_IDS, LINK_TOMBSTONES, LINK_VISITS, LINKS, TOMBSTONE_DAYS } from './links.js';
import { codeInput, linkNotFound, managingKey } from './options.js';
import { recordLinkChange } from './traffic.js';

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
    await Promise.all([
      store.collection(LINK_CLICKS).delete(code),
      store.collection(LINK_VISITS).delete(code),
      deleteAnalytics(services, code),
      externalId ? store.collection(LINK_EXTERNAL_IDS).delete(`${keyId}|${externalId}`) : Promise.resolve(false),
    ]);
    await recordLinkChange(services, code, true);
    return { deleted: true as const, code };
  },
});
