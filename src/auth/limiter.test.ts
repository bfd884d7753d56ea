import { describe, expect, it } from 'vitest';
import { manualClock } from '../core/clock.js';
import { Limiter, rateLimitHeaders, SlidingCounter, type DailyCounts } from './limiter.js';

const T0 = Date.parse('2026-11-22T09:00:00.000Z');
const FREE = { per_minute: 10, per_day: 100 };


/** An in-memory DailyCounts that records what the limiter persisted. */
function memoryDaily(initial: Record<string, number> = {}): DailyCounts & { data: Map<string, number> } {
  const data = new Map(Object.entries(initial));
  return {
    data,
    async load(subject, day) {
      return data.get(`${subject}|${day}`) ?? 0;
    },
    add(subject, day) {
      const k = `${subject}|${day}`;
      data.set(k, (data.get(k) ?? 0) + 1);
    },
  };
}

function takeN(l: Limiter, subject: string, n: number, limits = FREE): boolean[] {
  return Array.from({ length: n }, () => l.take(subject, limits).allowed);
}

describe('Limiter', () => {
  it('lets exactly per_minute calls through in a burst, then refuses with the retry time', () => {
    const clock = manualClock(T0);
    const l = new Limiter(clock);
    expect(takeN(l, 'a', 13).filter(Boolean).length).toBe(10);
    const d = l.take('a', FREE);
    expect(d).toStrictEqual({
      allowed: false,
      now: T0,
      refusedBy: 'minute',
      retryAt: T0 + 60_000,
      minute: { name: 'minute', limit: 10, used: 10, remaining: 0, windowSeconds: 60, resetAt: T0 + 60_000 },
      day: { name: 'day', limit: 100, used: 10, remaining: 90, windowSeconds: 86400, resetAt: Date.parse('2026-11-23T00:00:00.000Z') },
    });
  });

  it('slides: a unit comes back exactly 60 s after the call that used it', () => {
    const clock = manualClock(T0);
    const l = new Limiter(clock);
    takeN(l, 'a', 5);
    clock.t = T0 + 30_000;
    takeN(l, 'a', 5);
    expect(l.take('a', FREE).allowed).toBe(false);
    clock.t = T0 + 59_999;
    expect(l.take('a', FREE).allowed).toBe(false);
    clock.t = T0 + 60_000;
    // The first five left the window; the five of T0+30 s are still in it.
    expect(takeN(l, 'a', 6)).toStrictEqual([true, true, true, true, true, false]);
    expect(l.take('a', FREE).retryAt).toBe(T0 + 90_000);
  });

  it('per-minute refusals cost nothing of the day', () => {
    const clock = manualClock(T0);
    const l = new Limiter(clock);
    takeN(l, 'a', 10 + 50);
    expect(l.peek('a', FREE).day.used).toBe(10);
    expect(l.peek('a', FREE).day.remaining).toBe(90);
  });

  it('refuses for the rest of the UTC day once per_day is used, then starts again at midnight', () => {
    const clock = manualClock(Date.parse('2026-11-22T23:00:00.000Z'));
    const l = new Limiter(clock);
    for (let m = 0; m < 10; m++) {
      expect(takeN(l, 'a', 10)).toStrictEqual(Array(10).fill(true));
      clock.t += 60_000;
    }
    const d = l.take('a', FREE);
    expect(d.allowed).toBe(false);
    expect(d.refusedBy).toBe('day');
    expect(d.retryAt).toBe(Date.parse('2026-11-23T00:00:00.000Z'));
    expect(rateLimitHeaders(d)['Retry-After']).toBe(String(50 * 60));
    clock.t = Date.parse('2026-11-22T23:59:59.999Z');
    expect(l.take('a', FREE).allowed).toBe(false);
    clock.t = Date.parse('2026-11-23T00:00:00.000Z');
    const next = l.take('a', FREE);
    expect(next.allowed).toBe(true);
    expect(next.day.used).toBe(1);
  });

  it('keeps subjects apart', () => {
    const l = new Limiter(manualClock(T0));
    takeN(l, 'a', 10);
    expect(l.take('a', FREE).allowed).toBe(false);
    expect(l.take('b', FREE).allowed).toBe(true);
  });

  it('persists each allowed call and reads the day count back before the first call (restart)', async () => {
    const clock = manualClock(T0);
    const daily = memoryDaily();
    const first = new Limiter(clock, daily);
    await first.prepare('a');
    takeN(first, 'a', 12);
    expect(daily.data.get('a|2026-11-22')).toBe(10);

    const second = new Limiter(clock, daily);
    expect(second.prepare('a')).toBeInstanceOf(Promise);
    await second.prepare('a');
    expect(second.prepare('a')).toBeUndefined();
    clock.t += 60_000;
    expect(second.take('a', FREE).day.used).toBe(11);
  });

  it('a day count already at the limit refuses after a restart', async () => {
    const clock = manualClock(T0);
    const l = new Limiter(clock, memoryDaily({ 'a|2026-11-22': 100 }));
    await l.prepare('a');
    const d = l.take('a', FREE);
    expect(d.allowed).toBe(false);
    expect(d.refusedBy).toBe('day');
  });

  it('shares one load between simultaneous prepares and keeps calls taken meanwhile', async () => {
    const clock = manualClock(T0);
    let loads = 0;
    const daily = memoryDaily({ 'a|2026-11-22': 40 });
    const slow: DailyCounts = {
      load: async (s, d) => {
        loads++;
        await new Promise((r) => setTimeout(r, 5));
        return daily.load(s, d);
      },
      add: (s, d) => daily.add(s, d),
    };
    const l = new Limiter(clock, slow);
    const p1 = l.prepare('a');
    const p2 = l.prepare('a');
    expect(p1).toBe(p2);
    l.take('a', FREE); // taken before the load finished: already in the store's count
    await p1;
    expect(loads).toBe(1);
    expect(l.peek('a', FREE).day.used).toBe(41);
  });

  it('evicts idle subjects and reloads them from the store, exactly', async () => {
    const clock = manualClock(T0);
    const daily = memoryDaily();
    const l = new Limiter(clock, daily);
    await l.prepare('a');
    takeN(l, 'a', 3);
    clock.t += 3 * 60_000;
    l.take('b', FREE); // triggers the sweep
    expect(l.size).toBe(1);
    await l.prepare('a');
    expect(l.take('a', FREE).day.used).toBe(4);
  });

  it('a failed load counts as zero and is reported', async () => {
    const errors: unknown[] = [];
    const l = new Limiter(manualClock(T0), { load: () => Promise.reject(new Error('disk')), add: () => {} }, (e) => errors.push(e));
    await l.prepare('a');
    expect(l.take('a', FREE).allowed).toBe(true);
    expect(errors.length).toBe(1);
  });
});

describe('rateLimitHeaders', () => {
  it('describes the window closest to exhaustion plus both policies', () => {
    const clock = manualClock(T0);
    const l = new Limiter(clock);
    l.take('a', FREE);
    clock.t = T0 + 20_000;
    const d = l.take('a', FREE);
    expect(rateLimitHeaders(d)).toStrictEqual({
      'RateLimit-Limit': '10',
      'RateLimit-Remaining': '8',
      'RateLimit-Reset': '40',
      'RateLimit-Policy': '"minute";q=10;w=60, "day";q=100;w=86400',
      RateLimit: '"minute";r=8;t=40, "day";r=98;t=53980',
    });
  });

  it('each plan its own policy, whatever the plan of the call before (the policy text is kept for the last plan seen)', () => {
    const clock = manualClock(T0);
    const l = new Limiter(clock);
    const PRO = { per_minute: 60, per_day: 5000 };
    const policies = ['a', 'b', 'a', 'a', 'b'].map((s) => rateLimitHeaders(l.take(s, s === 'a' ? FREE : PRO))['RateLimit-Policy']);
    const free = '"minute";q=10;w=60, "day";q=100;w=86400';
    const pro = '"minute";q=60;w=60, "day";q=5000;w=86400';
    expect(policies).toStrictEqual([free, pro, free, free, pro]);
  });

  it('names the day when it is the tighter one, and sets Retry-After when refused', () => {
    const clock = manualClock(T0);
    const l = new Limiter(clock, memoryDaily({ 'a|2026-11-22': 98 }));
    return Promise.resolve(l.prepare('a')).then(() => {
      const ok = rateLimitHeaders(l.take('a', FREE));
      expect(ok['RateLimit-Limit']).toBe('100');
      expect(ok['RateLimit-Remaining']).toBe('1');
      l.take('a', FREE);
      const refused = rateLimitHeaders(l.take('a', FREE));
      expect(refused['RateLimit-Remaining']).toBe('0');
      expect(refused['Retry-After']).toBe(String(15 * 3600));
      expect(refused['RateLimit-Reset']).toBe(String(15 * 3600));
    });
  });
});

describe('SlidingCounter (registration)', () => {
  it('allows 5 per hour per subject', () => {
    const clock = manualClock(T0);
    const c = new SlidingCounter(clock, 5, 3_600_000);
    expect(Array.from({ length: 7 }, () => c.take('ip').allowed)).toStrictEqual([true, true, true, true, true, false, false]);
    expect(c.take('other').allowed).toBe(true);
    clock.t = T0 + 3_599_999;
    expect(c.take('ip').allowed).toBe(false);
    clock.t = T0 + 3_600_000;
    expect(c.take('ip').allowed).toBe(true);
  });
});
