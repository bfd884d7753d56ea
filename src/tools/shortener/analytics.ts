import type { Services } from '../../services.js';
import type { UnwrittenGauges } from '../../metrics.js';
import { perServices } from '../../core/per-services.js';
import { ANALYTICS_DAYS, clicksOf, countProfile, dayAdd, dayId, dayOf, dayOfId, emptyCounts, fieldsOf, LINK_DAY_STATS, LINK_DAYS, mergeCounts, profileOf, STORE_CAPS, type DayCounts, type DayDelta } from './analytics-counters.js';
import { addLateClicks, lateClicksOf, ROLLUP_ID, rollUpDue, rollUpMoves, startRollUp, type RollUpHooks } from './clicks.js';
import { LINK_CLICK_ROLLUP } from './links.js';
import { referrerHost, UaCache, type UaInfo } from './analytics-ua.js';
import { PendingWrites, type WriteState } from './pending-writes.js';
import type { VisitLog } from './visit-log.js';

/** The request headers a visit's analytics read (nothing else of the request is looked at). */
export interface VisitHeaders {
  userAgent: string | undefined;
  referer: string | undefined;
}

/**
 * The visit analytics as the rest of the shortener sees them: in this thread (VisitAnalytics)
 * or in the analytics thread (./analytics-thread.ts: ANALYTICS_THREAD=worker). The reads of
 * what is not written yet may answer at once or by message.
 */
export interface Analytics {
  /** Counts one visit of an existing code (see VisitAnalytics.record). */
  record(code: string, headers: VisitHeaders): void;
  /** The counters of a code not written yet, by day. */
  unwritten(code: string): { day: string; delta: DayDelta }[] | Promise<{ day: string; delta: DayDelta }[]>;
  /** The clicks of each code on its `days` not written yet, and the latest one's time (0: none): one message to the analytics thread for a whole url_list page. */
  unwrittenClicksOf(items: readonly { code: string; days: readonly string[] }[]): { clicks: number; last: number }[] | Promise<{ clicks: number; last: number }[]>;
  /** Drops the unwritten counters of a deleted code; resolves once a write of them under way has settled. */
  drop(code: string): Promise<void>;
  /** The state of the counters' writes, of all days (see readBetweenWrites). */
  writes(): WriteState | Promise<WriteState>;
  /** Writes what is counted so far. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** The services the counting uses (the analytics thread has these of its own). */
export type AnalyticsServices = Pick<Services, 'store' | 'clock' | 'log' | 'metrics'>;

/** Written like the clicks: in memory, then one store update per link and day every ANALYTICS_FLUSH_MS. */
export const ANALYTICS_FLUSH_MS = 250;
/**
 * With a visit log (the analytics thread on the file store): the link-day records are written
 * every BATCH_MS instead, or as soon as MAX_PENDING link-days wait (a memory bound), while the
 * log is fsynced every ANALYTICS_FLUSH_MS (docs/shortener.md, "The visit log").
 */
export const BATCH_MS = 10_000;
export const MAX_PENDING = 100_000;

/** A visit log and how often the records are written with it (BATCH_MS unless configured: ANALYTICS_BATCH_MS). */
export interface LoggedBatches {
  log: VisitLog;
  batchMs: number;
}
/** Every instance deletes day records past the window this often, at most SWEEP_BATCH a time. */
export const ANALYTICS_SWEEP_MS = 60_000;
export const SWEEP_BATCH = 500;
const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
/** The counters of one link and day not written yet. */
interface Pending {
  code: string;
  day: string;
  counts: DayCounts;
}

/** One day's counters not written yet (code → counts), and the init of its entries (one function per day, not a closure per visit). */
interface DayWrites {
  writer: PendingWrites<Pending>;
  init: (code: string) => Pending;
}

/** The hour visits are counted in: its UTC day and hour, and that day's writes. */
interface Hour extends DayWrites {
  day: string;
  hour: number;
}

/** The first UTC day analytics keep, relative to `now`. */
export function oldestKeptDay(now: number): string {
  return new Date(now - (ANALYTICS_DAYS - 1) * DAY_MS).toISOString().slice(0, 10);
}

/**
 * The visit analytics of one instance: each counted visit is classified (a cached parse of its
 * User-Agent, the referrer's host) and added to in-memory counters per link and UTC day, which
 * are written every ANALYTICS_FLUSH_MS as one atomic `add` to that day's record's counter
 * fields (blind increments: instances add up with nothing read). A batch the store refuses is
 * kept and retried, like the clicks (see LinkTraffic).
 */
export class VisitAnalytics implements Analytics {
  readonly #services: AnalyticsServices;
  /** The roll-up's hooks when the counting runs in the analytics thread (else the store's own roll-up record and addLateClicks). */
  readonly #rollUp: RollUpHooks | undefined;
  readonly #ua = new UaCache();
  /**
   * The counters not written yet, per UTC day: code → its counts (written under the LINK_DAYS
   * id `${day}|${code}`). Keyed by the code alone, the lookup hashes the code string the
   * redirect cache's lookup hashed already (V8 keeps a string's hash): a `${day}|${code}` key
   * was a new string to build and hash on every visit. A day's writer goes once it holds
   * nothing and its day is not the current one (#retire).
   */
  readonly #days = new Map<string, DayWrites>();
  readonly #sweep: NodeJS.Timeout;
  /** The roll-up's `through` as last read, when (performance.now()), and after how many of this instance's moves of it: see #rolledUpThrough. */
  #through: { day: string; at: number; moves: number } | undefined;
  #hourStart = -Infinity;
  #hour: Hour | undefined;
  #closed = false;
  /** The visit log (see BATCH_MS), its timer, the batch under way and when the last one started (performance.now()). */
  readonly #log: VisitLog | undefined;
  #logTimer: NodeJS.Timeout | undefined;
  #batching: Promise<void> | undefined;
  #batchedAt = performance.now();
  readonly #batchMs: number;

  /**
   * `sweep`: this thread sweeps old analytics (and rolls up clicks) every ANALYTICS_SWEEP_MS —
   * false in the analytics thread, where the main thread's sweep does it through the routed store.
   */
  constructor(services: AnalyticsServices, opts: { rollUp?: RollUpHooks; sweep?: boolean; visitLog?: LoggedBatches } = {}) {
    this.#services = services;
    this.#rollUp = opts.rollUp;
    this.#log = opts.visitLog?.log;
    this.#batchMs = opts.visitLog?.batchMs ?? BATCH_MS;
    if (this.#log) {
      this.#logTimer = setInterval(() => this.#tick(), ANALYTICS_FLUSH_MS);
      this.#logTimer.unref();
    }
    const sweep = opts.sweep !== false;
    services.metrics.watchUnwritten('analytics', () => this.gauges());
    // Links whose stats are never read again: their old days go here (every instance sweeps; a delete is idempotent).
    this.#sweep = setInterval(() => {
      this.#retire();
      if (sweep) sweepAnalytics(services as Services).catch((err: unknown) => services.log.warn('shortener: sweeping old analytics failed', err));
    }, ANALYTICS_SWEEP_MS);
    this.#sweep.unref();
  }

  /** The roll-up's `through` moved (the main thread's roll-up, told to the analytics thread): read again at the next write. */
  rolledUp(): void {
    this.#through = undefined;
    this.#rolledUps++;
  }

  /** How many times the analytics thread was told the roll-up moved (rolledUp). */
  #rolledUps = 0;

  /** The day writers' states together (a writer retired meanwhile reads as a change: the read is only made again). */
  writes(): WriteState {
    let settled = 0;
    let inFlight = false;
    for (const { writer } of this.#days.values()) {
      const w = writer.writes();
      settled += w.settled;
      inFlight ||= w.inFlight;
    }
    return { settled, inFlight };
  }

  /** The link-days not written yet, and how old the oldest count among them is (the metrics' gauges). */
  gauges(): UnwrittenGauges {
    const logged = this.#log !== undefined && !this.#log.broken;
    let entries = 0;
    // With a visit log, what a crash would lose is what is not in the log yet; and a count the store refused is as old as it is (the store is not keeping up).
    let oldestSeconds = logged ? this.#log!.unsyncedMs() / 1000 : 0;
    for (const { writer } of this.#days.values()) {
      const u = writer.unwritten();
      entries += u.entries;
      if (!logged || writer.unsent()) oldestSeconds = Math.max(oldestSeconds, u.oldestSeconds);
    }
    return { entries, oldestSeconds };
  }

  /** The writer of `day`'s counters (made on its first visit). */
  #writesOf(day: string): DayWrites {
    let d = this.#days.get(day);
    if (d === undefined) {
      const services = this.#services;
      const writer = new PendingWrites<Pending>({
        periodMs: ANALYTICS_FLUSH_MS,
        // With a visit log, batches come from #batch (every day's at once, tagged with the log's generation).
        manual: this.#log !== undefined,
        // Blind adds (nothing read first): on Redis one HINCRBY script per shard and chunk of
        // link-days; on the file store a line of its counter journal each, not a segment rewrite.
        // The store's caps bound a record whatever the batches and instances (a batch's own caps
        // come from countVisit).
        write: async (entries, token, logGen) => {
          // Clicks of a day the roll-up has passed go to their links' totals directly (addLateClicks).
          const through = await this.#rolledUpThrough();
          const late = lateClicksOf(
            entries.map(([, p]) => p),
            through,
          );
          if (late.length > 0) await (this.#rollUp ? this.#rollUp.late(late, token) : addLateClicks(services as Services, late, token));
          return services.store.collection(LINK_DAYS).addMany(
            entries.map(([code, { counts }]) => dayAdd(dayId(day, code), counts, logGen)),
            { caps: STORE_CAPS, durability: 'lazy', once: token },
          );
        },
        merge: (into, more) => mergeCounts(into.counts, more.counts),
        describe: (n) => `analytics of ${n} link-days`,
        log: services.log,
      });
      this.#days.set(day, (d = { writer, init: (code) => ({ code, day, counts: emptyCounts() }) }));
      // After close (a visit late in a shutdown): counted and never written, as before a writer per day.
      if (this.#closed) void writer.close();
    }
    return d;
  }

  /** Drops the writers of days other than the current one that hold nothing (written, none to send again, no batch under way). */
  #retire(): void {
    for (const [day, { writer }] of this.#days) {
      if (day === this.#hour?.day || !writer.idle()) continue;
      this.#days.delete(day);
      void writer.close();
    }
  }

  /**
   * The roll-up's `through` as a write of the counts starts. The first write of each instance
   * creates the roll-up's record if none is (startRollUp: before any click is in a day record);
   * later ones read it, at most once per ANALYTICS_FLUSH_MS (a flush writes many chunks), and
   * again at once after this instance's own roll-up moved it (rollUpMoves).
   */
  async #rolledUpThrough(): Promise<string> {
    const now = performance.now();
    if (this.#rollUp) {
      // Asked of the main thread at most once per ANALYTICS_FLUSH_MS, as another instance's move would be seen.
      if (this.#through !== undefined && now - this.#through.at < ANALYTICS_FLUSH_MS) return this.#through.day;
      // An answer that crossed a move told meanwhile (rolledUp) is used once, not kept.
      const moves = this.#rolledUps;
      const day = await this.#rollUp.through();
      if (moves === this.#rolledUps) this.#through = { day, at: now, moves };
      return day;
    }
    const services = this.#services as Services;
    const moves = rollUpMoves(services);
    if (this.#through === undefined || now - this.#through.at >= ANALYTICS_FLUSH_MS || moves !== this.#through.moves) {
      const day = this.#through === undefined ? await startRollUp(services) : ((await services.store.collection(LINK_CLICK_ROLLUP).get(ROLLUP_ID))?.through ?? '');
      this.#through = { day, at: now, moves };
    }
    return this.#through.day;
  }

  /**
   * Counts one visit of an existing code: its analytics, and its click when a person made it (a
   * crawler's or link-preview fetcher's is counted apart, as a bot).
   */
  record(code: string, headers: VisitHeaders): void {
    const ua = this.#ua.info(headers.userAgent);
    this.count(code, ua, ua.bot ? '' : referrerHost(headers.referer), this.#services.clock.now());
  }

  /** Counts a visit classified already (the analytics thread's): its User-Agent's families, referrer host ('' for a bot) and time. */
  count(code: string, ua: UaInfo, referrer: string, now: number): void {
    const { hour, writer, init } = this.#hourOf(now);
    const profile = profileOf(ua, referrer, hour);
    countProfile(writer.entry(code, init).counts, profile, now);
    this.#log?.visit(code, profile, ua, referrer, now);
  }

  /** The UTC day and hour of `now` and the day's writer, found once per hour rather than per visit. */
  #hourOf(now: number): Hour {
    if (this.#hour === undefined || now < this.#hourStart || now >= this.#hourStart + HOUR_MS) {
      this.#hourStart = now - (now % HOUR_MS);
      const iso = new Date(this.#hourStart).toISOString();
      const day = iso.slice(0, 10);
      this.#hour = { day, hour: Number(iso.slice(11, 13)), ...this.#writesOf(day) };
      // A new day: yesterday's writer goes once written (or at a later sweep).
      this.#retire();
    }
    return this.#hour;
  }

  /** How many days' counters this instance holds a writer for (the current day's, and past days' until written). */
  get dayWriters(): number {
    return this.#days.size;
  }

  /** The counters of a code this instance has not written yet, by day. */
  unwritten(code: string): { day: string; delta: DayDelta }[] {
    const out: { day: string; delta: DayDelta }[] = [];
    for (const { writer } of this.#days.values()) for (const p of writer.of(code)) out.push({ day: p.day, delta: dayOf({ id: '', ...fieldsOf(p.counts) }) });
    return out;
  }

  /** The clicks of a code on `days` this instance has not written yet, and the latest one's time (0: none). */
  unwrittenClicks(code: string, days: readonly string[]): { clicks: number; last: number } {
    let clicks = 0;
    let last = 0;
    for (const day of days) {
      for (const p of this.#days.get(day)?.writer.of(code) ?? []) {
        clicks += clicksOf(p.counts);
        if (p.counts.last > last) last = p.counts.last;
      }
    }
    return { clicks, last };
  }

  unwrittenClicksOf(items: readonly { code: string; days: readonly string[] }[]): { clicks: number; last: number }[] {
    return items.map((i) => this.unwrittenClicks(i.code, i.days));
  }

  /** Drops the unwritten counters of a deleted code; resolves once a write of them under way has settled. */
  async drop(code: string): Promise<void> {
    // Its visits in the visit log are not replayed after a crash.
    this.#log?.drop(code);
    await Promise.all(Array.from(this.#days.values(), ({ writer }) => writer.dropWhere((c) => c === code)));
  }

  /** Writes the pending counters: one update per link and day (see PendingWrites). */
  async flush(): Promise<void> {
    if (this.#log) {
      // One batch after the one under way (which may have started before the call's counts).
      await this.#batching;
      return this.#batch();
    }
    await Promise.all(Array.from(this.#days.values(), ({ writer }) => writer.flush()));
  }

  /** Writes what is pending and stops the timers (before the store closes). */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#sweep);
    clearInterval(this.#logTimer);
    // With a visit log, a last batch (what it cannot write is replayed at the next start).
    if (this.#log) await this.flush();
    await Promise.all(Array.from(this.#days.values(), ({ writer }) => writer.close()));
    if (this.#log) {
      this.#log.close();
      const left = this.gauges().entries;
      if (left > 0) this.#services.log.warn(`analytics: ${left} link-days not written at the stop (storage failing) stay in the visit log, counted again at the next start`);
    }
  }

  /** Every ANALYTICS_FLUSH_MS with a visit log: the log fsynced, and a batch when one is due and there is something to write (an idle server starts no new file). */
  #tick(): void {
    const log = this.#log!;
    log.sync();
    if (this.#batching || this.#closed) return;
    const entries = this.gauges().entries;
    if (entries > 0 && (log.broken || performance.now() - this.#batchedAt >= this.#batchMs || entries >= MAX_PENDING)) void this.#batch();
  }

  /**
   * With a visit log: ends the log's file (rotate) and, in the same turn, starts every day's batch
   * of what was counted (so a batch holds the visits of the files up to that one, and none of
   * later ones), each record written tagged with that file's generation (LinkDayStats.logGen).
   * Once every day's batch and all before were written and are on disk, the files up to it go.
   * One at a time.
   */
  #batch(): Promise<void> {
    return (this.#batching ??= (async () => {
      try {
        const log = this.#log!;
        this.#batchedAt = performance.now();
        const gen = log.rotate();
        const writers = Array.from(this.#days.values(), ({ writer }) => writer);
        await Promise.all(writers.map((w) => w.flush(gen)));
        if (log.broken || writers.some((w) => w.unsent())) return;
        await this.#services.store.flush();
        log.deleteThrough(gen);
      } catch (err) {
        this.#services.log.warn('analytics: a batch of the link-day records failed; it is tried again', err);
      } finally {
        this.#batching = undefined;
      }
    })());
  }

  /**
   * Counts again what the visit log files a process before left hold and the records do not
   * (unreplayed), before any visit of this process: written with the next batch, which is
   * tagged past those files, and then they go with it (deleteThrough). Until then a crash
   * replays them again, over records that did not change.
   */
  restore(left: readonly { code: string; day: string; counts: DayCounts }[]): void {
    for (const { code, day, counts } of left) {
      const d = this.#writesOf(day);
      mergeCounts(d.writer.entry(code, d.init).counts, counts);
    }
  }
}

/** The visit analytics of one instance (its services); flushed when the services close. */
/** How long readBetweenWrites reads again before it takes what it read (ms), and its pause between two reads. */
const READ_WAIT_MS = 1_000;
const READ_RETRY_MS = 2;

/**
 * `read` (of the store's records, then of `analytics`' unwritten counts) made while no write of
 * the counts started or settled: a chunk lands in the store at some moment of its write and
 * leaves the unwritten counts when it settles, so a read across that moment would count the
 * chunk twice or not at all (the analytics thread writes on its own connections, so its writes
 * are not ordered with the main thread's reads). Read again, after READ_RETRY_MS, until it was
 * quiet; after READ_WAIT_MS the last read is taken (a stats read under writes that never pause
 * still answers).
 */
export async function readBetweenWrites<T>(analytics: Analytics, read: () => Promise<T>): Promise<T> {
  const until = performance.now() + READ_WAIT_MS;
  for (;;) {
    const before = await analytics.writes();
    const out = await read();
    const after = await analytics.writes();
    if ((!before.inFlight && !after.inFlight && before.settled === after.settled) || performance.now() >= until) return out;
    await new Promise((r) => setTimeout(r, READ_RETRY_MS));
  }
}

export const visitAnalytics: (services: Services) => Analytics = perServices(
  (services) => (services.threads?.[SHORTENER] as { analytics?(s: Services): Analytics } | undefined)?.analytics?.(services) ?? new VisitAnalytics(services),
);

/** The family's name, under which its analytics thread is one of the services' threads. */
export const SHORTENER = 'shortener';

/**
 * Rolls up the clicks of days now old enough (./clicks.ts), then deletes day records older than
 * the kept window (ANALYTICS_DAYS) whose clicks are rolled up, at most `batch` per call (the next
 * takes the rest); resolves with how many went. LINK_DAYS's ids start with the day, so its
 * oldest come first in id order; LINK_DAY_STATS (the layout before) by its day index.
 */
export async function sweepAnalytics(services: Services, batch = SWEEP_BATCH): Promise<number> {
  // A roll-up that fails leaves its days not rolled up, and so kept: the rolled up ones still go.
  const rolled = await rollUpDue(services).catch((err: unknown) => {
    services.log.warn('shortener: rolling up the clicks of past days failed', err);
    services.metrics.clicksRollUp('failed');
    return undefined;
  });
  if (rolled) services.metrics.clicksRollUp('ok', rolled.behindDays);
  const oldest = oldestKeptDay(services.clock.now());
  const rolledUp = rolled?.through ?? (await services.store.collection(LINK_CLICK_ROLLUP).get(ROLLUP_ID))?.through ?? '';
  const days = services.store.collection(LINK_DAYS);
  const before = services.store.collection(LINK_DAY_STATS);
  let n = 0;
  // The oldest record first (one read): most minutes there is nothing past the window.
  const [first] = await days.query({ limit: 1 });
  if (first && dayOfId(first.id) < oldest && dayOfId(first.id) <= rolledUp) {
    for (const r of await days.query({ limit: batch })) {
      // A day whose clicks are not rolled up yet stays (they count in its links' clicks).
      if (dayOfId(r.id) >= oldest || dayOfId(r.id) > rolledUp) break;
      if (await days.delete(r.id, { durability: 'lazy' })) n++;
    }
  }
  for (const r of await before.query({ index: 'day', lt: oldest, limit: batch })) {
    if (await before.delete(r.id, { durability: 'lazy' })) n++;
  }
  return n;
}

/**
 * The LINK_DAYS ids a code's records may have: every day of the kept window, and the next
 * (an instance whose clock runs ahead near midnight).
 */
export function keptDayIds(now: number, code: string): string[] {
  const ids: string[] = [];
  const first = Date.parse(`${oldestKeptDay(now)}T00:00:00Z`);
  for (let i = 0; i <= ANALYTICS_DAYS; i++) ids.push(dayId(new Date(first + i * DAY_MS).toISOString().slice(0, 10), code));
  return ids;
}

/** Deletes every analytics record of a code (url_delete), written or not. */
export async function deleteAnalytics(services: Services, code: string): Promise<void> {
  // This instance's counts of it first, and a write of them under way settled: the deletes below come after it.
  await visitAnalytics(services).drop(code);
  const days = services.store.collection(LINK_DAYS);
  await Promise.all(keptDayIds(services.clock.now(), code).map((id) => days.delete(id)));
  const before = services.store.collection(LINK_DAY_STATS);
  for (const r of await before.query({ index: 'code', eq: code })) await before.delete(r.id);
}
