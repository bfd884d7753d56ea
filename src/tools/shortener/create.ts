import { ToolError, writtenDespiteFailure } from '../../errors.js';
import type { ToolContext } from '../../registry.js';
import type { Services } from '../../services.js';
import { REMOVE } from '../../state/index.js';
import {
  LINK_CLICKS,
  LINK_EXTERNAL_IDS,
  LINK_TOMBSTONES,
  LINK_VISITS,
  LINKS,
  linkCodes,
  ownerTimeOf,
  SHORT_LINK_QUOTA,
  shortUrlFor,
  TOMBSTONE_DAYS,
  utcDay,
  type LinkRecord,
  type LinkTombstone,
} from './links.js';
import { distinctTags, futureInstant, optionsOf, type LinkOptions } from './options.js';
import { normaliseLongUrl } from './long-url.js';
import { linkTraffic } from './traffic.js';

/** Collisions among 62^7 codes are rare; this many in a row means something is wrong. */
const MAX_CODE_ATTEMPTS = 8;
/** How long a create waits for another create of the same externalId to finish (its link to appear). */
const CLAIM_WAIT_MS = 2000;
const CLAIM_POLL_MS = 25;
const DAY_MS = 86_400_000;

export interface CreateInput {
  url: string;
  code?: string | undefined;
  expiresAt?: string | undefined;
  expiredUrl?: string | undefined;
  maxVisits?: number | undefined;
  tags?: string[] | undefined;
  title?: string | undefined;
  externalId?: string | undefined;
}

/** Whether a link made by `creatorKeyId` is the caller's (`keyId`) to manage, and the note a keyless one carries. */
export function ownershipOf(creatorKeyId: string | null, keyId: string | null): { managed: boolean; note?: string } {
  const managed = creatorKeyId !== null && creatorKeyId === keyId;
  return creatorKeyId === null ? { managed, note: 'Created without an API key: this link belongs to nobody and cannot be listed, updated or deleted.' } : { managed };
}

/** What url_shorten answers for a link. */
export function linkAnswer(services: Services, link: LinkRecord, keyId: string | null) {
  return { shortUrl: shortUrlFor(services, link.code), code: link.code, url: link.url, createdAt: link.createdAt, ...optionsOf(link), ...ownershipOf(link.creatorKeyId, keyId) };
}

/** Whether a deleted code still rests (generated codes skip it; only its owner claims it as a custom code). */
async function resting(services: Services, code: string, now: number): Promise<LinkTombstone | undefined> {
  const tombstones = services.store.collection(LINK_TOMBSTONES);
  const t = await tombstones.get(code);
  if (!t) return undefined;
  if (now - Date.parse(t.deletedAt) < TOMBSTONE_DAYS * DAY_MS) return t;
  // Rested long enough: gone for good, as it is met (a code drawn or claimed again).
  await tombstones.compareAndSet(code, t, REMOVE);
  return undefined;
}

/**
 * Creates a link (url_shorten). With an externalId, the owner's claim of it is inserted first
 * (insert-if-absent, atomic on every backend): of concurrent creates one wins and the others
 * answer its link (`existing`).
 */
export async function createLink(input: CreateInput, ctx: ToolContext): Promise<{ link: LinkRecord; existing: boolean }> {
  const { services, caller } = ctx;
  const now = services.clock.now();
  const opts = checkOptions(input, services, now);
  if (input.externalId === undefined) return { link: await insertLink(input.url, input.code, opts, ctx, now), existing: false };
  if (caller.keyId === null) {
    throw new ToolError('INVALID_INPUT', 'Invalid input for url_shorten: externalId needs an API key (keyless links belong to nobody)', [{ path: 'externalId', message: 'needs an API key' }]);
  }
  const claims = services.store.collection(LINK_EXTERNAL_IDS);
  const id = `${caller.keyId}|${input.externalId}`;
  const waitUntil = Date.now() + CLAIM_WAIT_MS;
  for (;;) {
    const claim = await claims.get(id);
    if (!claim) {
      if (!(await claims.insert({ id, code: '' }))) continue; // another create claimed it: read its link
      try {
        const link = await insertLink(input.url, input.code, { ...opts, externalId: input.externalId }, ctx, now, (code) => claims.put({ id, code }));
        return { link, existing: false };
      } catch (err) {
        // Written but unconfirmed (REDIS_WAIT_REPLICAS): the claim stays, so a retry answers that link.
        if (!writtenDespiteFailure(err)) await claims.delete(id).catch(() => {});
        throw err;
      }
    }
    const link = claim.code === '' ? undefined : await services.store.collection(LINKS).get(claim.code);
    if (link && link.creatorKeyId === caller.keyId && link.externalId === input.externalId) return { link, existing: true };
    if (Date.now() < waitUntil) {
      // The claim's create is under way (or its link is gone): wait for it, then take over.
      await new Promise((r) => setTimeout(r, CLAIM_POLL_MS));
      continue;
    }
    // A stale claim (its create died without cleaning up, or its link was lost): removed if
    // still as read, then claimed afresh by the next turn.
    await claims.compareAndSet(id, claim, REMOVE);
  }
}

type Options = Omit<LinkOptions, 'externalId'> & { externalId?: string };

function checkOptions(input: CreateInput, services: Services, now: number): Options {
  const out: Options = {};
  if (input.expiresAt !== undefined) out.expiresAt = futureInstant(input.expiresAt, now, 'expiresAt', 'url_shorten');
  if (input.expiredUrl !== undefined) out.expiredUrl = normaliseLongUrl(input.expiredUrl, services.config.publicBaseUrl, 'expiredUrl');
  if (input.maxVisits !== undefined) out.maxVisits = input.maxVisits;
  if (input.tags !== undefined && input.tags.length > 0) out.tags = distinctTags(input.tags);
  if (input.title !== undefined && input.title !== '') out.title = input.title;
  return out;
}

/**
 * Inserts a link under the custom code or a generated one, within the daily cap.
 * `onCode`: told each generated code before its insert (the externalId claim records it).
 */
async function insertLink(
  url: string,
  code: string | undefined,
  opts: Options,
  { services, caller }: ToolContext,
  now: number,
  onCode?: (code: string) => Promise<void>,
): Promise<LinkRecord> {
  const longUrl = normaliseLongUrl(url, services.config.publicBaseUrl);
  // The limiter's subject: the same owner key, its address hash cached for keyless callers.
  const creator = services.auth.subject(caller);
  const createdAt = new Date(now).toISOString();
  const record = (c: string): LinkRecord => ({
    code: c,
    url: longUrl,
    createdAt,
    creator,
    creatorKeyId: caller.keyId,
    creatorDay: `${creator}|${utcDay(now)}`,
    // Keyless links leave the index out (null): their records stay as they were.
    ...(caller.keyId === null ? {} : { ownerTime: ownerTimeOf(caller.keyId, createdAt, c) }),
    ...opts,
  });
  const links = services.store.collection(LINKS);
  // Short links per day (docs/contract.md §5): counted from the stored links; the count and the
  // insert are one atomic step (insertCapped), in this process and across instances on Redis.
  const max = await services.auth.dailyCap(caller, SHORT_LINK_QUOTA.limit);
  const insert = async (r: LinkRecord): Promise<boolean> => {
    if (max === undefined) return links.insert(r, { durability: 'replicated' });
    const res = await links.insertCapped(r, { within: { index: 'creatorDay', eq: r.creatorDay }, max }, { durability: 'replicated' });
    if (res === 'full') throw services.auth.quotaExceeded(caller, SHORT_LINK_QUOTA, now, max);
    return res === 'inserted';
  };
  // This instance's redirects may have just seen the code unknown: it redirects from now on.
  const create = async (r: LinkRecord): Promise<boolean> => (await insert(r)) && (linkTraffic(services).created(r.code), true);
  if (code !== undefined) {
    const othersRest = (t: LinkTombstone | undefined) => t !== undefined && (t.ownerKeyId === null || t.ownerKeyId !== caller.keyId);
    const rest = await resting(services, code, now);
    const taken = () => new ToolError('CONFLICT', `The short code "${code}" is already taken`, { code });
    if (othersRest(rest)) throw taken();
    await onCode?.(code);
    const r = record(code);
    if (!(await create(r))) throw taken();
    if (rest) {
      await reclaimed(services, rest);
    } else if (othersRest(await resting(services, code, now))) {
      // Its link was deleted between the check and the insert (url_delete writes the tombstone
      // before it removes the link, so it shows now): the code is its former owner's; ours goes.
      if (await links.compareAndSet(code, r, REMOVE)) throw taken();
    }
    return r;
  }
  // Generated codes keep the one check: a random code meets a code being deleted at that very
  // instant with odds of about 1 in 62^7 ≈ 3.5e12.
  for (let i = 0; i < MAX_CODE_ATTEMPTS; i++) {
    const c = linkCodes.generate();
    if (await resting(services, c, now)) continue;
    await onCode?.(c);
    const r = record(c);
    if (await create(r)) return r;
  }
  throw new Error(`no free short code after ${MAX_CODE_ATTEMPTS} attempts`);
}

/**
 * A deleted code claimed again by its owner: it starts afresh (no old clicks or visits). Only the
 * tombstone read before the insert goes: a newer one is a delete of the new link, racing this.
 */
async function reclaimed(services: Services, tombstone: LinkTombstone): Promise<void> {
  const { code } = tombstone;
  await Promise.all([
    services.store.collection(LINK_TOMBSTONES).compareAndSet(code, tombstone, REMOVE),
    services.store.collection(LINK_CLICKS).delete(code),
    services.store.collection(LINK_VISITS).delete(code),
  ]);
}
