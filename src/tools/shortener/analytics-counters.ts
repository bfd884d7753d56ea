import { defineCollection } from '../../state/index.js';
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
  /** Visits by people (the clicks of that day). */
  visits?: number;
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

/** A day's counters while they are counted in memory (maps: cheap to add to). */
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

/** Adds `n` under `key`, or under OTHER once `cap` distinct keys are held. */
export function bump(m: Map<string, number>, key: string, n: number, cap: number): void {
  const cur = m.get(key);
  if (cur !== undefined) m.set(key, cur + n);
  else if (m.size < cap || key === OTHER) m.set(key, n);
  else m.set(OTHER, (m.get(OTHER) ?? 0) + n);
}

/** Counts one visit (at UTC hour `hour`) into a day's delta. */
export function countVisit(d: DayDelta, ua: UaInfo, referrer: string, hour: number): void {
  if (ua.bot) {
    d.bots++;
    bump(d.botNames, ua.browser, 1, COUNTER_CAPS.botNames);
    return;
  }
  d.visits++;
  d.hours[hour]!++;
  bump(d.referrers, referrer, 1, COUNTER_CAPS.referrers);
  bump(d.browsers, ua.browser, 1, COUNTER_CAPS.browsers);
  bump(d.os, ua.os, 1, COUNTER_CAPS.os);
  bump(d.devices, ua.device, 1, Infinity);
}

/**
 * Adds one delta into another (a batch that failed to write goes back into the pending one).
 * `capped: false` for a sum over days (an answer's totals), where every day's keys compete.
 */
export function addDelta(into: DayDelta, d: DayDelta, capped = true): void {
  into.visits += d.visits;
  into.bots += d.bots;
  for (let h = 0; h < 24; h++) into.hours[h]! += d.hours[h] ?? 0;
  for (const c of COUNTERS) for (const [k, n] of d[c]) bump(into[c], k, n, capped ? COUNTER_CAPS[c] : Infinity);
  for (const [k, n] of d.devices) bump(into.devices, k, n, Infinity);
}

/** A day's delta as the flat counter fields `Collection.add` takes. */
export function deltaFields(d: DayDelta): Record<string, number> {
  const out: Record<string, number> = {};
  if (d.visits) out.visits = d.visits;
  if (d.bots) out.bots = d.bots;
  for (let h = 0; h < 24; h++) if (d.hours[h]) out[HOUR_PREFIX + h] = d.hours[h]!;
  for (const c of [...COUNTERS, 'devices'] as const) for (const [k, n] of d[c]) out[FIELD_PREFIX[c] + k] = n;
  return out;
}

/** A stored record's counters as a delta: flat fields, plus the first layout's arrays if any. */
export function dayOf(r: LinkDayStats | LinkDay): DayDelta {
  const d = emptyDelta();
  d.visits = num(r.visits);
  d.bots = num(r.bots);
  if (Array.isArray(r.hours)) for (let h = 0; h < 24; h++) d.hours[h]! += num(r.hours[h]);
  for (const c of [...COUNTERS, 'devices'] as const) {
    const pairs = r[c];
    if (Array.isArray(pairs)) for (const [k, n] of pairs) bump(d[c], String(k), num(n), Infinity);
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
        bump(d[c], f.slice(FIELD_PREFIX[c].length), v, Infinity);
        break;
      }
    }
  }
  return d;
}

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
