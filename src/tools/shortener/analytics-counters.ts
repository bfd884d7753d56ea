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
  /**
   * The newest visit log (./visit-log.ts) whose visits of this link and day the record holds,
   * kept as a maximum: a replay after a crash adds a log's visits only to records below it.
   */
  logGen?: number;
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
 * A link-day's counts not written yet. Most link-days get one visit, or visits all alike, in a
 * flush (visitors spread over 1M links: about 2 in 3 visits are a link-day's first of the
 * flush), so the counts start as a shared VisitProfile and a number of visits (no object of
 * their own but this one) and become their own flat fields only when a visit of another
 * profile comes. The fields are what `Collection.add` takes (the LINK_DAYS record's own
 * shape: nothing to convert at the write), with the distinct keys held per STORE_CAPS entry
 * (overflow not counted) so that a new key's cap costs no scan.
 */
export interface DayCounts {
  /** While `fields` is undefined: the profile of each of the `n` visits counted (undefined: none). */
  one: VisitProfile | undefined;
  n: number;
  /** The counts as fields, once visits of two profiles were counted; with their `held` per STORE_CAPS entry. */
  fields: Record<string, number> | undefined;
  held: number[] | undefined;
  /** The latest click counted (epoch ms; 0: none), written as the record's `last` maximum. */
  last: number;
}

export function emptyCounts(): DayCounts {
  return { one: undefined, n: 0, fields: undefined, held: undefined, last: 0 };
}

/**
 * What one visit adds to its link-day: the fields (and STORE_CAPS index, -1: uncapped) of its
 * families, referrer and hour. Made once per User-Agent, referrer and hour and shared by every
 * visit alike, as are its fields for n visits (`scaled`): the store encodes a shared object
 * once per batch.
 */
export interface VisitProfile {
  /** Field, STORE_CAPS index (-1: uncapped), field, index…: distinct fields. */
  adds: readonly (string | number)[];
  click: boolean;
  /** The fields of n such visits (index n), made when first needed, up to SCALED_MAX; never changed. */
  scaled: Readonly<Record<string, number>>[];
}

/** Visits alike whose fields a profile keeps made (more are made for their write). */
const SCALED_MAX = 8;

/** The day record's field of the people's visits (the clicks) and of the latest one's time. */
export const CLICKS_FIELD = 'clicks';
/** The day record's field of the bots' visits. */
export const BOTS_FIELD = 'bots';
export const LAST_FIELD = 'last';

/** The counts' fields (shared and never to be changed when the counts are a profile's). */
export function fieldsOf(c: DayCounts): Readonly<Record<string, number>> {
  if (c.fields !== undefined) return c.fields;
  if (c.one === undefined) return NONE;
  if (c.n >= SCALED_MAX) return scaled(c.one, c.n);
  return (c.one.scaled[c.n] ??= scaled(c.one, c.n));
}

/**
 * An empty object of counter fields, without a prototype: V8 keeps such an object as a hash
 * table from the start. An object literal would get a hidden class per set of field names, and
 * referrer hosts make nearly every set new (a map allocated per link-day, ≈ 1 µs each).
 */
const newFields = (): Record<string, number> => Object.create(null) as Record<string, number>;

/**
 * The fields of n visits of profile p: each of its fields at n. Its fields are distinct and a
 * visit adds at most one under each cap, whose max is at least 1 (COUNTER_CAPS): none goes
 * to an overflow, as addField would have it.
 */
function scaled(p: VisitProfile, n: number): Record<string, number> {
  const fields = newFields();
  for (let i = 0; i < p.adds.length; i += 2) fields[p.adds[i] as string] = n;
  return fields;
}
const NONE: Readonly<Record<string, number>> = Object.freeze({});
// scaled() and own() rest on every cap holding at least one key.
if (STORE_CAPS.some((c) => c.max < 1)) throw new Error('analytics: a counter cap below 1 breaks the visit profiles');

/** The clicks counted. */
export function clicksOf(c: DayCounts): number {
  if (c.fields !== undefined) return c.fields[CLICKS_FIELD] ?? 0;
  return c.one?.click ? c.n : 0;
}

/**
 * The store's add (addMany's item, with STORE_CAPS) of a link-day's counts, the latest click as
 * a maximum; with `logGen`, the visit log the counts come from (LinkDayStats.logGen), as one.
 */
export function dayAdd(id: string, c: DayCounts, logGen?: number): AddItem<LinkDay> {
  const deltas = fieldsOf(c);
  if (logGen !== undefined) return { id, deltas, init: { id }, max: c.last > 0 ? { [LAST_FIELD]: c.last, [LOG_GEN_FIELD]: logGen } : { [LOG_GEN_FIELD]: logGen } };
  return c.last > 0 ? { id, deltas, init: { id }, max: { [LAST_FIELD]: c.last } } : { id, deltas, init: { id } };
}

/** The record's field of its visit log generation (LinkDayStats.logGen). */
export const LOG_GEN_FIELD = 'logGen';

/** STORE_CAPS's index of each capped counter (STORE_CAPS follows COUNTERS). */
const CAP = Object.fromEntries(COUNTERS.map((c, i) => [c, i])) as Record<CounterName, number>;
const HOUR_FIELDS = Array.from({ length: 24 }, (_, h) => HOUR_PREFIX + h);

/**
 * Adds `n` to field `f`, capped by STORE_CAPS[cap] (-1: uncapped) as the store caps it: a new
 * key past the cap's max goes to its overflow field (which itself counts towards no cap).
 * The counts have their own fields (see own).
 */
function addField(c: DayCounts, f: string, n: number, cap: number): void {
  const fields = c.fields!;
  const cur = fields[f];
  if (cur !== undefined) {
    fields[f] = cur + n;
    return;
  }
  const cp = STORE_CAPS[cap];
  if (cp && f !== cp.overflow) {
    if (c.held![cap]! >= cp.max) {
      fields[cp.overflow] = (fields[cp.overflow] ?? 0) + n;
      return;
    }
    c.held![cap]!++;
  }
  fields[f] = n;
}

/** Gives the counts their own fields (their profile's, see scaled), to count visits of another profile. */
function own(c: DayCounts): void {
  if (c.fields !== undefined) return;
  const held = STORE_CAPS.map(() => 0);
  const p = c.one;
  if (p === undefined || c.n === 0) c.fields = newFields();
  else {
    c.fields = scaled(p, c.n);
    for (let i = 0; i < p.adds.length; i += 2) {
      const cap = p.adds[i + 1] as number;
      if (cap >= 0 && p.adds[i] !== STORE_CAPS[cap]!.overflow) held[cap]!++;
    }
  }
  c.held = held;
  c.one = undefined;
  c.n = 0;
}

/**
 * The counter field of each key seen, per counter: a profile is made with these rather than
 * a new string each time. Bounded: emptied when full (a referrer host comes from the visitor).
 */
const FIELDS = Object.fromEntries([...COUNTERS, 'devices'].map((c) => [c, new Map<string, string>()])) as Record<CounterName | 'devices', Map<string, string>>;
const MAX_FIELDS = 10_000;

/** The counter field of `key` under `counter` (FIELD_PREFIX). */
function fieldOf(counter: CounterName | 'devices', key: string): string {
  const m = FIELDS[counter];
  let f = m.get(key);
  if (f === undefined) {
    if (m.size >= MAX_FIELDS) m.clear();
    m.set(key, (f = FIELD_PREFIX[counter] + key));
  }
  return f;
}

/**
 * The profiles made, by User-Agent families (UaCache keeps one object per User-Agent), then
 * referrer, then hour. Bounded: after MAX_PROFILES made, the cache starts again empty (the
 * profiles pending counts hold stay valid: a new visit of theirs just gets a profile of its
 * own), so varied User-Agents, referrers and hours cost at most ≈ 10 MB (each profile ≈ 1 KB
 * with its fields for up to SCALED_MAX - 1 visits).
 */
let profiles = new WeakMap<UaInfo, Map<string, VisitProfile[]>>();
let made = 0;
export const MAX_PROFILES = 10_000;

/** The profile of a visit (see VisitProfile); a bot's counts neither referrer nor hour. */
export function profileOf(ua: UaInfo, referrer: string, hour: number): VisitProfile {
  const known = profiles.get(ua)?.get(referrer)?.[hour];
  if (known !== undefined) return known;
  if (made >= MAX_PROFILES) {
    profiles = new WeakMap();
    made = 0;
  }
  let byRef = profiles.get(ua);
  if (byRef === undefined) profiles.set(ua, (byRef = new Map()));
  let byHour = byRef.get(referrer);
  if (byHour === undefined) byRef.set(referrer, (byHour = []));
  const adds = ua.bot
    ? [BOTS_FIELD, -1, fieldOf('botNames', ua.browser), CAP.botNames]
    : [CLICKS_FIELD, -1, HOUR_FIELDS[hour]!, -1, fieldOf('referrers', referrer), CAP.referrers, fieldOf('browsers', ua.browser), CAP.browsers, fieldOf('os', ua.os), CAP.os, fieldOf('devices', ua.device), -1];
  made++;
  return (byHour[hour] = { adds, click: !ua.bot, scaled: [] });
}

/** Counts one visit (at UTC hour `hour`, time `now`; a bot's referrer is not counted) into a link-day's counts. */
export function countVisit(c: DayCounts, ua: UaInfo, referrer: string, hour: number, now: number): void {
  countProfile(c, profileOf(ua, referrer, hour), now);
}

/** Counts one visit of profile `p` (profileOf) at time `now` into a link-day's counts. */
export function countProfile(c: DayCounts, p: VisitProfile, now: number): void {
  if (p.click && now > c.last) c.last = now;
  if (c.fields === undefined) {
    if (c.n === 0 || c.one === p) {
      c.one = p;
      c.n++;
      return;
    }
    own(c);
  }
  for (let i = 0; i < p.adds.length; i += 2) addField(c, p.adds[i] as string, 1, p.adds[i + 1] as number);
}

/** Adds one link-day's counts into another (a batch that failed to write goes back into the pending one). */
export function mergeCounts(into: DayCounts, more: DayCounts): void {
  if (more.last > into.last) into.last = more.last;
  if (more.fields === undefined && more.n === 0) return;
  if (into.fields === undefined && more.fields === undefined && (into.n === 0 || into.one === more.one)) {
    into.one = more.one;
    into.n += more.n;
    return;
  }
  own(into);
  for (const [f, n] of Object.entries(fieldsOf(more))) addField(into, f, n, STORE_CAPS.findIndex((c) => f.startsWith(c.prefix)));
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
