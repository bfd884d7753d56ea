import { randomFillSync } from 'node:crypto';
import type { DailyQuota } from '../../auth/auth.js';
import { ownerKey } from '../../auth/owner.js';
import type { Services } from '../../services.js';
import { defineCollection, type Store } from '../../state/index.js';

/** Custom and generated codes alike: what may follow /s/. */
export const CODE_PATTERN = /^[A-Za-z0-9_-]{3,20}$/;
export const GENERATED_CODE_LENGTH = 7;
/** Longest long URL accepted, before and after normalisation. */
export const MAX_URL_LENGTH = 2048;

/**
 * A short link. Its code never changes; its owner (the creating key) may change the URL and
 * options (url_update) or delete it (url_delete). Clicks live in LinkClicks.
 */
export interface LinkRecord {
  code: string;
  url: string;
  createdAt: string;
  /** Who created it, as the limits count it: `key:<keyId>` or `ip:<hash of the address>`. */
  creator: string;
  /** The creating API key's id (the owner), or null for keyless calls (nobody's). */
  creatorKeyId: string | null;
  /** `${creator}|${YYYY-MM-DD (UTC)}`: the index behind the short-links-per-day quota. */
  creatorDay: string;
  /**
   * `${creatorKeyId}|${createdAt}|${code}` for owned links, null for keyless ones: the index
   * url_list walks (newest first, one owner's range only). Absent on links stored before it.
   */
  ownerTime?: string | null;
  /** After this instant (ISO) the link no longer redirects to `url`. */
  expiresAt?: string | null;
  /** Where an expired or used-up link sends visitors; absent: a 410 page. */
  expiredUrl?: string | null;
  /** Redirects allowed in all; counted exactly in LINK_VISITS. */
  maxVisits?: number | null;
  tags?: string[];
  title?: string | null;
  /** The owner's own id for the link (idempotent create), unique per owner (LINK_EXTERNAL_IDS). */
  externalId?: string | null;
}

/**
 * A link's clicks up to a day: since session 18 a redirect counts its click in the day's
 * analytics record (LINK_DAYS' `clicks`) only, and the roll-up (./clicks.ts) adds a day's clicks
 * here once the day is ROLLUP_LAG_DAYS old, `through` naming the last day added. A link's clicks
 * are this record's plus its day records' after `through` (clicksOf). Versions before counted
 * every click here too (blind adds, `clicks` summed, `lastClickedMs` kept as a maximum), and
 * records from before the counter layout hold `lastClickedAt` (ISO) instead: readers take the
 * later of the two.
 */
export interface LinkClicks {
  code: string;
  clicks?: number;
  lastClickedMs?: number;
  lastClickedAt?: string | null;
  /** The last UTC day (YYYY-MM-DD) whose clicks were added (absent: none rolled up). */
  through?: string;
}

// 1000 links ≈ 250 KB per file: a creation rewrites only the newest file (see docs/state.md).
export const LINKS = defineCollection<LinkRecord>({ name: 'links', key: 'code', indexes: ['creatorDay', 'ownerTime'], segmentSize: 1000 });
export const LINK_CLICKS = defineCollection<LinkClicks>({ name: 'link_clicks', key: 'code', counters: true });

/**
 * How far the roll-up has gone, for every link at once: the record ROLLUP_ID's `through` is the last
 * UTC day whose clicks are in LINK_CLICKS for every link visited that day (./clicks.ts).
 */
export interface ClickRollUp {
  id: string;
  through: string;
  /** The instance whose sweep rolls up (./clicks.ts rollUpDue), until `until` (ms) unless it renews. */
  holder?: string;
  until?: number;
}
export const LINK_CLICK_ROLLUP = defineCollection<ClickRollUp>({ name: 'link_click_rollup', key: 'id' });

/** The visits a link with maxVisits has used: one atomic increment per redirect, on every backend. */
export interface LinkVisits {
  code: string;
  visits: number;
}
export const LINK_VISITS = defineCollection<LinkVisits>({ name: 'link_visits', key: 'code' });

/** An owner's externalId claimed for a code: the insert-if-absent that makes create idempotent. */
export interface LinkExternalId {
  id: string;
  code: string;
}
export const LINK_EXTERNAL_IDS = defineCollection<LinkExternalId>({ name: 'link_external_ids', key: 'id' });

/** A deleted code: generated codes skip it for TOMBSTONE_DAYS; only its owner may claim it again. */
export interface LinkTombstone {
  code: string;
  deletedAt: string;
  ownerKeyId: string | null;
}
export const LINK_TOMBSTONES = defineCollection<LinkTombstone>({ name: 'link_tombstones', key: 'code' });
export const TOMBSTONE_DAYS = 30;

/**
 * The change log the redirect caches follow: `gen` goes up by one per update or delete, and
 * `recent` keeps the codes of the latest CHANGE_LOG_SIZE changes, so an instance drops just
 * those from its cache (or all of it when it fell further behind).
 */
export interface LinkChanges {
  id: string;
  gen: number;
  /** `deleted`: the link was deleted (each instance drops its unwritten counts of it). */
  recent: { gen: number; code: string; deleted?: true }[];
}
export const LINK_CHANGES = defineCollection<LinkChanges>({ name: 'link_changes', key: 'id' });
export const CHANGE_LOG_SIZE = 256;

/** The ownerTime index value of a link (null: keyless, nobody's). */
export function ownerTimeOf(keyId: string | null, createdAt: string, code: string): string | null {
  return keyId === null ? null : `${keyId}|${createdAt}|${code}`;
}

/** The UTC day of an instant, `YYYY-MM-DD`. */
export function utcDay(now: number): string {
  return new Date(now).toISOString().slice(0, 10);
}

/** The owner a caller's links are counted against: per key, or per (hashed) client address. */
export const linkOwnerKey = ownerKey;

/** How many links `ownerKey` (see linkOwnerKey) created on the UTC day of `now`. Exact, from the store. */
export async function countLinksCreatedToday(store: Store, ownerKey: string, now: number): Promise<number> {
  return store.collection(LINKS).count({ index: 'creatorDay', eq: `${ownerKey}|${utcDay(now)}` });
}

/**
 * Short links per UTC day (the plan's `short_links_per_day`), counted from the stored links by
 * their `creatorDay` index: a creation is `insertCapped` on that index (atomic in every backend,
 * across instances on Redis).
 */
export const SHORT_LINK_QUOTA: DailyQuota = { limit: 'short_links_per_day', what: 'Short-link quota', unit: 'links' };

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/**
 * CSPRNG bytes drawn 4 KiB at a time and handed out once each, as Node's randomUUID caches its
 * bytes: one getrandom call per few hundred codes instead of one per code (it was 5 % of a
 * create's main-thread time at 1M links).
 */
const randomPool = Buffer.alloc(4096);
let randomAt = randomPool.length;
function randomByte(): number {
  if (randomAt === randomPool.length) {
    randomFillSync(randomPool);
    randomAt = 0;
  }
  return randomPool[randomAt++]!;
}

/** Code generation, an object so a test can force collisions. */
export const linkCodes = {
  /** `GENERATED_CODE_LENGTH` uniformly random base62 characters from the CSPRNG. */
  generate(): string {
    let out = '';
    while (out.length < GENERATED_CODE_LENGTH) {
      const b = randomByte();
      // 248 = 4 × 62: rejecting bytes above it keeps every character equally likely.
      if (b < 248) out += BASE62[b % 62];
    }
    return out;
  },
};

export function shortUrlFor(services: Services, code: string): string {
  return `${services.config.publicBaseUrl}/s/${code}`;
}
