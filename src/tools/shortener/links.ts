import { randomBytes } from 'node:crypto';
import type { DailyQuota } from '../../auth/auth.js';
import { ownerKey } from '../../auth/owner.js';
import type { Services } from '../../services.js';
import { defineCollection, type Store } from '../../state/index.js';

/** Custom and generated codes alike: what may follow /s/. */
export const CODE_PATTERN = /^[A-Za-z0-9_-]{3,20}$/;
export const GENERATED_CODE_LENGTH = 7;
/** Longest long URL accepted, before and after normalisation. */
export const MAX_URL_LENGTH = 2048;

/** A short link. Immutable once created; clicks live in LinkClicks. */
export interface LinkRecord {
  code: string;
  url: string;
  createdAt: string;
  /** Who created it, as the limits count it: `key:<keyId>` or `ip:<hash of the address>`. */
  creator: string;
  /** The creating API key's id, or null for keyless calls. */
  creatorKeyId: string | null;
  /** `${creator}|${YYYY-MM-DD (UTC)}`: the index behind the short-links-per-day quota. */
  creatorDay: string;
}

export interface LinkClicks {
  code: string;
  clicks: number;
  lastClickedAt: string | null;
}

// 1000 links ≈ 250 KB per file: a creation rewrites only the newest file (see docs/state.md).
export const LINKS = defineCollection<LinkRecord>({ name: 'links', key: 'code', indexes: ['creatorDay'], segmentSize: 1000 });
export const LINK_CLICKS = defineCollection<LinkClicks>({ name: 'link_clicks', key: 'code' });

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

/** Code generation, an object so a test can force collisions. */
export const linkCodes = {
  /** `GENERATED_CODE_LENGTH` uniformly random base62 characters from the CSPRNG. */
  generate(): string {
    let out = '';
    while (out.length < GENERATED_CODE_LENGTH) {
      for (const b of randomBytes(16)) {
        // 248 = 4 × 62: rejecting bytes above it keeps every character equally likely.
        if (b < 248 && out.length < GENERATED_CODE_LENGTH) out += BASE62[b % 62];
      }
    }
    return out;
  },
};

export function shortUrlFor(services: Services, code: string): string {
  return `${services.config.publicBaseUrl}/s/${code}`;
}
