import { randomUUID } from 'node:crypto';
import type { AddItem } from '../../state/types.js';
import type { Services } from '../../services.js';
import { clicksOf, dayOfId, LINK_DAYS, num, type DayCounts, type LinkDay } from './analytics-counters.js';
import { LINK_CLICK_ROLLUP, LINK_CLICKS, LINKS, utcDay, type LinkClicks } from './links.js';

/**
 * A link's clicks (issue 32, session 18). A redirect counts its click once, in the day's
 * analytics record (LINK_DAYS' `clicks` and `last`), written with the rest of that day's
 * counts: one record per visit instead of two (the clicks record and the day's), which was
 * a third of a uniform visit's CPU (bench/link-visits.ts). The total is then
 *
 *   LINK_CLICKS(code).clicks + the `clicks` of the code's day records after `through`,
 *
 * where `through` is the later of the record's own and the roll-up's (LINK_CLICK_ROLLUP): the roll-up
 * adds each day's clicks to LINK_CLICKS once the day is ROLLUP_LAG_DAYS old, so a read needs the
 * clicks record and the few days since (≈ 5 records: ./clicks-read.ts).
 *
 * Exactly once, on every store and across instances: a day's clicks go into a code's record
 * by a compare-and-set of that one record that also moves its `through` to the day (a second
 * roll-up of the day, by any instance, finds `through` there and changes nothing); days are rolled up
 * in order, and the roll-up's `through` moves to a day only once each of its records is rolled up.
 * A reader counts a day either in the record (through ≥ day) or from the day's record, never
 * both. Day records are deleted (the 90-day sweep) only once rolled up.
 *
 * What this asks of the counts: none may be added to a day after it is rolled up. Visits count
 * into the day of their own time and are written within ANALYTICS_FLUSH_MS; ROLLUP_LAG_DAYS
 * leaves two days for a clock behind or a batch the store refused and kept for later. A batch
 * still refused after that (the store failing for two days while the instance runs) is still
 * written to its day's analytics, and its clicks go straight to their links' clicks records
 * (addLateClicks; docs/shortener.md, "Clicks").
 */

/** A day is rolled up once it is this many days old (today − 3 and before). */
export const ROLLUP_LAG_DAYS = 3;
/** Day records one roll-up pass reads at most (the sweep's, every ANALYTICS_SWEEP_MS). */
export const ROLLUP_BATCH = 5_000;
/**
 * Passes one sweep runs at most while the roll-up is behind (each read its whole budget): up to
 * 12 × ROLLUP_BATCH = 60,000 day records a minute, 86M a day, where one pass a minute keeps up
 * with 7.2M visited link-days a day. What lets the roll-up catch up after it failed or was stopped
 * for days.
 */
export const ROLLUP_CATCH_UP_PASSES = 12;
/**
 * One instance's sweep rolls up at a time: it holds the roll-up's lease this long, renewed by
 * each of its passes (every ANALYTICS_SWEEP_MS). The others' sweeps skip the roll-up while it is
 * held, and take it over once it has run out (the holder stopped, or its passes failed).
 */
export const ROLLUP_LEASE_MS = 3 * 60_000;
/** Day records read (and codes rolled up, concurrently) at a time. */
const ROLLUP_PAGE = 256;
/** The id of the roll-up's one record. */
export const ROLLUP_ID = 'days';

const DAY_MS = 86_400_000;
/** The UTC day `n` days after `day` (YYYY-MM-DD). */
export const addDays = (day: string, n: number): string => new Date(Date.parse(`${day}T00:00:00Z`) + n * DAY_MS).toISOString().slice(0, 10);

/**
 * Starts the roll-up where this version starts counting clicks in the day records, if nothing has:
 * its `through` two days before today (no day record holds clicks yet; two days leave room for a
 * clock behind). Every write of the counts waits for it once per instance, and so does the roll-up,
 * so the roll-up's record exists before any click is in a day record, and a day older than it never
 * holds one. Resolves with the roll-up's `through`.
 */
export async function startRollUp(services: Pick<Services, 'store' | 'clock'>): Promise<string> {
  const first = firstRollUpDay(services.clock.now());
  const rec = await services.store.collection(LINK_CLICK_ROLLUP).update(ROLLUP_ID, (cur) => (cur === undefined ? { id: ROLLUP_ID, through: first } : undefined));
  return rec!.through;
}

/** Where a roll-up that has no record yet starts (startRollUp): two days before today at `now`. */
function firstRollUpDay(now: number): string {
  return addDays(utcDay(now), -2);
}

/** A link-day's clicks counted by this instance, written after the roll-up passed their day. */
export interface LateClicks {
  code: string;
  day: string;
  clicks: number;
  /** The latest click's time (ms; 0: none). */
  last: number;
}

/** What the analytics' writes ask of the clicks' roll-up (below): in this thread, or asked of the main thread by the analytics thread; and a replay of the visit log (./visit-log.ts). */
export interface RollUpHooks {
  /** The roll-up's `through` as a write of the counts starts (see VisitAnalytics.#rolledUpThrough in ./analytics.ts). */
  through(): Promise<string>;
  /** Adds clicks written after their day was rolled up to their links' totals (addLateClicks). */
  late(late: LateClicks[], token: string): Promise<void>;
}

/** The clicks of link-days' counts whose day the roll-up's `through` has reached: what a write of them gives addLateClicks. */
export function lateClicksOf(entries: readonly { code: string; day: string; counts: DayCounts }[], through: string): LateClicks[] {
  return entries.flatMap((e) => (e.day <= through && clicksOf(e.counts) > 0 ? [{ code: e.code, day: e.day, clicks: clicksOf(e.counts), last: e.counts.last }] : []));
}

/**
 * Clicks written after their day was rolled up (a batch the store refused for two days, a clock
 * that far behind), which no roll-up will read again: added to their links' clicks records
 * directly, as the roll-up would have added them (links gone or created after the day left
 * out). The write of the counts calls it for the entries of a day the roll-up's `through` had
 * already reached, read before the write: that day's roll-up is over, so the clicks are counted
 * once. `token` is the chunk's (PendingWrites): sent again, it is not applied twice.
 */
export async function addLateClicks(services: Pick<Services, 'store' | 'log'>, late: readonly LateClicks[], token: string): Promise<void> {
  const { store } = services;
  const byCode = new Map<string, LateClicks[]>();
  for (const l of late) {
    const of = byCode.get(l.code);
    if (of) of.push(l);
    else byCode.set(l.code, [l]);
  }
  const codes = [...byCode.keys()];
  const links = await store.collection(LINKS).getMany(codes);
  const items: AddItem<LinkClicks>[] = [];
  let n = 0;
  codes.forEach((code, i) => {
    const born = links[i]?.createdAt.slice(0, 10);
    const own = born === undefined ? [] : byCode.get(code)!.filter((l) => l.day >= born);
    if (own.length === 0) return;
    const clicks = own.reduce((t, l) => t + l.clicks, 0);
    const last = Math.max(...own.map((l) => l.last));
    n += clicks;
    items.push(last > 0 ? { id: code, deltas: { clicks }, init: { code }, max: { lastClickedMs: last } } : { id: code, deltas: { clicks }, init: { code } });
  });
  if (items.length === 0) return;
  services.log.warn(`shortener: ${n} clicks written after their day was rolled up (the store refused them that long, or a clock runs days behind): added to their links' totals`);
  const out = await store.collection(LINK_CLICKS).addMany(items, { durability: 'lazy', once: `${token}.late` });
  for (const r of out) if (r.status === 'rejected') throw r.reason;
}

/**
 * Each instance's roll-up: where it is in the day it rolls up (a restart starts the day again: the
 * roll-up changes nothing twice), and the pass under way. One pass at a time per instance: two
 * sharing a cursor could each skip the page the other read, and call the day done before that
 * page is rolled up.
 */
interface PassState {
  /** This instance's name as the lease's holder. */
  readonly me: string;
  /** How many times this instance's passes moved the roll-up's `through` (rollUpMoves). */
  moves: number;
  day: string;
  after: string;
  running?: Promise<number>;
}
const passes = new WeakMap<Services, PassState>();

function passState(services: Services): PassState {
  let state = passes.get(services);
  if (!state) passes.set(services, (state = { me: randomUUID(), moves: 0, day: '', after: '' }));
  return state;
}

/** Emitted on the services' events when this instance's roll-up moved the roll-up's `through` (the analytics thread's copy of it is stale then). */
export const ROLLED_UP_EVENT = 'shortener:rolled-up';

/** How many times this instance's roll-up has moved the roll-up's `through`: a copy of the record read before a change is stale. */
export function rollUpMoves(services: Services): number {
  return passState(services).moves;
}

/** What the sweep's roll-up did: day records read, the roll-up's `through` after it, and how many days that is behind the newest day due. */
export interface RollUpOutcome {
  read: number;
  through: string;
  behindDays: number;
  /** Whether this instance held the lease (and so rolled up). */
  held: boolean;
}

/**
 * The sweep's roll-up (every ANALYTICS_SWEEP_MS on every instance): takes or renews the lease and,
 * while this instance holds it, runs passes of `budget` day records until the roll-up is up to
 * date, at most `maxPasses` a call. Without the lease it rolls up nothing and reports where the
 * roll-up stands. Exactness does not rest on the lease (a holder paused past it, or an older
 * version, may roll up at once: see above); it saves the other instances walking the same days.
 * A pass that fails gives the lease up, so another instance tries at its next sweep.
 */
export async function rollUpDue(services: Services, budget = ROLLUP_BATCH, maxPasses = ROLLUP_CATCH_UP_PASSES): Promise<RollUpOutcome> {
  const { me } = passState(services);
  const rollUp = services.store.collection(LINK_CLICK_ROLLUP);
  let read = 0;
  let held = false;
  for (let pass = 0; pass < maxPasses; pass++) {
    const now = services.clock.now();
    const rec = await rollUp.update(ROLLUP_ID, (cur) => {
      if (cur !== undefined && cur.holder !== undefined && cur.holder !== me && num(cur.until) > now) return undefined;
      return { id: ROLLUP_ID, through: cur?.through ?? firstRollUpDay(now), holder: me, until: now + ROLLUP_LEASE_MS };
    });
    if (rec!.holder !== me) break;
    held = true;
    let n: number;
    try {
      n = await rollUpClicks(services, budget);
    } catch (err) {
      await rollUp.update(ROLLUP_ID, (cur) => (cur?.holder === me ? { ...cur, until: 0 } : undefined)).catch(() => {});
      throw err;
    }
    read += n;
    // A pass that did not read its whole budget reached the newest day due.
    if (n < budget) break;
  }
  const through = (await rollUp.get(ROLLUP_ID))?.through ?? '';
  const newest = addDays(utcDay(services.clock.now()), -ROLLUP_LAG_DAYS);
  const behindDays = through === '' || through >= newest ? 0 : Math.round((Date.parse(newest) - Date.parse(through)) / DAY_MS);
  return { read, through, behindDays, held };
}

/**
 * Adds the clicks of the days now ROLLUP_LAG_DAYS old into the links' clicks records, the oldest
 * day first, at most `budget` day records a call (the next call goes on from there); resolves
 * with how many records it read. Every instance may run it at once (see above); a call while
 * this instance's pass is under way waits for that pass.
 */
export function rollUpClicks(services: Services, budget = ROLLUP_BATCH): Promise<number> {
  const s = passState(services);
  s.running ??= rollUpPass(services, s, budget).finally(() => (s.running = undefined));
  return s.running;
}

async function rollUpPass(services: Services, cursor: { day: string; after: string }, budget: number): Promise<number> {
  const { store } = services;
  const rollUp = store.collection(LINK_CLICK_ROLLUP);
  const newest = addDays(utcDay(services.clock.now()), -ROLLUP_LAG_DAYS);
  // The record as it is (made, the first time: startRollUp).
  const stored = await startRollUp(services);
  let through = stored;
  let read = 0;
  while (through < newest && read < budget) {
    const day = addDays(through, 1);
    if (cursor.day !== day) {
      cursor.day = day;
      cursor.after = `${day}|`;
    }
    // The day's records, a page at a time (ids start with the day: they are together, in id order).
    let done = false;
    while (!done && read < budget) {
      const page = await store.scan(LINK_DAYS.name, { after: cursor.after, limit: ROLLUP_PAGE });
      const mine = page.filter((r) => dayOfId(r.id) === day);
      read += mine.length;
      await rollUpPage(services, day, mine.map((r) => JSON.parse(r.json) as LinkDay));
      if (mine.length < ROLLUP_PAGE) done = true;
      else cursor.after = mine[mine.length - 1]!.id;
      if (done && cursor.after === `${day}|` && mine.length === 0) {
        // The day had no record: nor have the days up to the next record's.
        const next = page[0] ? addDays(dayOfId(page[0].id), -1) : newest;
        if (next > day) {
          through = next < newest ? next : newest;
          continue;
        }
      }
      if (done) through = day;
    }
  }
  if (through !== stored) {
    // The links' records on disk before the roll-up's says they are rolled up (their updates are lazy).
    await store.flush();
    const to = through;
    await rollUp.update(ROLLUP_ID, (cur) => (cur !== undefined && cur.through >= to ? undefined : { ...cur, id: ROLLUP_ID, through: to }));
    passState(services).moves++;
    services.events.emit(ROLLED_UP_EVENT);
  }
  return read;
}

/**
 * Rolls up one page of a day's records: each code's clicks of the day added to its clicks record,
 * unless its `through` is there already. A record of a link that is gone, or created after the
 * day (a deleted link's, written late), is left out, as readers leave it out.
 */
async function rollUpPage(services: Services, day: string, recs: readonly LinkDay[]): Promise<void> {
  const counted = recs.filter((r) => num(r.clicks) > 0 || num(r.last) > 0);
  if (counted.length === 0) return;
  const codes = counted.map((r) => r.id.slice(11));
  const links = await services.store.collection(LINKS).getMany(codes);
  const clicksC = services.store.collection(LINK_CLICKS);
  await Promise.all(
    counted.map((r, i) => {
      const link = links[i];
      if (!link || link.createdAt.slice(0, 10) > day) return undefined;
      const n = num(r.clicks);
      const last = num(r.last);
      // Lazy: on the file store a journal line, not a rewrite of the record's segment (rollUpPass
      // flushes before it moves the roll-up's record).
      return clicksC.update(
        codes[i]!,
        (cur) => {
          if (cur?.through !== undefined && cur.through >= day) return undefined;
          const next: LinkClicks = { ...cur, code: codes[i]!, clicks: num(cur?.clicks) + n, through: day };
          if (last > num(cur?.lastClickedMs)) next.lastClickedMs = last;
          return next;
        },
        { durability: 'lazy' },
      );
    }),
  );
}
