import type { Services } from '../../services.js';
import { addDelta, ANALYTICS_DAYS, applyDelta, countVisit, emptyDelta, LINK_DAY_STATS, type DayDelta } from './analytics-counters.js';
import { referrerHost, UaCache } from './analytics-ua.js';

/** The request headers a visit's analytics read (nothing else of the request is looked at). */
export interface VisitHeaders {
  userAgent: string | undefined;
  referer: string | undefined;
}

/** Written like the clicks: in memory, then one store update per link and day every ANALYTICS_FLUSH_MS. */
export const ANALYTICS_FLUSH_MS = 250;
const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
/** Updates written between two turns of the event loop. */
const YIELD_EVERY = 256;

/** `${code}|${day}` → the counters not written yet. */
type Batch = Map<string, { code: string; day: string; delta: DayDelta }>;

/** The first UTC day analytics keep, relative to `now`. */
export function oldestKeptDay(now: number): string {
  return new Date(now - (ANALYTICS_DAYS - 1) * DAY_MS).toISOString().slice(0, 10);
}

/**
 * The visit analytics of one instance: each counted visit is classified (a cached parse of its
 * User-Agent, the referrer's host) and added to in-memory counters per link and UTC day, which
 * are written every ANALYTICS_FLUSH_MS as one atomic update of that day's record (a
 * read-modify-write: on Redis a compare-and-set, so instances add up; `hot`, so it starts from
 * the version this instance last wrote instead of reading first). A batch the store
 * refuses is kept and retried, like the clicks (see LinkTraffic).
 */
export class VisitAnalytics {
  readonly #services: Services;
  readonly #ua = new UaCache();
  #pending: Batch = new Map();
  #flushing: Batch | undefined;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  #hourStart = -Infinity;
  #hour = { day: '', hour: 0 };

  constructor(services: Services) {
    this.#services = services;
  }

  /**
   * Counts one visit of an existing code; true when it is a person's (a click), false for a
   * crawler or link-preview fetcher (counted apart).
   */
  record(code: string, headers: VisitHeaders): boolean {
    const ua = this.#ua.info(headers.userAgent);
    const { day, hour } = this.#hourOf(this.#services.clock.now());
    const id = `${code}|${day}`;
    let p = this.#pending.get(id);
    if (!p) this.#pending.set(id, (p = { code, day, delta: emptyDelta() }));
    countVisit(p.delta, ua, ua.bot ? '' : referrerHost(headers.referer), hour);
    this.#schedule(ANALYTICS_FLUSH_MS);
    return !ua.bot;
  }

  /** The UTC day and hour of `now`, formatted once per hour rather than per visit. */
  #hourOf(now: number): { day: string; hour: number } {
    if (now < this.#hourStart || now >= this.#hourStart + HOUR_MS) {
      this.#hourStart = now - (now % HOUR_MS);
      const iso = new Date(this.#hourStart).toISOString();
      this.#hour = { day: iso.slice(0, 10), hour: Number(iso.slice(11, 13)) };
    }
    return this.#hour;
  }

  #schedule(ms: number): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setTimeout(() => void this.flush(), ms);
    this.#timer.unref();
  }

  /** The counters of a code this instance has not written yet, by day. */
  unwritten(code: string): { day: string; delta: DayDelta }[] {
    const out: { day: string; delta: DayDelta }[] = [];
    for (const batch of [this.#flushing, this.#pending]) for (const p of batch?.values() ?? []) if (p.code === code) out.push(p);
    return out;
  }

  /** Drops the unwritten counters of a deleted code. */
  drop(code: string): void {
    for (const [id, p] of this.#pending) if (p.code === code) this.#pending.delete(id);
  }

  /** Writes the pending counters: one update per link and day. */
  async flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#flushing) {
      this.#schedule(ANALYTICS_FLUSH_MS);
      return;
    }
    if (this.#pending.size === 0) return;
    const batch = (this.#flushing = this.#pending);
    this.#pending = new Map();
    const days = this.#services.store.collection(LINK_DAY_STATS);
    let failed: unknown;
    try {
      let n = 0;
      for (const [id, { code, day, delta }] of batch) {
        if (++n % YIELD_EVERY === 0) await new Promise((r) => setImmediate(r));
        try {
          await days.update(
            id,
            (cur) => applyDelta(cur, code, day, delta),
            // hot: this instance writes the record every flush; on Redis one round trip, not two.
            { durability: 'lazy', hot: true },
          );
          batch.delete(id);
        } catch (err) {
          failed = err;
          break;
        }
      }
    } finally {
      this.#flushing = undefined;
      if (batch.size > 0) {
        for (const [id, p] of batch) {
          const cur = this.#pending.get(id);
          if (cur) addDelta(cur.delta, p.delta);
          else this.#pending.set(id, p);
        }
        if (!this.#closed) this.#services.log.warn(`short links: analytics of ${batch.size} link-days not written yet; retrying`, failed);
        this.#schedule(ANALYTICS_FLUSH_MS * 4);
      } else if (this.#pending.size > 0) this.#schedule(ANALYTICS_FLUSH_MS);
    }
  }

  /** Writes what is pending and stops the timer (before the store closes). */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const deadline = Date.now() + 5_000;
    while (this.#flushing && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    if (!this.#flushing) await this.flush();
    if (this.#pending.size > 0) this.#services.log.warn(`short links: analytics of ${this.#pending.size} link-days lost at shutdown (storage failing)`);
  }
}

const analytics = new WeakMap<Services, VisitAnalytics>();

/** The visit analytics of one instance (its services); flushed when the services close. */
export function visitAnalytics(services: Services): VisitAnalytics {
  let a = analytics.get(services);
  if (!a) {
    const created = new VisitAnalytics(services);
    a = created;
    analytics.set(services, created);
    services.closers.push(() => created.close());
  }
  return a;
}

/** Deletes every analytics record of a code (url_delete), written or not. */
export async function deleteAnalytics(services: Services, code: string): Promise<void> {
  visitAnalytics(services).drop(code);
  const days = services.store.collection(LINK_DAY_STATS);
  for (const r of await days.query({ index: 'code', eq: code })) await days.delete(r.id);
}
