/**
 * The in-memory counts of a link-day (DayCounts) against the store's own rules for `add`
 * (applyDeltas in src/state/counters.ts, tested on every backend): the same visits give the
 * same fields, caps included, counted at once or merged back after a refused write.
 */
import { describe, expect, it } from 'vitest';
import { applyDeltas } from '../../state/counters.js';
import type { Rec } from '../../state/records.js';
import { clicksOf, COUNTER_CAPS, countVisit, emptyCounts, fieldsOf as sharedFieldsOf, MAX_PROFILES, mergeCounts, profileOf, STORE_CAPS, type DayCounts } from './analytics-counters.js';
import type { UaInfo } from './analytics-ua.js';

/** The counts' fields as a plain object (they are kept without a prototype). */
const fieldsOf = (c: DayCounts): Record<string, number> => ({ ...sharedFieldsOf(c) });

/**
 * A seeded mix of people and bots over many referrers and browsers (more than the caps hold).
 * `alike`: the User-Agents drawn from a few (UaCache hands out one object per User-Agent) and
 * few referrers and hours, so that visits repeat a profile (countVisit's shared counts).
 */
function visits(seed: number, n: number, alike = false): [UaInfo, string, number][] {
  let x = seed;
  const next = (m: number) => ((x = (x * 1103515245 + 12345) % 2147483648), Math.floor(x / 65536) % m);
  const pool: UaInfo[] = Array.from({ length: 4 }, (_, i) => ({ bot: i === 3, browser: i === 3 ? 'Bot1' : `B${i}`, os: 'O1', device: i === 3 ? 'bot' : 'desktop' }));
  return Array.from({ length: n }, () => {
    if (alike) return [pool[next(3) === 0 ? next(4) : 0]!, next(3) === 0 ? `r${next(3)}.example` : 'direct', next(4) === 0 ? 13 : 12];
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
      expect(fieldsOf(counts)).toStrictEqual(reference);
      expect(Object.keys(fieldsOf(counts)).filter((f) => f.startsWith('ref:') && f !== 'ref:other')).toHaveLength(COUNTER_CAPS.referrers);
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
    applyDeltas(reference, Object.entries(fieldsOf(refused)), STORE_CAPS);
    expect(fieldsOf(pending)).toStrictEqual(reference);
  });

  it('visits alike share their counts until another kind comes: link-days of a few visits, merged any way, as the store would add them', () => {
    for (const seed of [11, 12, 13, 14]) {
      const vs = visits(seed, 3000, true);
      let x = seed;
      const next = (m: number) => ((x = (x * 1103515245 + 12345) % 2147483648), Math.floor(x / 65536) % m);
      // Link-days of 1 to 40 visits (past the 7 a profile keeps made), each against its own reference.
      const days: { counts: DayCounts; ref: Rec }[] = [];
      for (let i = 0; i < vs.length; ) {
        const slice = vs.slice(i, (i += next(3) === 0 ? 1 + next(40) : 1 + next(3)));
        const counts = emptyCounts();
        const ref: Rec = {};
        for (const v of slice) {
          countVisit(counts, v[0], v[1], v[2], 1000);
          applyDeltas(ref, deltasOf(v), STORE_CAPS);
        }
        expect(fieldsOf(counts)).toStrictEqual(ref);
        expect(clicksOf(counts)).toBe(slice.filter(([ua]) => !ua.bot).length);
        days.push({ counts, ref });
      }
      // Merged in pairs, the way a refused chunk goes back: the second's counts into the first's.
      for (let k = 0; k + 1 < days.length; k += 2) {
        const [a, b] = [days[k]!, days[k + 1]!];
        const ref = { ...a.ref };
        applyDeltas(ref, Object.entries(b.ref) as [string, number][], STORE_CAPS);
        mergeCounts(a.counts, b.counts);
        expect(fieldsOf(a.counts)).toStrictEqual(ref);
        expect(fieldsOf(b.counts)).toStrictEqual(b.ref);
      }
    }
  });

  it('link-days with one visit of one kind hand the store one object (encoded once); counting on leaves it as it was', () => {
    const ua: UaInfo = { bot: false, browser: 'Chrome', os: 'Windows', device: 'desktop' };
    const one = { clicks: 1, 'h:5': 1, 'ref:direct': 1, 'br:Chrome': 1, 'os:Windows': 1, 'dev:desktop': 1 };
    const [a, b, c] = [emptyCounts(), emptyCounts(), emptyCounts()];
    countVisit(a, ua, 'direct', 5, 10);
    countVisit(b, ua, 'direct', 5, 20);
    expect(sharedFieldsOf(a)).toBe(sharedFieldsOf(b));
    expect(fieldsOf(a)).toStrictEqual(one);
    countVisit(b, ua, 'direct', 5, 30);
    countVisit(c, ua, 'direct', 5, 40);
    countVisit(c, { ...ua }, 'direct', 5, 50);
    expect(fieldsOf(b)).toStrictEqual({ clicks: 2, 'h:5': 2, 'ref:direct': 2, 'br:Chrome': 2, 'os:Windows': 2, 'dev:desktop': 2 });
    expect(fieldsOf(c)).toStrictEqual(fieldsOf(b));
    expect(fieldsOf(a)).toStrictEqual(one);
    mergeCounts(a, c);
    expect(fieldsOf(a)).toStrictEqual({ clicks: 3, 'h:5': 3, 'ref:direct': 3, 'br:Chrome': 3, 'os:Windows': 3, 'dev:desktop': 3 });
    expect([a.last, b.last, c.last, clicksOf(a)]).toStrictEqual([50, 30, 50, 3]);
    // A bot's visit is no click and no time.
    const bot = emptyCounts();
    countVisit(bot, { bot: true, browser: 'Googlebot', os: 'other', device: 'bot' }, '', 7, 60);
    expect([fieldsOf(bot), clicksOf(bot), bot.last]).toStrictEqual([{ bots: 1, 'bot:Googlebot': 1 }, 0, 0]);
    expect(fieldsOf(emptyCounts())).toStrictEqual({});
  });

  it('keeps at most MAX_PROFILES profiles: past them it starts again, and counts holding an old one stay right', () => {
    const ua: UaInfo = { bot: false, browser: 'Firefox', os: 'Linux', device: 'desktop' };
    const held = emptyCounts();
    countVisit(held, ua, 'kept.example', 1, 5);
    const first = profileOf(ua, 'kept.example', 1);
    expect(profileOf(ua, 'kept.example', 1)).toBe(first);
    // Hostile variety: a referrer host of its own per visit.
    for (let i = 0; i <= MAX_PROFILES; i++) profileOf(ua, `r${i}.example`, i % 24);
    expect(profileOf(ua, 'kept.example', 1)).not.toBe(first);
    countVisit(held, ua, 'kept.example', 1, 6);
    expect(fieldsOf(held)).toStrictEqual({ clicks: 2, 'h:1': 2, 'ref:kept.example': 2, 'br:Firefox': 2, 'os:Linux': 2, 'dev:desktop': 2 });
  });
});
