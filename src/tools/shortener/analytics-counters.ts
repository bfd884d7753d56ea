import { defineCollection, type AddItem } from '../../state/index.js';
import type { UaInfo } from './analytics-ua.js';

/** Days of visits kept per link (UTC days, today included). */
export const ANALYTICS_DAYS = 90;
/** Hours of visits `url_stats` shows (hourly counts live in the last three day records). */
export const ANALYTICS_HOURS = 48;

/**
 * Distinct keys kept per counter, per link and day; visits with further keys go under 'other',
 * so a client sending random referrers or User-Agents cannot grow a record.
 */
export const COUNTER_CAPS = { referrers: 50, browsers: 20, os: 20, botNames: 20 } as const;
export type CounterName = keyof typeof COUNTER_CAPS;
export const COUNTERS = Object.keys(COUNTER_CAPS) as CounterName[];
/** Where keys beyond a counter's cap are counted. */
export const OTHER = 'other';

/** Counts by key, as stored: pairs, not an object (a key such as `__proto__` stays a plain key). */
export type Pairs = [string, number][];

/**
 * The visits of one link on one UTC day: only aggregated counters, never an address, a
 * User-Agent or a full referrer (docs/shortener.md, Privacy). One record per link and day
 * visited, so storage grows with days × links visited, not with visits. The counters are flat
 * fields added to with `Collection.add` (no read first; on Redis a hash per record):
 * `visits`, `bots`, `h:<UTC hour>`, and `<prefix><key>` per counter (see FIELD_PREFIX).
 * Records written before (issue 32, first layout) hold `hours` and `[key, count]` pairs
 * instead; they still read (dayOf adds both), and new visits add flat fields beside them.
 */
export interface LinkDayStats {
  /** `${code}|${day}` */
  id: string;
  code: string;
  /** YYYY-MM-DD (UTC). */
  day: string;
  /**
   * Visits by people (the clicks of that day) counted by a version before session 18, which
   * also added them to LINK_CLICKS: read as visits, never rolled up into the clicks.
   */
  visits?: number;
  /**
   * Visits by people (the clicks of that day) since session 18: the link's click total is its
   * LINK_CLICKS record plus these, until the day is rolled up into it (./clicks.ts).
   */
  clicks?: number;
  /** The latest of those clicks (epoch ms), kept as a maximum. */
  last?: number;
  /** Visits by crawlers and link-preview fetchers (not clicks). */
  bots?: number;
  /** First layout: `visits` by UTC hour, 24 entries. */
  hours?: number[];
  /** First layout: referrer hosts ('direct': none) of the people's visits. */
  referrers?: Pairs;
  browsers?: Pairs;
  os?: Pairs;
  /** desktop / mobile / tablet / other. */
  devices?: Pairs;
  /** The bots by name. */
  botNames?: Pairs;
}

/** The flat field prefix of each counter (devices have no cap: a fixed five). */
export const FIELD_PREFIX = { referrers: 'ref:', browsers: 'br:', os: 'os:', botNames: 'bot:', devices: 'dev:' } as const;
const HOUR_PREFIX = 'h:';

/** The store-side caps: what one record may hold whatever the instances and batches. */
export const STORE_CAPS = COUNTERS.map((c) => ({ prefix: FIELD_PREFIX[c], max: COUNTER_CAPS[c], overflow: FIELD_PREFIX[c] + OTHER }));

/**
 * The layout before issue 32's batched writes (session 11): id `${code}|${day}`, indexed by code
 * and day. Read, swept and deleted, never written any more: empty ANALYTICS_DAYS after the
 * upgrade (docs/shortener.md, "Analytics storage").
 */
export const LINK_DAY_STATS = defineCollection<LinkDayStats>({ name: 'link_day_stats', key: 'id', indexes: ['code', 'day'], segmentSize: 500, counters: true });

/** A link's visits on one UTC day (LINK_DAYS): the counters of LinkDayStats, its code and day in the id. */
export type LinkDay = Omit<LinkDayStats, 'code' | 'day'>;

/**
 * The visits of one link on one UTC day, id `${day}|${code}` (dayId). No index: a stats read
 * gets the ids of the days it shows, a delete the ids of the kept window, and the sweep takes
 * the oldest records in id order, which starts with the day. So a first visit of the day
 * writes the record's counters and its id, with no index entries to keep (on Redis one script
 * per shard and flush for the lot: Collection.addMany). A record is ≈ 0.3–2.5 KB: 500 per file
 * keeps a segment rewrite small (docs/state.md).
 */
export const LINK_DAYS = defineCollection<LinkDay>({ name: 'link_days', key: 'id', segmentSize: 500, counters: true });

/** The LINK_DAYS id of a code's day (YYYY-MM-DD). */
export const dayId = (day: string, code: string): string => `${day}|${code}`;
/** The day of a LINK_DAYS id. */
export const dayOfId = (id: string): string => id.slice(0, 10);

/** A day's counters as `url_stats` sums them (maps by key). */
export interface DayDelta {
  visits: number;
  hours: number[];
  bots: number;
  referrers: Map<string, number>;
  browsers: Map<string, number>;
  os: Map<string, number>;
  devices: Map<string, number>;
  botNames: Map<string, number>;
}

export function emptyDelta(): DayDelta {
  return { visits: 0, hours: new Array<number>(24).fill(0), bots: 0, referrers: new Map(), browsers: new Map(), os: new Map(), devices: new Map(), botNames: new Map() };
}

/** Adds `n` under `key`. */
function bump(m: Map<string, number>, key: string, n: number): void {
  m.set(key, (m.get(key) ?? 0) + n);
}

/**
 * Adds one delta into another, uncapped: a sum over days (an answer's totals), where every
 * day's keys compete (what is counted is capped per day, by the store and by DayCounts).
 */
export function addDelta(into: DayDelta, d: DayDelta): void {
  into.visits += d.visits;
  into.bots += d.bots;
  for (let h = 0; h < 24; h++) into.hours[h]! += d.hours[h] ?? 0;
  for (const c of [...COUNTERS, 'devices'] as const) for (const [k, n] of d[c]) bump(into[c], k, n);
}

/**
 * A link-day's counts not written yet, as the flat counter fields `Collection.add` takes (the
 * LINK_DAYS record's own shape: nothing to convert at the write), with the distinct keys held
 * per STORE_CAPS entry (overflow not counted) so that a new key's cap costs no scan. One small
 * object per link-day: a visit on a new link-day (nearly every visit, visitors spread over 1M
 * links) allocated five maps and an array of 24 before, ≈ 4–5 µs of CPU against ≈ 1 µs.
 */
export interface DayCounts {
  fields: Record<string, number>;
  held: number[];
  /** The latest click counted (epoch ms; 0: none), written as the record's `last` maximum. */
  last: number;
}

export function emptyCounts(): DayCounts {
  return { fields: {}, held: STORE_CAPS.map(() => 0), last: 0 };
}

/** The day record's field of the people's visits (the clicks) and of the latest one's time. */
export const CLICKS_FIELD = 'clicks';
export const LAST_FIELD = 'last';

/** The store's add (addMany's item, with STORE_CAPS) of a link-day's counts, the latest click as a maximum. */
export function dayAdd(id: string, c: DayCounts): AddItem<LinkDay> {
  return c.last > 0 ? { id, deltas: c.fields, init: { id }, max: { [LAST_FIELD]: c.last } } : { id, deltas: c.fields, init: { id } };
}

/** STORE_CAPS's index of each capped counter (STORE_CAPS follows COUNTERS). */
const CAP = Object.fromEntries(COUNTERS.map((c, i) => [c, i])) as Record<CounterName, number>;
const HOUR_FIELDS = Array.from({ length: 24 }, (_, h) => HOUR_PREFIX + h);

/**
 * Adds `n` to field `f`, capped by STORE_CAPS[cap] (-1: uncapped) as the store caps it: a new
 * key past the cap's max goes to its overflow field (which itself counts towards no cap).
 */
function addField(c: DayCounts, f: string, n: number, cap: number): void {
  const cur = c.fields[f];
  if (cur !== undefined) {
    c.fields[f] = cur + n;
    return;
  }
  const cp = STORE_CAPS[cap];
  if (cp && f !== cp.overflow) {
    if (c.held[cap]! >= cp.max) {
      c.fields[cp.overflow] = (c.fields[cp.overflow] ?? 0) + n;
      return;
    }
    c.held[cap]!++;
  }
  c.fields[f] = n;
}

/** Counts one visit (at UTC hour `hour`, time `now`) into a link-day's counts. */
export function countVisit(c: DayCounts, ua: UaInfo, referrer: string, hour: number, now: number): void {
  if (ua.bot) {
    addField(c, 'bots', 1, -1);
    addField(c, FIELD_PREFIX.botNames + ua.browser, 1, CAP.botNames);
    return;
  }
  addField(c, CLICKS_FIELD, 1, -1);
  if (now > c.last) c.last = now;
  addField(c, HOUR_FIELDS[hour]!, 1, -1);
  addField(c, FIELD_PREFIX.referrers + referrer, 1, CAP.referrers);
  addField(c, FIELD_PREFIX.browsers + ua.browser, 1, CAP.browsers);
  addField(c, FIELD_PREFIX.os + ua.os, 1, CAP.os);
  addField(c, FIELD_PREFIX.devices + ua.device, 1, -1);
}

/** Adds one link-day's counts into another (a batch that failed to write goes back into the pending one). */
export function mergeCounts(into: DayCounts, more: DayCounts): void {
  for (const [f, n] of Object.entries(more.fields)) addField(into, f, n, STORE_CAPS.findIndex((c) => f.startsWith(c.prefix)));
  if (more.last > into.last) into.last = more.last;
}

/** A stored record's counters as a delta: flat fields, plus the first layout's arrays if any. */
export function dayOf(r: LinkDayStats | LinkDay): DayDelta {
  const d = emptyDelta();
  // The clicks of a day are its people's visits, whichever version counted them.
  d.visits = num(r.visits) + num(r.clicks);
  d.bots = num(r.bots);
  if (Array.isArray(r.hours)) for (let h = 0; h < 24; h++) d.hours[h]! += num(r.hours[h]);
  for (const c of [...COUNTERS, 'devices'] as const) {
    const pairs = r[c];
    if (Array.isArray(pairs)) for (const [k, n] of pairs) bump(d[c], String(k), num(n));
  }
  for (const [f, v] of Object.entries(r)) {
    if (typeof v !== 'number') continue;
    if (f.startsWith(HOUR_PREFIX)) {
      const h = Number(f.slice(HOUR_PREFIX.length));
      if (Number.isInteger(h) && h >= 0 && h < 24) d.hours[h]! += v;
      continue;
    }
    for (const c of [...COUNTERS, 'devices'] as const) {
      if (f.startsWith(FIELD_PREFIX[c])) {
        bump(d[c], f.slice(FIELD_PREFIX[c].length), v);
        break;
      }
    }
  }
  return d;
}

/** A stored counter's value: a finite number, else 0. */
export const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
