/**
 * The one request limiter (docs/contract.md §5). Two windows per subject — a sliding minute and the
 * UTC day — checked and consumed in one synchronous step, so concurrent requests in this
 * process can never let more through than the limit, and a call refused by one window costs
 * nothing in the other (a per-minute 429 does not burn daily quota).
 *
 * The minute window is a sliding log: at most `per_minute` calls in any 60 s. The day window
 * counts calls since 00:00 UTC. Day counts are persisted through `DailyCounts` (one record per
 * subject and day) and read back with `prepare()` before a subject's first call of the day, so
 * they survive a restart. Minute logs live in memory only.
 */
import type { Clock } from '../core/clock.js';
import { MinuteLog } from './minute-log.js';

export const MINUTE_MS = 60_000;
export const DAY_MS = 86_400_000;

export interface WindowLimits {
  per_minute: number;
  per_day: number;
}

/** One window's state after a decision. `resetAt`: epoch ms when a unit next comes back. */
export interface WindowState {
  name: 'minute' | 'day';
  limit: number;
  used: number;
  remaining: number;
  /** Window length in seconds (for RateLimit-Policy). */
  windowSeconds: number;
  resetAt: number;
}

export interface Decision {
  allowed: boolean;
  now: number;
  minute: WindowState;
  day: WindowState;
  /** When refused: epoch ms after which the same call would be allowed. */
  retryAt?: number;
  /** When refused: the window that refused (the later one when both did). */
  refusedBy?: 'minute' | 'day';
}

/** Where day counts persist. `add` is fire-and-forget (the limiter stays synchronous). */
export interface DailyCounts {
  load(subject: string, day: string): Promise<number>;
  add(subject: string, day: string): void;
}

/** The last day formatted by utcDayOf: [start, end) in epoch ms and its text. */
let dayStart = 0;
let dayEnd = -1;
let dayText = '';

/** `YYYY-MM-DD` (UTC) of an instant; formatted once per day, not per call (it ran on every request). */
export function utcDayOf(now: number): string {
  if (now >= dayStart && now < dayEnd) return dayText;
  const text = new Date(now).toISOString().slice(0, 10);
  // An invalid instant (NaN) formats as it always did and is not remembered.
  if (!Number.isFinite(now)) return text;
  dayStart = Math.floor(now / DAY_MS) * DAY_MS;
  dayEnd = dayStart + DAY_MS;
  dayText = text;
  return text;
}

/** Epoch ms of the next 00:00 UTC after `now`. */
export function nextUtcMidnight(now: number): number {
  return Math.floor(now / DAY_MS) * DAY_MS + DAY_MS;
}

interface Entry {
  /** The calls of the last 60 s (runs of calls per millisecond: ./minute-log.ts). */
  log: MinuteLog;
  day: string;
  dayUsed: number;
  /** The day whose persisted count has been read into dayUsed. */
  loadedDay: string | null;
  /** Last prepare() or take(): an entry is never evicted between the two. */
  seen: number;
}

/** Evict idle subjects at most this often (their day counts are reloaded from the store). */
const SWEEP_MS = MINUTE_MS;

export class Limiter {
  readonly #entries = new Map<string, Entry>();
  readonly #pending = new Map<string, Promise<void>>();
  #lastSweep = 0;

  constructor(
    readonly clock: Clock,
    readonly daily?: DailyCounts,
    readonly onLoadError: (err: unknown) => void = () => {},
  ) {}

  /** Number of subjects held in memory (for tests and metrics). */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Makes sure today's persisted count of `subject` is in memory. Returns undefined when it
   * already is (the common case: no promise, no await), else a promise shared by every caller.
   * Call it before `take()`; the transports do, while resolving the caller.
   */
  prepare(subject: string): Promise<void> | undefined {
    const now = this.clock.now();
    const today = utcDayOf(now);
    const e = this.#entries.get(subject);
    if (e) e.seen = now;
    if (e && e.loadedDay === today) return undefined;
    if (!this.daily) {
      this.#entry(subject, today, now).loadedDay = today;
      return undefined;
    }
    const pending = this.#pending.get(subject);
    if (pending) return pending;
    const p = this.daily
      .load(subject, today)
      .catch((err: unknown) => {
        this.onLoadError(err);
        return 0;
      })
      .then((stored) => {
        const entry = this.#entry(subject, today, this.clock.now());
        if (entry.day === today) {
          // Calls taken while loading were already added to the store: the larger count wins.
          entry.dayUsed = Math.max(entry.dayUsed, stored);
          entry.loadedDay = today;
        }
      })
      .finally(() => this.#pending.delete(subject));
    this.#pending.set(subject, p);
    return p;
  }

  /** Checks both windows and, only if both allow, consumes one unit of each. Synchronous. */
  take(subject: string, limits: WindowLimits): Decision {
    const now = this.clock.now();
    this.#maybeSweep(now);
    const today = utcDayOf(now);
    const e = this.#entry(subject, today, now);
    e.log.prune(now);
    const d = this.#decide(e, limits, now);
    if (d.allowed) {
      e.log.push(now);
      e.dayUsed++;
      this.daily?.add(subject, today);
      return this.#decide(e, limits, now, true);
    }
    return d;
  }

  /** The windows as they are, consuming nothing (for /api/auth/info). */
  peek(subject: string, limits: WindowLimits): Decision {
    const now = this.clock.now();
    const e = this.#entries.get(subject);
    if (!e) return this.#decide({ log: new MinuteLog(), day: utcDayOf(now), dayUsed: 0, loadedDay: null, seen: now }, limits, now);
    e.log.prune(now);
    if (e.day !== utcDayOf(now)) {
      e.day = utcDayOf(now);
      e.dayUsed = 0;
    }
    return this.#decide(e, limits, now);
  }

  #entry(subject: string, today: string, now: number): Entry {
    let e = this.#entries.get(subject);
    if (!e) {
      e = { log: new MinuteLog(), day: today, dayUsed: 0, loadedDay: null, seen: now };
      this.#entries.set(subject, e);
    } else if (e.day !== today) {
      e.day = today;
      e.dayUsed = 0;
    }
    e.seen = Math.max(e.seen, now);
    return e;
  }

  #decide(e: Entry, limits: WindowLimits, now: number, allowed?: true): Decision {
    const n = e.log.size;
    // The call that must leave the window before one more fits (more than one after a downgrade).
    const oldestCounted = e.log.at(Math.max(0, n - limits.per_minute)) ?? now;
    return decideWindows(limits, now, { minuteUsed: n, oldestCounted, first: e.log.first ?? now, dayUsed: e.dayUsed }, allowed === true);
  }

  #maybeSweep(now: number): void {
    if (now - this.#lastSweep < SWEEP_MS) return;
    this.#lastSweep = now;
    const today = utcDayOf(now);
    for (const [subject, e] of this.#entries) {
      e.log.prune(now);
      // Idle for a minute: nothing in memory that the store does not also hold.
      const dayKept = this.daily !== undefined || e.day !== today || e.dayUsed === 0;
      if (e.log.size === 0 && dayKept && now - e.seen > SWEEP_MS && !this.#pending.has(subject)) this.#entries.delete(subject);
    }
  }
}

/**
 * At most `limit` events per `windowMs` per subject, in memory (registration: 5 per address per
 * hour). Synchronous check-and-consume like Limiter.
 */
export class SlidingCounter {
  readonly #logs = new Map<string, number[]>();
  #lastSweep = 0;

  constructor(
    readonly clock: Clock,
    readonly limit: number,
    readonly windowMs: number,
  ) {}

  take(subject: string): WindowState & { allowed: boolean; now: number } {
    const now = this.clock.now();
    if (now - this.#lastSweep >= this.windowMs) {
      this.#lastSweep = now;
      for (const [k, log] of this.#logs) if (log.every((t) => t <= now - this.windowMs)) this.#logs.delete(k);
    }
    let log = this.#logs.get(subject);
    if (!log) this.#logs.set(subject, (log = []));
    while (log.length > 0 && log[0]! <= now - this.windowMs) log.shift();
    const allowed = log.length < this.limit;
    if (allowed) log.push(now);
    const n = log.length;
    const full = n >= this.limit;
    return { allowed, now, ...windowState('minute', this.limit, n, this.windowMs, (full ? log[n - this.limit]! : (log[0] ?? now)) + this.windowMs) };
  }
}

const seconds = (ms: number) => Math.max(0, Math.ceil(ms / 1000));

/**
 * Response headers for a decision: the draft-07 trio (`RateLimit-Limit`, `-Remaining`,
 * `-Reset`, describing the window closest to exhaustion) and the current draft's
 * `RateLimit-Policy` / `RateLimit` structured fields listing both windows; `Retry-After` when
 * refused.
 */
export function rateLimitHeaders(d: Decision): Record<string, string> {
  const { minute, day, now } = d;
  let shown: WindowState;
  if (!d.allowed) shown = d.refusedBy === 'day' ? day : minute;
  else shown = day.remaining < minute.remaining ? day : minute;
  const minuteReset = seconds(minute.resetAt - now);
  const dayReset = seconds(day.resetAt - now);
  const h: Record<string, string> = {
    'RateLimit-Limit': String(shown.limit),
    'RateLimit-Remaining': String(shown.remaining),
    'RateLimit-Reset': String(shown === minute ? minuteReset : dayReset),
    'RateLimit-Policy': policyOf(minute, day),
    RateLimit: `"minute";r=${minute.remaining};t=${minuteReset}, "day";r=${day.remaining};t=${dayReset}`,
  };
  if (!d.allowed && d.retryAt !== undefined) h['Retry-After'] = String(Math.max(1, seconds(d.retryAt - now)));
  return h;
}

/** The last RateLimit-Policy built: the same text for every call under one plan (built on each call, it was a third of the headers' cost). */
let policy = { minute: -1, day: -1, minuteSeconds: -1, daySeconds: -1, text: '' };

/** RateLimit-Policy for a pair of windows. */
function policyOf(minute: WindowState, day: WindowState): string {
  const p = policy;
  if (p.minute !== minute.limit || p.day !== day.limit || p.minuteSeconds !== minute.windowSeconds || p.daySeconds !== day.windowSeconds) {
    const text = `"minute";q=${minute.limit};w=${minute.windowSeconds}, "day";q=${day.limit};w=${day.windowSeconds}`;
    policy = { minute: minute.limit, day: day.limit, minuteSeconds: minute.windowSeconds, daySeconds: day.windowSeconds, text };
  }
  return policy.text;
}

/** Headers for a single-window counter (registration). */
export function singleWindowHeaders(w: WindowState & { allowed: boolean; now: number }, policy: string): Record<string, string> {
  const reset = seconds(w.resetAt - w.now);
  const h: Record<string, string> = {
    'RateLimit-Limit': String(w.limit),
    'RateLimit-Remaining': String(w.remaining),
    'RateLimit-Reset': String(reset),
    'RateLimit-Policy': `"${policy}";q=${w.limit};w=${w.windowSeconds}`,
    RateLimit: `"${policy}";r=${w.remaining};t=${reset}`,
  };
  if (!w.allowed) h['Retry-After'] = String(Math.max(1, reset));
  return h;
}

/** What a limiter knows of a subject's windows at `now`. */
export interface WindowCounts {
  minuteUsed: number;
  /** The counted call that must leave the minute window before one more fits. */
  oldestCounted: number;
  /** The oldest call in the minute window (`now` when there is none). */
  first: number;
  dayUsed: number;
}

/** One window's state: `used` of `limit` over `windowMs`, full until `resetAt`. */
function windowState(name: WindowState['name'], limit: number, used: number, windowMs: number, resetAt: number): WindowState {
  return { name, limit, used, remaining: Math.max(0, limit - used), windowSeconds: windowMs / 1000, resetAt };
}

/**
 * The decision and the window states from the counts — one rule for the embedded limiter and
 * the shared one (./shared-limiter.ts). `allowed`: the call was just counted.
 */
export function decideWindows(limits: WindowLimits, now: number, c: WindowCounts, allowed: boolean): Decision {
  const minuteFull = c.minuteUsed >= limits.per_minute;
  const minute = windowState('minute', limits.per_minute, c.minuteUsed, MINUTE_MS, (minuteFull ? c.oldestCounted : c.first) + MINUTE_MS);
  const dayFull = c.dayUsed >= limits.per_day;
  const day = windowState('day', limits.per_day, c.dayUsed, DAY_MS, nextUtcMidnight(now));
  if (allowed || (!minuteFull && !dayFull)) return { allowed: true, now, minute, day };
  const refusedBy = dayFull ? 'day' : 'minute';
  return { allowed: false, now, minute, day, refusedBy, retryAt: dayFull ? day.resetAt : minute.resetAt };
}
