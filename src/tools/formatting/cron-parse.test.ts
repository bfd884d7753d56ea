import { describe, expect, it } from 'vitest';
import { costRatio } from '../../../test/cpu-cost.js';
import { growth, GROWTH_TIMEOUT_MS, MAX_GROWTH } from '../../../test/growth.js';
import { useToolHarness } from '../../../test/harness.js';
import { manualClock } from '../../core/clock.js';
import { cronParse } from './cron-parse.js';

// ---------------------------------------------------------------------------------------------
// An independent oracle: walks real time minute by minute (skipping whole hours and days only
// far from any offset change) and asks Intl.DateTimeFormat for the zone's wall clock.
// The documented DST rules: a wall time that happens twice runs once (first occurrence); a wall
// time skipped by a forward jump runs at the instant it names with the offset before the jump.

const MIN = 60_000;
const HOUR = 60 * MIN;
const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const MACRO: Record<string, string> = { '@hourly': '0 * * * *', '@daily': '0 0 * * *', '@weekly': '0 0 * * 0', '@monthly': '0 0 1 * *', '@yearly': '0 0 1 1 *' };

function expand(field: string, min: number, max: number, names: string[] = [], base = 0): Set<number> {
  const num = (s: string) => (/^\d+$/.test(s) ? Number(s) : names.indexOf(s.toUpperCase()) + base);
  const out = new Set<number>();
  for (const part of field.split(',')) {
    const [range = '', stepText] = part.split('/');
    const step = stepText ? Number(stepText) : 1;
    let lo: number;
    let hi: number;
    if (range === '*') [lo, hi] = [min, max];
    else if (range.includes('-')) [lo, hi] = range.split('-').map(num) as [number, number];
    else [lo, hi] = [num(range), stepText ? max : num(range)];
    if (names === DAYS && hi === 0 && lo > 0) hi = 7;
    for (let v = lo; v <= hi; v += step) out.add(v);
  }
  return out;
}

interface Wall {
  text: string;
  y: number;
  mo: number;
  d: number;
  h: number;
  mi: number;
  dow: number;
}
const fmts = new Map<string, Intl.DateTimeFormat>();
function wallAt(zone: string, t: number): Wall {
  let f = fmts.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', weekday: 'short' });
    fmts.set(zone, f);
  }
  const p = Object.fromEntries(f.formatToParts(new Date(t)).map((x) => [x.type, x.value]));
  const text = `${p.year}-${p.month}-${p.day}T${p.hour}:${p.minute}`;
  return { text, y: +p.year!, mo: +p.month!, d: +p.day!, h: +p.hour!, mi: +p.minute!, dow: DAYS.indexOf(p.weekday!.toUpperCase()) };
}
/** A naive wall time (as if UTC) as a Wall. */
function naiveWall(ms: number): Wall {
  const d = new Date(ms);
  return { text: d.toISOString().slice(0, 16), y: d.getUTCFullYear(), mo: d.getUTCMonth() + 1, d: d.getUTCDate(), h: d.getUTCHours(), mi: d.getUTCMinutes(), dow: d.getUTCDay() };
}
const offsetOf = (zone: string, t: number) => Date.parse(`${wallAt(zone, t).text}Z`) - Math.floor(t / MIN) * MIN;

function oracle(expression: string, zone: string, now: number, count: number): string[] {
  const [mi, h, dom, mon, dow] = (MACRO[expression] ?? expression).split(/\s+/) as [string, string, string, string, string];
  const minutes = expand(mi, 0, 59);
  const hours = expand(h, 0, 23);
  const doms = expand(dom, 1, 31);
  const months = expand(mon, 1, 12, MONTHS, 1);
  const dows = new Set([...expand(dow, 0, 7, DAYS)].map((v) => v % 7));
  const dayOk = (w: Wall) => {
    if (!months.has(w.mo)) return false;
    const a = doms.has(w.d);
    const b = dows.has(w.dow);
    if (dom !== '*' && dow !== '*') return a || b; // cron's OR rule
    return a && b;
  };
  const matches = (w: Wall) => minutes.has(w.mi) && hours.has(w.h) && dayOk(w);
  const runs: string[] = [];
  let t = Math.floor(now / MIN) * MIN + MIN;
  while (runs.length < count) {
    const w = wallAt(zone, t);
    const o = offsetOf(zone, t);
    const before = offsetOf(zone, t - 3 * HOUR);
    const after = offsetOf(zone, t + 3 * HOUR);
    if (before === o && o === after) {
      // far from any change: hours and days can be skipped safely
      if (!dayOk(w)) {
        t += Math.min(60, 24 * 60 - (w.h * 60 + w.mi)) * MIN;
        continue;
      }
      if (!hours.has(w.h)) {
        t += (60 - w.mi) * MIN;
        continue;
      }
    }
    let run = false;
    if (matches(w)) {
      // the second pass of a repeated hour does not run
      run = !(before > o && wallAt(zone, t - (before - o)).text === w.text);
    }
    if (!run && before < o) {
      const skipped = naiveWall(t + before);
      const existsAt = wallAt(zone, t + before - o).text === skipped.text;
      if (!existsAt && matches(skipped)) run = true;
    }
    if (run) runs.push(new Date(t).toISOString());
    t += MIN;
  }
  return runs;
}

// ---------------------------------------------------------------------------------------------

const clock = manualClock(0);
const t = useToolHarness({ clock });

async function call(input: Record<string, unknown>, at: string | number) {
  clock.t = typeof at === 'number' ? at : Date.parse(at);
  return t.call(cronParse, input);
}
async function failure(input: Record<string, unknown>) {
  clock.t = Date.parse('2026-01-01T00:00:00Z');
  const { status: _status, ...error } = await t.failure(cronParse, input);
  return error;
}

describe('cron_parse', () => {
  it('answers the whole contract shape', async () => {
    expect(await call({ expression: '*/15 9-17 * * MON-FRI', timezone: 'Europe/Paris', count: 3 }, '2026-11-20T16:50:00Z')).toStrictEqual({
      expression: '*/15 9-17 * * MON-FRI',
      description: 'Every 15 minutes, between 09:00 and 17:59, Monday through Friday',
      fields: { minute: '*/15', hour: '9-17', dayOfMonth: '*', month: '*', dayOfWeek: 'MON-FRI' },
      timezone: 'Europe/Paris',
      // Friday 17:50 Paris → 18:00 is outside 9-17, so Monday 09:00 comes next
      nextRuns: ['2026-11-23T08:00:00.000Z', '2026-11-23T08:15:00.000Z', '2026-11-23T08:30:00.000Z'],
    });
  });

  it('defaults to UTC and 5 runs; macros expand; whitespace is squeezed', async () => {
    expect(await call({ expression: '  @DAILY ' }, '2026-01-01T10:00:00Z')).toStrictEqual({
      expression: '@DAILY',
      description: 'At 00:00',
      fields: { minute: '0', hour: '0', dayOfMonth: '*', month: '*', dayOfWeek: '*' },
      timezone: 'UTC',
      nextRuns: ['2026-01-02', '2026-01-03', '2026-01-04', '2026-01-05', '2026-01-06'].map((d) => `${d}T00:00:00.000Z`),
    });
    const r = await call({ expression: '0   12\t* *  *' }, '2026-01-01T00:00:00Z');
    expect(r.expression).toBe('0 12 * * *');
  });

  it.each([
    ['@hourly', '0 * * * *', 'Every hour'],
    ['@daily', '0 0 * * *', 'At 00:00'],
    ['@midnight', '0 0 * * *', 'At 00:00'],
    ['@weekly', '0 0 * * 0', 'At 00:00, only on Sunday'],
    ['@monthly', '0 0 1 * *', 'At 00:00, on day 1 of the month'],
    ['@yearly', '0 0 1 1 *', 'At 00:00, on day 1 of the month, only in January'],
    ['@annually', '0 0 1 1 *', 'At 00:00, on day 1 of the month, only in January'],
  ])('macro %s is %s', async (macro, fields, description) => {
    const r = await call({ expression: macro, count: 1 }, '2026-01-01T00:00:00Z');
    expect([Object.values(r.fields as object).join(' '), r.description]).toStrictEqual([fields, description]);
  });

  // expression, zone, now, count
  const schedules: Array<[string, string, string, number]> = [
    ['*/15 * * * *', 'UTC', '2026-05-05T10:07:30Z', 6],
    ['0 9 * * 1-5', 'America/New_York', '2026-01-01T00:00:00Z', 8],
    ['5,35 8-18/2 * * *', 'Asia/Kolkata', '2026-02-10T06:00:00Z', 10],
    ['0 0 1 * 1', 'UTC', '2026-01-01T00:00:00Z', 8], // day-of-month OR day-of-week
    ['30 4 1,15 * FRI', 'Europe/London', '2026-03-01T00:00:00Z', 8],
    ['0 0 */10 * 1', 'UTC', '2026-01-01T00:00:00Z', 8], // a step is a restriction: OR
    ['0 12 29 2 *', 'UTC', '2026-01-01T00:00:00Z', 2], // Feb 29
    ['0 0 * JAN,JUL SUN', 'Asia/Tokyo', '2026-01-01T00:00:00Z', 6],
    ['*/7 */5 */3 */2 *', 'America/Sao_Paulo', '2026-01-01T00:00:00Z', 12],
    ['0 12 * * 7', 'Australia/Sydney', '2026-01-01T00:00:00Z', 3], // 7 = Sunday
    ['1-3 0 * * MON-SUN', 'UTC', '2026-01-01T00:00:00Z', 5],
    ['59 23 31 12 *', 'Pacific/Auckland', '2026-06-01T00:00:00Z', 2],
    ['@weekly', 'Asia/Tokyo', '2026-01-01T00:00:00Z', 3],
    // DST: Berlin jumps 02:00→03:00 on 2026-03-29 and goes back 03:00→02:00 on 2026-10-25
    ['30 2 * * *', 'Europe/Berlin', '2026-03-27T12:00:00Z', 4],
    ['*/20 1-3 * * *', 'Europe/Berlin', '2026-03-28T23:00:00Z', 10],
    ['30 2 * * *', 'Europe/Berlin', '2026-10-24T12:00:00Z', 3],
    ['*/30 * * * *', 'Europe/Berlin', '2026-10-24T23:10:00Z', 8],
    ['0,30 1-3 * * *', 'Europe/Berlin', '2026-10-24T22:00:00Z', 8],
    // New York: 2026-03-08 02:00→03:00, 2026-11-01 02:00→01:00
    ['15 2 * * *', 'America/New_York', '2026-03-07T12:00:00Z', 3],
    ['15 1 * * *', 'America/New_York', '2026-10-31T12:00:00Z', 3],
    // Lord Howe moves by 30 minutes
    ['*/15 2 * * *', 'Australia/Lord_Howe', '2026-10-03T12:00:00Z', 6],
    ['*/15 1 * * *', 'Australia/Lord_Howe', '2026-04-04T12:00:00Z', 6],
  ];
  it.each(schedules)('%s in %s from %s matches the brute-force oracle', async (expression, timezone, at, count) => {
    const expected = oracle(expression, timezone, Date.parse(at), count);
    const r = await call({ expression, timezone, count }, at);
    expect(r.nextRuns).toStrictEqual(expected);
    // The oracle walks real time minute by minute: seconds of CPU on a loaded machine.
  }, 120_000);

  it('pins the DST rules with literal values too', async () => {
    // 02:30 does not exist on 29 March: it runs at 03:30 CEST (= 02:30 CET)
    expect((await call({ expression: '30 2 * * *', timezone: 'Europe/Berlin', count: 2 }, '2026-03-28T12:00:00Z')).nextRuns).toStrictEqual([
      '2026-03-29T01:30:00.000Z',
      '2026-03-30T00:30:00.000Z',
    ]);
    // 02:30 happens twice on 25 October: it runs once, at 02:30 CEST
    expect((await call({ expression: '30 2 * * *', timezone: 'Europe/Berlin', count: 2 }, '2026-10-24T12:00:00Z')).nextRuns).toStrictEqual([
      '2026-10-25T00:30:00.000Z',
      '2026-10-26T01:30:00.000Z',
    ]);
  });

  it('lists runs strictly after now', async () => {
    expect((await call({ expression: '0 9 * * *', count: 1 }, '2026-01-01T09:00:00.000Z')).nextRuns).toStrictEqual(['2026-01-02T09:00:00.000Z']);
    expect((await call({ expression: '0 9 * * *', count: 1 }, '2026-01-01T08:59:59.999Z')).nextRuns).toStrictEqual(['2026-01-01T09:00:00.000Z']);
    expect((await call({ expression: '* * * * *', count: 2 }, '2026-01-01T09:00:00.001Z')).nextRuns).toStrictEqual(['2026-01-01T09:01:00.000Z', '2026-01-01T09:02:00.000Z']);
  });

  it('lists 50 runs of a rare schedule without walking every minute of 200 years', async () => {
    const rare = () => call({ expression: '0 0 29 2 *', count: 50 }, '2026-01-01T00:00:00Z');
    // Against 50 runs of an every-minute schedule, in CPU time: walking day by day the rare one
    // costs ≈ 100×; walking 200 years minute by minute would cost ≈ 1440× that.
    const c = await costRatio(rare, () => call({ expression: '* * * * *', count: 50 }, '2026-01-01T00:00:00Z'));
    expect(c.ratio, c.text).toBeLessThan(1000);
    const runs = (await rare()).nextRuns as string[];
    // 2100 and 2200 are not leap years: the 19th run is in 2104, the 50th in 2232
    expect([runs.length, runs[0], runs[17], runs[18], runs[49]]).toStrictEqual([50, '2028-02-29T00:00:00.000Z', '2096-02-29T00:00:00.000Z', '2104-02-29T00:00:00.000Z', '2232-02-29T00:00:00.000Z']);
    expect(runs.every((x) => x.slice(4, 10) === '-02-29')).toBe(true);
    expect(runs).not.toContain('2100-02-29T00:00:00.000Z');
  }, GROWTH_TIMEOUT_MS);

  it.each([
    ['61 * * * *', 'minute 61 out of range 0-59', { field: 'minute', value: '61' }],
    ['* 24 * * *', 'hour 24 out of range 0-23', { field: 'hour', value: '24' }],
    ['* * 0 * *', 'day-of-month 0 out of range 1-31', { field: 'dayOfMonth', value: '0' }],
    ['* * 32 * *', 'day-of-month 32 out of range 1-31', { field: 'dayOfMonth', value: '32' }],
    ['* * * 13 *', 'month 13 out of range 1-12', { field: 'month', value: '13' }],
    ['* * * * 8', 'day-of-week 8 out of range 0-7', { field: 'dayOfWeek', value: '8' }],
    ['99999999999999 * * * *', 'minute 9999999999… out of range 0-59', { field: 'minute', value: '99999999999999' }],
    ['5-1 * * * *', 'minute range 5-1 is backwards (start after end)', { field: 'minute', value: '5-1' }],
    ['* * * * SAT-MON', 'day-of-week range SAT-MON is backwards (start after end)', { field: 'dayOfWeek', value: 'SAT-MON' }],
    ['*/0 * * * *', 'minute step 0 out of range 1-59', { field: 'minute', value: '0' }],
    ['*/60 * * * *', 'minute step 60 out of range 1-59', { field: 'minute', value: '60' }],
    ['* * * * */8', 'day-of-week step 8 out of range 1-7', { field: 'dayOfWeek', value: '8' }],
    ['*/x * * * *', "minute: invalid step 'x'", { field: 'minute', value: 'x' }],
    ['a * * * *', "minute: invalid value 'a'", { field: 'minute', value: 'a' }],
    ['MON * * * *', "minute: invalid value 'MON'", { field: 'minute', value: 'MON' }],
    ['* * * FOO *', "month: invalid value 'FOO'", { field: 'month', value: 'FOO' }],
    ['1.5 * * * *', "minute: invalid value '1.5'", { field: 'minute', value: '1.5' }],
    ['1,,2 * * * *', "minute: empty item in list '1,,2'", { field: 'minute' }],
    ['1-2-3 * * * *', "minute: invalid range '1-2-3'", { field: 'minute', value: '1-2-3' }],
    ['-1 * * * *', "minute: invalid range '-1'", { field: 'minute', value: '-1' }],
    ['0 0 L * *', "day-of-month: 'L' is not standard cron; use numbers, *, ranges (a-b), steps (/n) and lists (,)", { field: 'dayOfMonth', value: 'L' }],
    ['0 0 15W * *', "day-of-month: '15W' is not standard cron; use numbers, *, ranges (a-b), steps (/n) and lists (,)", { field: 'dayOfMonth', value: '15W' }],
    ['0 0 * * 1#2', "day-of-week: '1#2' is not standard cron; use numbers, names, *, ranges (a-b), steps (/n) and lists (,)", { field: 'dayOfWeek', value: '1#2' }],
    ['0 0 ? * *', "day-of-month: '?' is not standard cron; use numbers, *, ranges (a-b), steps (/n) and lists (,)", { field: 'dayOfMonth', value: '?' }],
    ['H * * * *', "minute: 'H' is not standard cron; use numbers, *, ranges (a-b), steps (/n) and lists (,)", { field: 'minute', value: 'H' }],
    ['0 0 30 2 *', 'The expression never runs: day-of-month 30 does not occur in month 2', { field: 'dayOfMonth' }],
    ['0 0 31 4,6,9,11 *', 'The expression never runs: day-of-month 31 does not occur in month 4,6,9,11', { field: 'dayOfMonth' }],
    ['* * * *', 'Expected 5 fields (minute hour day-of-month month day-of-week), got 4', { fields: 4 }],
    ['0 * * * * *', 'Expected 5 fields (minute hour day-of-month month day-of-week), got 6: a seconds (or year) field is not supported', { fields: 6 }],
    ['* * * * * * *', 'Expected 5 fields (minute hour day-of-month month day-of-week), got 7', { fields: 7 }],
    ['@reboot', "Unsupported macro '@reboot'; use @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly", { value: '@reboot' }],
    ['   ', 'The expression is empty', undefined],
  ])('refuses %j with a 422 saying why', async (expression, message, details) => {
    expect(await failure({ expression })).toStrictEqual({ code: 'PARSE_ERROR', message, ...(details ? { details } : {}) });
  });

  it('an expression whose day-of-week rescues an impossible day-of-month runs (OR rule)', async () => {
    const r = await call({ expression: '0 0 31 2 MON', count: 2 }, '2026-01-01T00:00:00Z');
    expect(r.nextRuns).toStrictEqual(['2026-02-02T00:00:00.000Z', '2026-02-09T00:00:00.000Z']);
  });

  it.each([
    [{}, 'expression'],
    [{ expression: 5 }, 'expression'],
    [{ expression: '1,'.repeat(501) + ' * * * *' }, 'expression'],
    [{ expression: '* * * * *', timezone: 'Mars/Olympus' }, 'timezone'],
    [{ expression: '* * * * *', timezone: '../../etc/passwd' }, 'timezone'],
    [{ expression: '* * * * *', timezone: '' }, 'timezone'],
    [{ expression: '* * * * *', timezone: 3 }, 'timezone'],
    [{ expression: '* * * * *', count: 0 }, 'count'],
    [{ expression: '* * * * *', count: 51 }, 'count'],
    [{ expression: '* * * * *', count: 1.5 }, 'count'],
    [{ expression: '* * * * *', count: '5' }, 'count'],
  ])('refuses %j with 400 on %s', async (input, path) => {
    const e = await failure(input);
    expect([e.code, [...new Set((e.details as Array<{ path: string }>).map((d) => d.path))]]).toStrictEqual(['INVALID_INPUT', [path]]);
  });

  it('refuses a 10k-character expression fast', async () => {
    expect((await failure({ expression: '* '.repeat(5000) })).code).toBe('INVALID_INPUT');
    // A backtracking blow-up on 10k characters never ends: the refusal's CPU time grows linearly (n against 4n).
    const g = await growth(async (n) => expect((await failure({ expression: '* '.repeat(n) })).code).toBe('INVALID_INPUT'), { from: 5000, max: 4_000_000 });
    expect(g.ratio, g.text).toBeLessThan(MAX_GROWTH);
  }, GROWTH_TIMEOUT_MS);
});
