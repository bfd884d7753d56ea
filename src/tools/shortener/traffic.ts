import type { Services } from '../../services.js';
import { CODE_PATTERN, LINK_CLICKS, LINKS, type LinkClicks } from './links.js';

/**
 * Clicks are counted in memory and written to the store every CLICK_FLUSH_MS, one increment
 * per code and batch: a redirect then costs a map update, not a store write (on Redis, a round
 * trip). With the store's lazy writes (on disk within LAZY_FLUSH_MS), a click is durable within
 * 0.75 s, inside the second of loss docs/contract.md §7 allows. `url_stats` on the same
 * instance adds what is still in memory; another instance sees it once it is flushed.
 */
export const CLICK_FLUSH_MS = 250;

/**
 * Long URLs of the codes served lately, per instance. Links are immutable and never deleted,
 * so a cached URL is never stale, on one instance or many; unknown codes are not cached (the
 * link may be created a moment later, elsewhere). Bounded: the oldest entry goes first.
 */
export const URL_CACHE_MAX = 50_000;

/** Increments written between two turns of the event loop (≈ 1–2 ms of work). */
const YIELD_EVERY = 256;

interface Pending {
  n: number;
  /** The time of the latest click, ms. */
  last: number;
}

/** Counts `n` clicks of a code, the latest at `last`. */
function add(clicks: Map<string, Pending>, code: string, n: number, last: number): void {
  const p = clicks.get(code);
  if (!p) clicks.set(code, { n, last });
  else {
    p.n += n;
    if (last > p.last) p.last = last;
  }
}

/** The per-instance state of the redirect: cached long URLs and clicks not yet written. */
export class LinkTraffic {
  readonly #services: Services;
  readonly #urls = new Map<string, string>();
  #pending = new Map<string, Pending>();
  /** The batch being written (still counted by `clicksOf`). */
  #flushing: Map<string, Pending> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(services: Services) {
    this.#services = services;
  }

  /** The cached long URL of a code, if it is cached. */
  url(code: string): string | undefined {
    return this.#urls.get(code);
  }

  /** How many long URLs are cached. */
  get cachedUrls(): number {
    return this.#urls.size;
  }

  remember(code: string, url: string): void {
    if (this.#urls.size >= URL_CACHE_MAX) this.#urls.delete(this.#urls.keys().next().value!);
    this.#urls.set(code, url);
  }

  /** Counts one click of an existing code, now. */
  click(code: string): void {
    add(this.#pending, code, 1, this.#services.clock.now());
    this.#schedule(CLICK_FLUSH_MS);
  }

  #schedule(ms: number): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setTimeout(() => void this.flush(), ms);
    this.#timer.unref();
  }

  /** The stored clicks of a code plus those this instance has not written yet. */
  merged(code: string, stored: LinkClicks | undefined): { clicks: number; lastClickedAt: string | null } {
    let clicks = stored?.clicks ?? 0;
    let last = stored?.lastClickedAt ? Date.parse(stored.lastClickedAt) : null;
    for (const batch of [this.#flushing, this.#pending]) {
      const p = batch?.get(code);
      if (!p) continue;
      clicks += p.n;
      if (last === null || p.last > last) last = p.last;
    }
    return { clicks, lastClickedAt: last === null ? null : new Date(last).toISOString() };
  }

  /**
   * Writes the pending clicks, one increment per code. A batch the store refuses (storage
   * failing, Redis away) is put back and tried again at the next flush; it is bounded by the
   * number of links, as only existing codes are counted.
   */
  async flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#flushing) {
      // One batch at a time: this one goes once the batch under way is written.
      this.#schedule(CLICK_FLUSH_MS);
      return;
    }
    if (this.#pending.size === 0) return;
    const batch = (this.#flushing = this.#pending);
    this.#pending = new Map();
    const clicks = this.#services.store.collection(LINK_CLICKS);
    let failed: unknown;
    try {
      let n = 0;
      for (const [code, p] of batch) {
        // Thousands of codes in one batch: give the event loop back now and then (an embedded
        // store's increment settles in microtasks, so the loop alone would never yield).
        if (++n % YIELD_EVERY === 0) await new Promise((r) => setImmediate(r));
        try {
          await clicks.increment(code, 'clicks', p.n, {
            init: { code, clicks: 0, lastClickedAt: null },
            set: { lastClickedAt: new Date(p.last).toISOString() },
            durability: 'lazy',
          });
          batch.delete(code);
        } catch (err) {
          failed = err;
          break;
        }
      }
    } finally {
      this.#flushing = undefined;
      if (batch.size > 0) {
        // Not written: back into the pending clicks (merged with any counted meanwhile).
        for (const [code, p] of batch) add(this.#pending, code, p.n, p.last);
        if (!this.#closed) this.#services.log.warn(`short links: ${batch.size} codes' clicks not written yet; retrying`, failed);
        this.#schedule(CLICK_FLUSH_MS * 4);
      } else if (this.#pending.size > 0) {
        // Clicks counted while this batch was written.
        this.#schedule(CLICK_FLUSH_MS);
      }
    }
  }

  /** Writes what is pending (before the store closes) and stops the timer. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    // A flush under way finishes first (within a bound: a store that hangs must not hold the shutdown); then the rest.
    const deadline = Date.now() + 5_000;
    while (this.#flushing && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    if (!this.#flushing) await this.flush();
    if (this.#pending.size > 0) this.#services.log.warn(`short links: ${this.#pending.size} codes' clicks lost at shutdown (storage failing)`);
  }
}

const traffic = new WeakMap<Services, LinkTraffic>();

/** The redirect state of one instance (its services); flushed when the services close. */
export function linkTraffic(services: Services): LinkTraffic {
  let t = traffic.get(services);
  if (!t) {
    const created = new LinkTraffic(services);
    t = created;
    traffic.set(services, created);
    // Closers run in reverse: this one before the store closes.
    services.closers.push(() => created.close());
  }
  return t;
}

/**
 * For `GET /s/{code}`: the long URL, with one click counted, or null when the code is unknown
 * or malformed. A failure to count never blocks the redirect (see LinkTraffic).
 */
export async function resolveShortLink(services: Services, code: string, opts: { countClick?: boolean } = {}): Promise<string | null> {
  const traffic = linkTraffic(services);
  let url = traffic.url(code);
  if (url === undefined) {
    if (!CODE_PATTERN.test(code)) return null;
    const link = await services.store.collection(LINKS).get(code);
    if (!link) return null;
    url = link.url;
    traffic.remember(code, url);
  }
  if (opts.countClick !== false) traffic.click(code);
  return url;
}
