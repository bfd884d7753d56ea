import { describe, expect, it } from 'vitest';
import { ToolError } from '../errors.js';
import { nextFire, nextRuns, parseCron, resolvedRuns } from './cron.js';
import { offsetAt } from './zone-time.js';

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

const iso = (t: number) => new Date(t).toISOString();

/** The instants in [from, to) at which the zone's offset changes (first ms of the new offset). */
function offsetChanges(zone: string, from: number, to: number): number[] {
  const out: number[] = [];
  // A zone changes its offset at most every few weeks: a day apart, two changes cannot hide.
  for (let t = from; t + DAY < to; t += DAY) {
    if (offsetAt(zone, t) === offsetAt(zone, t + DAY)) continue;
    let [lo, hi] = [t, t + DAY];
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (offsetAt(zone, mid) === offsetAt(zone, lo)) lo = mid;
      else hi = mid;
    }
    out.push(hi);
  }
  return out;
}

describe('nextRuns', () => {
  // Every 5 minutes rather than every minute: the same gaps and overlaps, a fifth of the general walk's cost.
  const schedules = ['*/5 * * * *', '*/15 * * * *', '0 9 * * *', '0 9 1 * *', '30 2 * * *', '0 */6 * * 1-5', '59 23 31 12 *', '*/7 3 * * 0', '@weekly'];
  const zones = ['UTC', 'Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kathmandu', 'America/Santiago'];
  const mismatches = (cases: Array<[schedule: string, zone: string, at: number, count: number]>) =>
    cases.flatMap(([schedule, zone, at, count]) => {
      const parsed = parseCron(schedule);
      const got = nextRuns(parsed, zone, at, count);
      return got.join() === resolvedRuns(parsed, zone, at, count).join() ? [] : [`${schedule} ${zone} ${iso(at)} ×${count}`];
    });

  // The task manager's next_run_at had a fast path of its own, compared with cron_parse's
  // nextRuns; both now take nextRuns, whose fast path is held to the general case here.
  it('agrees with the general case (its fast path included) at odd instants across zones', () => {
    let seed = 42;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const cases = Array.from({ length: 400 }, (_, i) => {
      const at = Date.parse('2026-01-01T00:00:00Z') + Math.floor(rand() * 365 * 86_400_000);
      // 1 is next_run_at; more runs leave the fast path when they spill past its day.
      return [schedules[i % schedules.length]!, zones[(i * 7) % zones.length]!, at, 1 + (i % 3) * 2] as [string, string, number, number];
    });
    expect(mismatches(cases)).toStrictEqual([]);
  });

  it('agrees with the general case on both sides of every 2026 offset change of each zone', () => {
    const cases: Array<[string, string, number, number]> = [];
    for (const zone of zones) {
      for (const change of offsetChanges(zone, Date.parse('2026-01-01T00:00:00Z'), Date.parse('2027-01-01T00:00:00Z'))) {
        for (const delta of [-DAY + 1, -30 * MIN, -1, 0, DAY - 1]) {
          for (const [i, schedule] of schedules.entries()) cases.push([schedule, zone, change + delta, i % 2 === 0 ? 1 : 5]);
        }
      }
    }
    // Berlin, New York, Lord Howe and Santiago change twice a year; UTC and Kathmandu never.
    expect(cases.length).toBe(8 * 5 * schedules.length);
    expect(mismatches(cases)).toStrictEqual([]);
  });

  it('agrees with the general case for an every-minute schedule around the spring and autumn changes', () => {
    const cases = ['2026-03-29T01:00:00.000Z', '2026-10-25T01:00:00.000Z'].flatMap((change) =>
      [-90 * MIN, -1, 0].map((delta) => ['* * * * *', 'Europe/Berlin', Date.parse(change) + delta, 5] as [string, string, number, number]),
    );
    expect(mismatches(cases)).toStrictEqual([]);
  });

  it('a run skipped by the spring jump fires an hour later; a repeated wall time fires once', () => {
    const at = (expr: string, from: string, count: number) => nextRuns(parseCron(expr), 'Europe/Berlin', Date.parse(from), count).map(iso);
    expect(at('30 2 * * *', '2026-03-28T12:00:00Z', 2)).toStrictEqual(['2026-03-29T01:30:00.000Z', '2026-03-30T00:30:00.000Z']);
    expect(at('30 2 * * *', '2026-10-24T12:00:00Z', 2)).toStrictEqual(['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z']);
    // Far from any change: the fast path's answers, strictly after now.
    expect(at('*/20 * * * *', '2026-06-01T10:20:00.000Z', 3)).toStrictEqual(['2026-06-01T10:40:00.000Z', '2026-06-01T11:00:00.000Z', '2026-06-01T11:20:00.000Z']);
  });
});

describe('nextFire', () => {
  it('is the first of nextRuns, for an expression as written', () => {
    const t = Date.parse('2026-03-29T00:59:59.500Z');
    expect(iso(nextFire('@daily', 'America/New_York', t))).toBe('2026-03-29T04:00:00.000Z');
    expect(nextFire('30 2 * * *', 'Europe/Berlin', t)).toBe(nextRuns(parseCron('30 2 * * *'), 'Europe/Berlin', t, 1)[0]);
  });

  it('throws PARSE_ERROR for an expression that does not parse', () => {
    expect(() => nextFire('61 * * * *', 'UTC', 0)).toThrow(ToolError);
    expect(() => nextFire('61 * * * *', 'UTC', 0)).toThrow('minute 61 out of range 0-59');
  });
});
