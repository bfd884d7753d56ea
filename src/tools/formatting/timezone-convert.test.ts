import { describe, expect, it } from 'vitest';
import { useToolHarness } from '../../../test/harness.js';
import { DATETIME_PATTERN, parseLocalDateTime, timezoneConvert, WORLD_CITIES } from './timezone-convert.js';

// The oracle below uses only Intl.DateTimeFormat: for a wall time it scans every minute of the
// 26 hours of instants that could show that wall time somewhere, and keeps those that do.

const formatters = new Map<string, Intl.DateTimeFormat>();
function wallOf(zone: string, instant: number): string {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
    formatters.set(zone, f);
  }
  const p = Object.fromEntries(f.formatToParts(new Date(instant)).map((x) => [x.type, x.value]));
  return `${p.year}-${p.month}-${p.day}T${p.hour}:${p.minute}:${p.second}`;
}
const asUtc = (wall: string) => Date.parse(`${wall}Z`);
function offsetText(zone: string, instant: number): string {
  const min = Math.round((asUtc(wallOf(zone, instant)) - instant) / 60_000);
  const a = Math.abs(min);
  return `${min < 0 ? '-' : '+'}${String(Math.floor(a / 60)).padStart(2, '0')}:${String(a % 60).padStart(2, '0')}`;
}
function instantsOf(zone: string, wall: string): number[] {
  const w = asUtc(wall);
  const found: number[] = [];
  for (let u = w - 14 * 3_600_000; u <= w + 12 * 3_600_000; u += 60_000) if (wallOf(zone, u) === wall) found.push(u);
  return found;
}
function view(zone: string, instant: number) {
  const datetime = wallOf(zone, instant);
  const offset = offsetText(zone, instant);
  return { zone, datetime, offset, iso: `${datetime}.000${offset}` };
}

const t = useToolHarness();
const call = (input: Record<string, unknown>) => t.call(timezoneConvert, input);
const failure = async (input: Record<string, unknown>) => {
  const { status: _status, ...error } = await t.failure(timezoneConvert, input);
  return error;
};
const failingPaths = async (input: Record<string, unknown>) => {
  const e = await failure(input);
  return { code: e.code, paths: [...new Set((e.details as Array<{ path: string }>).map((d) => d.path))] };
};

describe('timezone_convert', () => {
  it('converts to toZone, matching Intl', async () => {
    const [instant] = instantsOf('Asia/Shanghai', '2026-11-22T09:00:00');
    expect(await call({ datetime: '2026-11-22T09:00', toZone: 'America/New_York' })).toStrictEqual({
      source: view('Asia/Shanghai', instant!),
      target: view('America/New_York', instant!),
    });
    // and the literal values, so a shared mistake in the oracle cannot hide
    expect(await call({ datetime: '2026-11-22T09:00', toZone: 'America/New_York' })).toStrictEqual({
      source: { zone: 'Asia/Shanghai', datetime: '2026-11-22T09:00:00', offset: '+08:00', iso: '2026-11-22T09:00:00.000+08:00' },
      target: { zone: 'America/New_York', datetime: '2026-11-21T20:00:00', offset: '-05:00', iso: '2026-11-21T20:00:00.000-05:00' },
    });
  });

  it('answers exactly 20 fixed cities when toZone is omitted', async () => {
    const r = await call({ datetime: '2026-07-01T12:34:56' });
    const [instant] = instantsOf('Asia/Shanghai', '2026-07-01T12:34:56');
    expect(r).toStrictEqual({
      source: view('Asia/Shanghai', instant!),
      results: WORLD_CITIES.map(({ city, zone }) => ({ ...view(zone, instant!), city })),
    });
    expect((r.results as unknown[]).length).toBe(20);
    expect(WORLD_CITIES.map((c) => c.city)).toStrictEqual([
      'Honolulu', 'Los Angeles', 'Mexico City', 'Chicago', 'New York', 'São Paulo', 'London', 'Lagos', 'Paris', 'Cairo',
      'Johannesburg', 'Moscow', 'Dubai', 'Mumbai', 'Bangkok', 'Singapore', 'Shanghai', 'Tokyo', 'Sydney', 'Auckland',
    ]);
  });

  const cases: Array<[string, string, string]> = [
    ['2026-01-15T08:00', 'Europe/London', 'Asia/Kathmandu'],
    ['2026-06-15T23:45:30', 'America/Los_Angeles', 'Asia/Kolkata'],
    ['2028-02-29T12:00', 'UTC', 'Pacific/Kiritimati'],
    ['2026-12-31T23:59:59', 'Pacific/Pago_Pago', 'Pacific/Kiritimati'],
    ['2026-03-29T01:59', 'Europe/Berlin', 'UTC'],
    ['2026-03-29T03:00', 'Europe/Berlin', 'UTC'],
    ['1900-01-01T00:00', 'Asia/Tokyo', 'UTC'],
    ['2199-12-31T23:59', 'Australia/Adelaide', 'America/St_Johns'],
  ];
  it.each(cases)('%s in %s → %s matches Intl', async (datetime, fromZone, toZone) => {
    const wall = datetime.length === 16 ? `${datetime}:00` : datetime;
    const found = instantsOf(fromZone, wall);
    expect(found.length).toBe(1);
    expect(await call({ datetime, fromZone, toZone })).toStrictEqual({ source: view(fromZone, found[0]!), target: view(toZone, found[0]!) });
  });

  it.each([
    ['2026-10-25T02:30', 'Europe/Berlin', '+02:00'],
    ['2026-11-01T01:30', 'America/New_York', '-04:00'],
    ['2026-04-05T01:45', 'Australia/Lord_Howe', '+11:00'],
  ])('an ambiguous %s in %s takes the earlier offset', async (datetime, fromZone, offset) => {
    const found = instantsOf(fromZone, `${datetime}:00`);
    expect(found.length).toBe(2);
    const r = await call({ datetime, fromZone, toZone: 'UTC' });
    expect(r).toStrictEqual({ source: view(fromZone, found[0]!), target: view('UTC', found[0]!) });
    expect((r.source as { offset: string }).offset).toBe(offset);
  });

  it.each([
    ['2026-03-29T02:30', 'Europe/Berlin', '+01:00', '+02:00'],
    ['2026-03-08T02:00', 'America/New_York', '-05:00', '-04:00'],
    ['2026-10-04T02:15', 'Australia/Lord_Howe', '+10:30', '+11:00'],
  ])('a time in the DST gap (%s in %s) is a 422', async (datetime, fromZone, offsetBefore, offsetAfter) => {
    expect(instantsOf(fromZone, `${datetime}:00`)).toStrictEqual([]);
    expect(await failure({ datetime, fromZone })).toStrictEqual({
      code: 'PARSE_ERROR',
      message: `${datetime}:00 does not exist in ${fromZone}: clocks jump forward there (UTC offset ${offsetBefore} → ${offsetAfter})`,
      details: { datetime: `${datetime}:00`, zone: fromZone, offsetBefore, offsetAfter },
    });
  });

  it('accepts zone names in any case and echoes them', async () => {
    const r = await call({ datetime: '2026-01-01T00:00', fromZone: 'europe/paris', toZone: 'utc' });
    expect(r).toStrictEqual({
      source: { zone: 'europe/paris', datetime: '2026-01-01T00:00:00', offset: '+01:00', iso: '2026-01-01T00:00:00.000+01:00' },
      target: { zone: 'utc', datetime: '2025-12-31T23:00:00', offset: '+00:00', iso: '2025-12-31T23:00:00.000+00:00' },
    });
  });

  it.each([
    ['2026-11-22', 'shape'],
    ['2026-11-22T09', 'shape'],
    ['2026-11-22T09:00Z', 'shape'],
    ['2026-11-22T09:00+08:00', 'shape'],
    ['2026-11-22T09:00:00.000', 'shape'],
    ['2026-11-22 09:00', 'shape'],
    ['26-11-22T09:00', 'shape'],
    ['２０２６-11-22T09:00', 'shape'],
    ['2026-02-29T00:00', 'day 29 out of range 1-28 for 2026-02'],
    ['2026-04-31T00:00', 'day 31 out of range 1-30 for 2026-04'],
    ['2026-01-00T00:00', 'day 0 out of range 1-31 for 2026-01'],
    ['2026-13-01T00:00', 'month 13 out of range 1-12'],
    ['2026-00-01T00:00', 'month 0 out of range 1-12'],
    ['2026-01-01T24:00', 'hour 24 out of range 0-23'],
    ['2026-01-01T23:60', 'minute 60 out of range 0-59'],
    ['2026-01-01T23:59:60', 'second 60 out of range 0-59'],
    ['1899-12-31T23:59', 'year 1899 out of range 1900-2199'],
    ['2200-01-01T00:00', 'year 2200 out of range 1900-2199'],
  ])('refuses datetime %j (400)', async (datetime, why) => {
    const e = await failure({ datetime });
    expect(e.code).toBe('INVALID_INPUT');
    const details = e.details as Array<{ path: string; message: string }>;
    expect(details.map((d) => d.path)).toStrictEqual(['datetime']);
    if (why !== 'shape') expect(details[0]!.message).toBe(why);
    else expect(details[0]!.message).toMatch(/^datetime must look like YYYY-MM-DDTHH:MM/);
  });

  it.each([
    [{}, ['datetime']],
    [{ datetime: 202611220900 }, ['datetime']],
    [{ datetime: 'x'.repeat(33) }, ['datetime']],
    [{ datetime: '2026-01-01T00:00', fromZone: 'Mars/Olympus_Mons' }, ['fromZone']],
    [{ datetime: '2026-01-01T00:00', fromZone: '../../../../etc/passwd' }, ['fromZone']],
    [{ datetime: '2026-01-01T00:00', fromZone: 'Europe/Paris\u0000' }, ['fromZone']],
    [{ datetime: '2026-01-01T00:00', fromZone: '+08:00' }, ['fromZone']],
    [{ datetime: '2026-01-01T00:00', fromZone: '' }, ['fromZone']],
    [{ datetime: '2026-01-01T00:00', fromZone: 8 }, ['fromZone']],
    [{ datetime: '2026-01-01T00:00', fromZone: 'A'.repeat(65) }, ['fromZone']],
    [{ datetime: '2026-01-01T00:00', toZone: 'Not/AZone' }, ['toZone']],
    [{ datetime: '2026-01-01T00:00', toZone: '../zoneinfo/UTC' }, ['toZone']],
    [{ datetime: '2026-01-01T00:00', toZone: null }, ['toZone']],
    [{ datetime: '2026-01-01T00:00', toZone: ['UTC'] }, ['toZone']],
  ])('refuses %j with 400 on the right field', async (input, paths) => {
    expect(await failingPaths(input)).toStrictEqual({ code: 'INVALID_INPUT', paths });
  });

  it('ignores unknown fields and refuses a non-object body', async () => {
    const r = await call({ datetime: '2026-01-01T08:00', fromZone: 'UTC', toZone: 'Asia/Tokyo', extra: true });
    expect(r.target).toStrictEqual({ zone: 'Asia/Tokyo', datetime: '2026-01-01T17:00:00', offset: '+09:00', iso: '2026-01-01T17:00:00.000+09:00' });
    await expect(t.run(timezoneConvert, 'x')).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });
});

describe('the published datetime pattern', () => {
  // Regression: the schema allowed any YYYY-MM-DDTHH:MM, so a schema-driven client generated
  // dates that were all refused (years outside 1900-2199). Pattern and parser must agree exactly.
  const published = new RegExp(DATETIME_PATTERN, 'u');
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  const disagreements = (candidates: Iterable<string>) => [...candidates].filter((s) => published.test(s) !== 'wall' in parseLocalDateTime(s));

  it('agrees with the parser on every year 0000-9999 (1 January and 29 February)', () => {
    const dates = function* () {
      for (let y = 0; y <= 9999; y++) for (const md of ['01-01', '02-29', '12-31']) yield `${pad(y, 4)}-${md}T00:00`;
    };
    expect(disagreements(dates())).toStrictEqual([]);
  });

  it('agrees on every month 00-13 and day 00-32 of 1895-2205', () => {
    const dates = function* () {
      for (let y = 1895; y <= 2205; y++) for (let m = 0; m <= 13; m++) for (let d = 0; d <= 32; d++) yield `${y}-${pad(m)}-${pad(d)}T12:30`;
    };
    expect(disagreements(dates())).toStrictEqual([]);
  });

  it('agrees on every hour 00-25, minute and second 00-61, with and without seconds', () => {
    const times = function* () {
      for (let h = 0; h <= 25; h++) {
        for (let mi = 0; mi <= 61; mi++) {
          yield `2026-06-15T${pad(h)}:${pad(mi)}`;
          for (const sec of [0, 30, 59, 60, 61]) yield `2026-06-15T${pad(h)}:${pad(mi)}:${pad(sec)}`;
        }
      }
    };
    expect(disagreements(times())).toStrictEqual([]);
    expect(disagreements(['2026-06-15T1:00', '2026-06-15T01:00:0', '2026-06-15 01:00', '2026-06-15T01:00Z', ' 2026-06-15T01:00'])).toStrictEqual([]);
  });
});
