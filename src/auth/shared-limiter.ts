/**
 * The limits of docs/contract.md §5 kept by a shared backend (Redis with REDIS_URL): the same
 * windows and answers as Limiter / SlidingCounter (./limiter.ts), but each check is one atomic
 * step in the backend, on its clock, so any number of instances count against the same
 * budget. Asynchronous: one round trip per check.
 */
import type { RateWindowsState, SharedWindows } from '../state/index.js';
import { decideWindows, type Decision, type WindowLimits, type WindowState } from './limiter.js';

/**
 * A keyed call from a cached key record (issue 37): the generation it was cached under, and what
 * to do instead when the check answers that the record changed since (`current`: the generation
 * the check read; nothing was consumed).
 */
export interface CachedGeneration<R> {
  gen: string;
  stale: (current: string) => R;
}

export class SharedLimiter {
  constructor(readonly windows: SharedWindows) {}

  /** Nothing to load: the backend holds the day counts. */
  prepare(_subject: string): undefined {
    return undefined;
  }

  /**
   * Checks both windows and, only if both allow, consumes one unit of each. `then` (a throw
   * rejects) is applied inside the windows' own promise: no promise chain per call (issue 37).
   */
  take<R = Decision>(subject: string, limits: WindowLimits, then?: (d: Decision) => R, cached?: CachedGeneration<R>): Promise<R> {
    return this.#check(subject, limits, true, then, cached);
  }

  /** The windows as they are, consuming nothing. */
  peek<R = Decision>(subject: string, limits: WindowLimits, then?: (d: Decision) => R, cached?: CachedGeneration<R>): Promise<R> {
    return this.#check(subject, limits, false, then, cached);
  }

  #check<R>(subject: string, limits: WindowLimits, consume: boolean, then: ((d: Decision) => R) | undefined, cached: CachedGeneration<R> | undefined): Promise<R> {
    return this.windows.rate(
      subject,
      limits.per_minute,
      limits.per_day,
      consume,
      (s) => {
        if (s.stale !== undefined) return staleOr(cached, s.stale);
        const d = decision(s, limits, consume);
        return then ? then(d) : (d as R);
      },
      cached?.gen,
    );
  }
}

function staleOr<R>(cached: CachedGeneration<R> | undefined, current: string): R {
  if (!cached) throw new Error('the limit check answered "stale" for a call that named no key generation');
  return cached.stale(current);
}

function decision(s: RateWindowsState, limits: WindowLimits, consumed: boolean): Decision {
  return decideWindows(limits, s.now, { minuteUsed: s.minuteUsed, oldestCounted: s.oldestCounted, first: s.first, dayUsed: s.dayUsed }, consumed && s.allowed);
}

/** At most `limit` events per `windowMs` per subject, in the shared backend (registration). */
export class SharedSlidingCounter {
  constructor(
    readonly windows: SharedWindows,
    readonly limit: number,
    readonly windowMs: number,
  ) {}

  async take(subject: string): Promise<WindowState & { allowed: boolean; now: number }> {
    const s = await this.windows.slide(subject, this.limit, this.windowMs);
    const full = s.used >= this.limit;
    return {
      allowed: s.allowed,
      now: s.now,
      name: 'minute',
      limit: this.limit,
      used: s.used,
      remaining: Math.max(0, this.limit - s.used),
      windowSeconds: this.windowMs / 1000,
      resetAt: (full ? s.oldestCounted : s.first) + this.windowMs,
    };
  }
}
