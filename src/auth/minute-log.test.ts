/**
 * The embedded limiter's minute window as runs of calls (session 10, issue 37): every decision
 * equals the one-timestamp-per-call log's (a reference kept here, as limiter.ts was), while it
 * holds one entry per millisecond and its cost grows linearly with the calls it holds.
 */
import { describe, expect, it } from 'vitest';
import { growth, GROWTH_TIMEOUT_MS, MAX_GROWTH } from '../../test/growth.js';
import { manualClock } from '../core/clock.js';
import { decideWindows, Limiter, MINUTE_MS, utcDayOf, type Decision, type WindowLimits } from './limiter.js';
import { MinuteLog } from './minute-log.js';

const T0 = Date.parse('2026-11-22T23:58:30.000Z');

/** The limiter with one timestamp per call (no day persistence): what every answer must equal. */
class PerCallLimiter {
  readonly #logs = new Map<string, { log: number[]; day: string; used: number }>();
  constructor(readonly now: () => number) {}

  take(subject: string, limits: WindowLimits, consume = true): Decision {
    const now = this.now();
    let e = this.#logs.get(subject);
    if (!e) this.#logs.set(subject, (e = { log: [], day: utcDayOf(now), used: 0 }));
    if (e.day !== utcDayOf(now)) (e.day = utcDayOf(now)), (e.used = 0);
    let i = 0;
    while (i < e.log.length && e.log[i]! <= now - MINUTE_MS) i++;
    e.log.splice(0, i);
    const decide = (allowed: boolean) => {
      const n = e.log.length;
      return decideWindows(limits, now, { minuteUsed: n, oldestCounted: e.log[Math.max(0, n - limits.per_minute)] ?? now, first: e.log[0] ?? now, dayUsed: e.used }, allowed);
    };
    const d = decide(false);
    if (!consume || !d.allowed) return d;
    e.log.push(now);
    e.used++;
    return decide(true);
  }
}

function lcg(seed: number): () => number {
  let x = seed;
  return () => (x = (x * 1103515245 + 12345) % 2147483648) / 2147483648;
}

describe('the minute window as runs of calls (session 10)', () => {
  it('scripted sequences (bursts in one millisecond, plan changes both ways, looks, expiry, midnight): every decision equals the per-call log’s', () => {
    const limits: WindowLimits[] = [
      { per_minute: 10, per_day: 100 },
      { per_minute: 3, per_day: 100 },
      { per_minute: 60, per_day: 5000 },
      { per_minute: 400, per_day: 100_000 },
      { per_minute: 5, per_day: 8 },
    ];
    const steps = [0, 0, 0, 0, 1, 1, 2, 7, 150, 20_000, 59_999, 60_000, 61_000];
    for (const seed of [3, 11, 2026]) {
      const rnd = lcg(seed);
      const clock = manualClock(T0);
      const l = new Limiter(clock);
      const ref = new PerCallLimiter(() => clock.t);
      let plan = limits[0]!;
      for (let i = 0; i < 6000; i++) {
        clock.advance(steps[Math.floor(rnd() * steps.length)]!);
        if (rnd() < 0.02) plan = limits[Math.floor(rnd() * limits.length)]!;
        const subject = rnd() < 0.8 ? 'a' : 'b';
        const look = rnd() < 0.15;
        const got = look ? l.peek(subject, plan) : l.take(subject, plan);
        expect(got, `seed ${seed} step ${i}`).toStrictEqual(ref.take(subject, plan, !look));
      }
    }
  });

  it('the log itself against an array of timestamps, with a clock that sometimes goes back: same size, first and every position', () => {
    const rnd = lcg(5);
    const log = new MinuteLog();
    let ref: number[] = [];
    let t = T0;
    for (let i = 0; i < 20_000; i++) {
      t += [0, 0, 0, 1, 3, -2, 9_000, 30_000][Math.floor(rnd() * 8)]!;
      if (rnd() < 0.5) {
        let k = 0;
        while (k < ref.length && ref[k]! <= t - MINUTE_MS) k++;
        ref = ref.slice(k);
        log.prune(t);
      } else {
        ref.push(t);
        log.push(t);
      }
      const pos = Math.floor(rnd() * (ref.length + 2));
      expect([log.size, log.first, log.at(pos), log.at(0)], `step ${i}`).toStrictEqual([ref.length, ref[0], ref[pos], ref[0]]);
    }
  });

  it('holds one entry per millisecond, not per call', () => {
    const clock = manualClock(T0);
    const l = new Limiter(clock);
    const huge = { per_minute: 999_999_999, per_day: 999_999_999 };
    for (let ms = 0; ms < 50; ms++, clock.advance(1)) for (let i = 0; i < 200; i++) l.take('a', huge);
    const log = new MinuteLog();
    for (let ms = 0; ms < 50; ms++) for (let i = 0; i < 200; i++) log.push(T0 + ms);
    expect([log.size, log.runs, log.first, log.at(0), log.at(199), log.at(200), log.at(9999), log.at(10_000)]).toStrictEqual([10_000, 50, T0, T0, T0, T0 + 1, T0 + 49, undefined]);
    expect(l.peek('a', { per_minute: 10, per_day: 999_999_999 })).toMatchObject({ allowed: false, minute: { used: 10_000, resetAt: T0 + 49 + MINUTE_MS } });
    log.prune(T0 + MINUTE_MS + 10);
    expect([log.size, log.runs, log.first]).toStrictEqual([200 * 39, 39, T0 + 11]);
  });

  it(
    'a full minute’s cost grows linearly with the calls it holds (n vs 4n calls over two minutes)',
    async () => {
      const huge = { per_minute: 999_999_999, per_day: 999_999_999 };
      const g = await growth(
        (n) => {
          const clock = manualClock(T0);
          const l = new Limiter(clock);
          const perMs = Math.max(1, Math.round(n / 120_000));
          let last: Decision | undefined;
          for (let ms = 0; ms < 120_000; ms++, clock.advance(1)) for (let i = 0; i < perMs; i++) last = l.take('a', huge);
          // The window holds the calls of (t − 60 s, t]: 60,000 milliseconds' worth.
          expect(last?.minute.used).toBe(perMs * 60_000);
        },
        { from: 120_000, max: 1_920_000 },
      );
      expect(g.ratio, g.text).toBeLessThan(MAX_GROWTH);
    },
    GROWTH_TIMEOUT_MS,
  );
});
