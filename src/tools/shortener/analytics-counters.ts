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
 * visited, so storage grows with days × links visited, not with visits.
 */
export interface LinkDayStats {
  /** `${code}|${day}` */
  id: string;
  code: string;
  /** YYYY-MM-DD (UTC). */
  day: string;
  /** Visits by people (the clicks of that day). */
  visits: number;
  /** `visits` by UTC hour, 24 entries. */
  hours: number[];
  /** Visits by crawlers and link-preview fetchers (not clicks). */
  bots: number;
  /** Referrer hosts ('direct': none) of the people's visits. */
  referrers: Pairs;
  browsers: Pairs;
  os: Pairs;
  /** desktop / mobile / tablet / other. */
  devices: Pairs;
  /** The bots by name. */
  botNames: Pairs;
}

// A record is ≈ 0.3–2.5 KB: 500 per file keeps a lazy write's file rewrite small (docs/state.md).
export const LINK_DAY_STATS = defineCollection<LinkDayStats>({ name: 'link_day_stats', key: 'id', indexes: ['code'], segmentSize: 500 });

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

function mergePairs(stored: Pairs, add: Map<string, number>, cap: number): Pairs {
  const m = new Map(stored);
  for (const [k, n] of add) bump(m, k, n, cap);
  return [...m];
}

/** The stored day record with a delta added (pure: the store may call it more than once). */
export function applyDelta(cur: LinkDayStats | undefined, code: string, day: string, d: DayDelta): LinkDayStats {
  const base: LinkDayStats = cur ?? { id: `${code}|${day}`, code, day, visits: 0, hours: new Array<number>(24).fill(0), bots: 0, referrers: [], browsers: [], os: [], devices: [], botNames: [] };
  return {
    ...base,
    visits: base.visits + d.visits,
    hours: base.hours.map((n, h) => n + (d.hours[h] ?? 0)),
    bots: base.bots + d.bots,
    referrers: mergePairs(base.referrers, d.referrers, COUNTER_CAPS.referrers),
    browsers: mergePairs(base.browsers, d.browsers, COUNTER_CAPS.browsers),
    os: mergePairs(base.os, d.os, COUNTER_CAPS.os),
    devices: mergePairs(base.devices, d.devices, Infinity),
    botNames: mergePairs(base.botNames, d.botNames, COUNTER_CAPS.botNames),
  };
}
