/**
 * The in-memory counts of a link-day (DayCounts) against the store's own rules for `add`
 * (applyDeltas in src/state/counters.ts, tested on every backend): the same visits give the
 * same fields, caps included, counted at once or merged back after a refused write.
 */
import { describe, expect, it } from 'vitest';
import { applyDeltas } from '../../state/counters.js';
import type { Rec } from '../../state/records.js';
import { COUNTER_CAPS, countVisit, emptyCounts, mergeCounts, STORE_CAPS } from './analytics-counters.js';
import type { UaInfo } from './analytics-ua.js';

/** A seeded mix of people and bots over many referrers and browsers (more than the caps hold). */
function visits(seed: number, n: number): [UaInfo, string, number][] {
  let x = seed;
  const next = (m: number) => ((x = (x * 1103515245 + 12345) % 2147483648), Math.floor(x / 65536) % m);
  return Array.from({ length: n }, () => {
    const bot = next(5) === 0;
    const ua: UaInfo = { bot, browser: bot ? `Bot${next(30)}` : `B${next(30)}`, os: `O${next(25)}`, device: (['desktop', 'mobile', 'tablet', 'other'] as const)[next(4)]! };
    const referrer = next(4) === 0 ? 'other' : next(3) === 0 ? 'direct' : `r${next(80)}.example`;
    return [ua, referrer, next(24)];
  });
}

/** One visit's deltas as the store would be given them, one add each. */
function deltasOf([ua, referrer, hour]: [UaInfo, string, number]): [string, number][] {
  if (ua.bot) return [['bots', 1], [`bot:${ua.browser}`, 1]];
  return [['clicks', 1], [`h:${hour}`, 1], [`ref:${referrer}`, 1], [`br:${ua.browser}`, 1], [`os:${ua.os}`, 1], [`dev:${ua.device}`, 1]];
}

describe('DayCounts (issue 32)', () => {
  it('counts visits as the store would add them one by one: the same fields, every cap held', () => {
    for (const seed of [1, 2, 3]) {
      const vs = visits(seed, 2000);
      const counts = emptyCounts();
      for (const [ua, referrer, hour] of vs) countVisit(counts, ua, referrer, hour, 1000);
      const reference: Rec = {};
      for (const v of vs) applyDeltas(reference, deltasOf(v), STORE_CAPS);
      expect(counts.fields).toStrictEqual(reference);
      expect(Object.keys(counts.fields).filter((f) => f.startsWith('ref:') && f !== 'ref:other')).toHaveLength(COUNTER_CAPS.referrers);
    }
  });

  it('a refused batch merged back into what was counted meanwhile gives what the store would hold after both', () => {
    const [first, later] = [visits(7, 800), visits(8, 800)];
    const refused = emptyCounts();
    let t = 0;
    for (const [ua, r, h] of first) countVisit(refused, ua, r, h, (t += 3));
    const pending = emptyCounts();
    for (const [ua, r, h] of later) countVisit(pending, ua, r, h, (t -= 2));
    const latest = { refused: refused.last, pending: pending.last };
    mergeCounts(pending, refused);
    // The latest click of the two (a person's visits only: a bot's time is not a click's).
    expect(latest.refused).toBeGreaterThan(latest.pending);
    expect(pending.last).toBe(latest.refused);
    const reference: Rec = {};
    for (const v of later) applyDeltas(reference, deltasOf(v), STORE_CAPS);
    applyDeltas(reference, Object.entries(refused.fields), STORE_CAPS);
    expect(pending.fields).toStrictEqual(reference);
  });
});
