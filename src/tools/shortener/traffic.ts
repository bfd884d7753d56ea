import type { Services } from '../../services.js';
import { perServices } from '../../core/per-services.js';
import { visitAnalytics, type VisitHeaders } from './analytics.js';
import { deferred, type Deferred } from '../../lib/deferred.js';
import { FifoMap } from './fifo-map.js';
import { CHANGE_LOG_SIZE, CODE_PATTERN, LINK_CHANGES, LINK_VISITS, LINKS, type LinkRecord } from './links.js';

/**
 * Links served lately, per instance (their URL and redirect rules). Bounded by LINK_CACHE_MAX
 * (config `linkCacheMax`, default URL_CACHE_MAX): the oldest entry goes first. A plain link
 * (no expiry, no visit limit: nearly all) is kept as its URL string alone, about 200 bytes per
 * entry with its code and the map's slot, so the default 250,000 is about 50 MB. Unknown codes
 * are remembered for a second only (UNKNOWN_TTL_MS: the link may be created a moment later,
 * elsewhere). Updates and deletes
 * reach every instance's cache through the change log (LINK_CHANGES), read every
 * CHANGE_POLL_MS and at once on a signal from another instance: no instance redirects to an
 * old or deleted URL for longer than STALE_BOUND_MS.
 */
export const URL_CACHE_MAX = 250_000;
/**
 * Codes found unknown are remembered for UNKNOWN_TTL_MS (of real time, whatever the service's
 * clock), at most UNKNOWN_MAX of them, oldest out first: a code asked for again meanwhile (a
 * dead link a crawler keeps trying; the router's answer after the preroute's miss) costs no
 * store read. A code created on this instance is dropped at once (see created); one created on
 * another instance redirects here within UNKNOWN_TTL_MS, inside STALE_BOUND_MS.
 */
export const UNKNOWN_TTL_MS = 1000;
export const UNKNOWN_MAX = 10_000;
export const CHANGE_POLL_MS = 1000;
/**
 * Links read from the store together: the codes not cached that one turn of the event loop asked
 * for (the redirects of every request read in that turn) go out as one getMany at its end — on
 * Redis one HMGET instead of a command each (≈ 3 µs of Node CPU per code against ≈ 11, measured
 * with 8 codes a batch) — at most READ_BATCH_MAX a call.
 */
export const READ_BATCH_MAX = 256;
/** The stated bound: a poll period plus a read of the change log (docs/shortener.md). */
export const STALE_BOUND_MS = 2000;
/** The signal topic of a link change (no payload: the receivers read the change log). */
export const CHANGE_TOPIC = 'links-changed';
const CHANGES_ID = 'links';

/** A cached link: what the redirect needs to decide, without a store read. */
export interface CachedLink {
  url: string;
  /** Epoch ms, or null: never expires. */
  expiresAt: number | null;
  expiredUrl: string | null;
  maxVisits: number | null;
  /** Seen used up (maxVisits only grows through url_update, which drops the entry). */
  usedUp: boolean;
}

function cachedOf(link: LinkRecord): CachedLink {
  return {
    url: link.url,
    expiresAt: link.expiresAt ? Date.parse(link.expiresAt) : null,
    expiredUrl: link.expiredUrl ?? null,
    maxVisits: typeof link.maxVisits === 'number' ? link.maxVisits : null,
    usedUp: false,
  };
}

/** Whether a cached link redirects as it is, with nothing to check but the clock. */
function plain(link: CachedLink, now: number): boolean {
  return link.maxVisits === null && (link.expiresAt === null || now < link.expiresAt);
}

/** A cache entry: a plain link's URL alone (the compact form), or the link with its rules. */
type Entry = string | CachedLink;

function compact(link: CachedLink): Entry {
  return link.maxVisits === null && link.expiresAt === null ? link.url : link;
}

function expand(e: Entry): CachedLink {
  return typeof e === 'string' ? { url: e, expiresAt: null, expiredUrl: null, maxVisits: null, usedUp: false } : e;
}

/**
 * The per-instance state of the redirect: cached long URLs. A visit's click is counted with its
 * analytics (VisitAnalytics: the day record's `clicks`; ./clicks.ts).
 */
export class LinkTraffic {
  readonly #services: Services;
  readonly #links: FifoMap<Entry>;
  readonly #max: number;
  /** The change log's generation this cache reflects; -1 until first read (nothing is cached before). */
  #gen = -1;
  #poll: NodeJS.Timeout | undefined;
  #unsubscribe: (() => void) | undefined;
  #syncing: Promise<void> | undefined;
  #closed = false;
  /** Codes the store did not have: code → until when (performance.now()) that answer stands. */
  readonly #unknown = new FifoMap<number>(UNKNOWN_MAX);
  /** Counts this instance's creates: an unknown found by a read that overlapped one is not kept. */
  #creates = 0;
  /**
   * Counts this instance's updates and deletes (forget): a read that overlapped one may hold the
   * record from before, and the change log's generation moves only at the next sync.
   */
  #changes = 0;
  /** The links to read at the end of this turn: code → its read (a code asked twice is read once). */
  #toRead: Map<string, Deferred<LinkRecord | undefined>> | undefined;

  constructor(services: Services) {
    this.#services = services;
    this.#max = services.config.linkCacheMax ?? URL_CACHE_MAX;
    this.#links = new FifoMap<Entry>(this.#max);
    this.#poll = setInterval(() => void this.sync(), CHANGE_POLL_MS);
    this.#poll.unref();
    this.#unsubscribe = services.store.signals?.subscribe(CHANGE_TOPIC, () => void this.sync());
    void this.sync();
  }

  /** The cached long URL of a code when it redirects as it is (no expiry passed, no visit limit). */
  url(code: string): string | undefined {
    const e = this.#links.get(code);
    if (typeof e === 'string') return e;
    return e && plain(e, this.#services.clock.now()) ? e.url : undefined;
  }

  /**
   * The cached link of a code, if it is cached. A used-up mark set on it is kept only for
   * links with rules (a plain one has no visit limit to use up).
   */
  cached(code: string): CachedLink | undefined {
    const e = this.#links.get(code);
    return e === undefined ? undefined : expand(e);
  }

  /** How many links are cached. */
  get cachedUrls(): number {
    return this.#links.size;
  }

  /** Reads a link from the store, and caches it unless the change log moved meanwhile. */
  async load(code: string): Promise<CachedLink | undefined> {
    if (this.#gen === -1) await this.sync();
    const until = this.#unknown.get(code);
    if (until !== undefined) {
      if (performance.now() < until) return undefined;
      this.#unknown.delete(code);
    }
    const gen = this.#gen;
    const creates = this.#creates;
    const changes = this.#changes;
    const link = await this.#read(code);
    // A change during the store read (in the log, or made here) may predate it or not: keep nothing.
    const steady = gen !== -1 && gen === this.#gen && changes === this.#changes;
    if (!link) {
      if (steady && creates === this.#creates) this.#rememberUnknown(code);
      return undefined;
    }
    const c = cachedOf(link);
    if (steady) this.#remember(code, c);
    return c;
  }

  /** A link as the store has it, read with the others this turn asks for (READ_BATCH_MAX). */
  #read(code: string): Promise<LinkRecord | undefined> {
    let batch = this.#toRead;
    if (!batch) {
      const b = (batch = this.#toRead = new Map());
      setImmediate(() => this.#readBatch(b));
    }
    let d = batch.get(code);
    if (!d) {
      d = deferred<LinkRecord | undefined>();
      batch.set(code, d);
      if (batch.size >= READ_BATCH_MAX) this.#readBatch(batch);
    }
    return d.promise;
  }

  #readBatch(batch: Map<string, Deferred<LinkRecord | undefined>>): void {
    if (this.#toRead !== batch) return; // sent already (it was full)
    this.#toRead = undefined;
    const codes = [...batch.keys()];
    const failed = (err: unknown) => {
      for (const d of batch.values()) d.reject(err);
    };
    try {
      this.#services.store
        .collection(LINKS)
        .getMany(codes)
        .then((links) => codes.forEach((c, i) => batch.get(c)!.resolve(links[i])), failed);
    } catch (err) {
      // A store that throws at once (closed) fails these reads, not the process (this runs from setImmediate).
      failed(err);
    }
  }

  /** Caches a plain link (no expiry, no visit limit) as served now. */
  remember(code: string, url: string): void {
    this.#remember(code, { url, expiresAt: null, expiredUrl: null, maxVisits: null, usedUp: false });
  }

  #remember(code: string, link: CachedLink): void {
    this.#links.set(code, compact(link));
  }

  #rememberUnknown(code: string): void {
    this.#unknown.set(code, performance.now() + UNKNOWN_TTL_MS);
  }

  /** How many codes are remembered as unknown. */
  get unknownCodes(): number {
    return this.#unknown.size;
  }

  /** This instance created a link: a redirect of its code reads the store again. */
  created(code: string): void {
    this.#creates++;
    this.#unknown.delete(code);
  }

  /** This instance changed or deleted a link: drop it now (the others follow the change log). */
  forget(code: string): void {
    this.#changes++;
    this.#links.delete(code);
    this.#unknown.delete(code);
  }

  /** Whether a cached (or just read) link redirects to its URL as it is, now (no rules to apply). */
  redirectsAsIs(link: CachedLink): boolean {
    return plain(link, this.#services.clock.now());
  }

  /** Reads the change log and drops the changed codes (all, when more changed than it keeps). */
  sync(): Promise<void> {
    this.#syncing ??= this.#readChanges().finally(() => (this.#syncing = undefined));
    return this.#syncing;
  }

  async #readChanges(): Promise<void> {
    if (this.#closed) return;
    let log;
    try {
      log = await this.#services.store.collection(LINK_CHANGES).get(CHANGES_ID);
    } catch {
      // The change log cannot be read: a change may be missed, so nothing stays cached (and
      // nothing is cached) until a read succeeds again.
      this.#links.clear();
      this.#unknown.clear();
      this.#gen = -1;
      return;
    }
    const gen = log?.gen ?? 0;
    if (gen === this.#gen) return;
    // Links deleted since the last read: this instance's unwritten counts of them go (a write
    // of them would bring back a day record url_delete removed).
    if (this.#gen !== -1) for (const r of log?.recent ?? []) if (r.deleted && r.gen > this.#gen) void visitAnalytics(this.#services).drop(r.code);
    const oldest = log?.recent[0]?.gen ?? gen + 1;
    if (this.#gen === -1 || gen < this.#gen || oldest > this.#gen + 1) {
      this.#links.clear();
      this.#unknown.clear();
    } else {
      for (const r of log?.recent ?? []) {
        if (r.gen <= this.#gen) continue;
        this.#links.delete(r.code);
        this.#unknown.delete(r.code);
      }
    }
    this.#gen = gen;
  }

  /** Writes the counts of the visits served so far (their clicks are in the analytics' records). */
  flush(): Promise<void> {
    return visitAnalytics(this.#services).flush();
  }

  /** Stops the change log's timer and signal. */
  close(): void {
    this.#closed = true;
    clearInterval(this.#poll);
    this.#unsubscribe?.();
  }
}

/** The redirect state of one instance (its services); flushed when the services close. */
export const linkTraffic: (services: Services) => LinkTraffic = perServices((services) => new LinkTraffic(services));

/** Where a visit goes: the long URL, or gone (to expiredUrl, or null: the 410 page). */
export type Visit = { go: string } | { gone: string | null };

/**
 * Records a change of a link (url_update, url_delete) in the change log every instance's cache
 * follows, after the link itself was written, and wakes the other instances.
 */
async function recordLinkChange(services: Services, code: string, deleted = false): Promise<void> {
  linkTraffic(services).forget(code);
  await services.store.collection(LINK_CHANGES).update(CHANGES_ID, (cur) => {
    const gen = (cur?.gen ?? 0) + 1;
    const recent = [...(cur?.recent ?? []), { gen, code, ...(deleted ? { deleted: true as const } : {}) }].slice(-CHANGE_LOG_SIZE);
    return { id: CHANGES_ID, gen, recent };
  });
  services.store.signals?.publish(CHANGE_TOPIC);
}

/** Retries, a second apart, of a write that failed after its change was made (the change log; a deleted link's counts and analytics). */
export const CHANGE_RETRIES = 60;

/**
 * Records a change already made to a link (recordLinkChange). Its failure does not fail the
 * call, whose change is made (and a delete tried again would answer 404): the change log is
 * written again every second in the background, at most CHANGE_RETRIES times, and the other
 * instances follow once it is (session 24's review: a failed write left them on the old or
 * deleted URL until the link fell out of their caches, and the 503 said nothing had changed).
 */
export async function announceLinkChange(services: Services, code: string, deleted = false): Promise<void> {
  try {
    await recordLinkChange(services, code, deleted);
  } catch (err) {
    services.log.warn(`short links: ${code} was ${deleted ? 'deleted' : 'changed'}, but the change log could not be written (other instances keep the link as it was until it is); retrying`, err);
    retryInBackground(services, () => recordLinkChange(services, code, deleted), CHANGE_RETRIES, 1000);
  }
}

/**
 * Runs `work` again every `everyMs` (unref'd timers) until it succeeds, the store is closed, or
 * `times` tries have failed (then logged).
 */
export function retryInBackground(services: Services, work: () => Promise<unknown>, times: number, everyMs: number): void {
  let left = times;
  const again = () => {
    const t = setTimeout(() => {
      work().then(
        () => {},
        (err: unknown) => {
          if ((err as { code?: unknown } | null)?.code === 'CLOSED') return;
          if (--left > 0) again();
          else services.log.warn(`short links: gave up after ${times} tries`, err);
        },
      );
    }, everyMs);
    t.unref();
  };
  again();
}

/** A visit without request headers (in-process callers): a person's, referrer 'direct'. */
const NO_HEADERS: VisitHeaders = { userAgent: undefined, referer: undefined };

/**
 * For `GET /s/{code}` (countClick) and HEAD: where the visit goes, or null when the code is
 * unknown or malformed. A link past expiresAt or maxVisits is gone. maxVisits is exact: each
 * GET of such a link is one atomic increment in the store (on Redis, across instances); HEAD
 * only reads. Clicks count the redirects to the long URL only.
 */
export async function visitShortLink(services: Services, code: string, countClick: boolean, headers: VisitHeaders = NO_HEADERS): Promise<Visit | null> {
  const traffic = linkTraffic(services);
  let link = traffic.cached(code);
  if (link === undefined) {
    if (!CODE_PATTERN.test(code)) return null;
    link = await traffic.load(code);
    if (!link) return null;
  }
  if (link.expiresAt !== null && services.clock.now() >= link.expiresAt) return { gone: link.expiredUrl };
  if (link.maxVisits !== null) {
    if (link.usedUp) return { gone: link.expiredUrl };
    const visits = services.store.collection(LINK_VISITS);
    const init = { code, visits: 0 };
    const used = countClick ? (await visits.increment(code, 'visits', 1, { init })).visits : ((await visits.get(code))?.visits ?? 0) + 1;
    if (used > link.maxVisits) {
      link.usedUp = true;
      // A refused GET takes its count back: the count is the redirects served, so raising
      // maxVisits reopens the link. Still exact: a redirect needs a result ≤ max, and a count
      // not yet taken back can only refuse. Not taken back: a 410 all the same.
      if (countClick) await visits.increment(code, 'visits', -1, { init }).catch(() => {});
      return { gone: link.expiredUrl };
    }
  }
  // One count for the analytics and the clicks (a crawler's or link preview's is not a click).
  if (countClick) visitAnalytics(services).record(code, headers);
  return { go: link.url };
}

/**
 * For `GET /s/{code}`: the long URL, with one click counted, or null when the code is unknown,
 * malformed, expired or used up. A failure to count never blocks the redirect (see LinkTraffic).
 */
export async function resolveShortLink(services: Services, code: string, opts: { countClick?: boolean } = {}): Promise<string | null> {
  const v = await visitShortLink(services, code, opts.countClick !== false);
  return v && 'go' in v ? v.go : null;
}
