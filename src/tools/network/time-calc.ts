import { DateTime, Duration } from 'luxon';
import { z } from 'zod';
import { ToolError } from '../../errors.js';
import { defineTool, type ToolContext } from '../../registry.js';
import { formatOffset, formatWall, resolveWall, zoneSchema } from '../../lib/zone-time.js';

/** Instants accepted and produced: the years 0001-9999 of ISO 8601's four-digit years. */
const MIN_MS = -62_135_596_800_000; // 0001-01-01T00:00:00Z
const MAX_MS = 253_402_300_799_999; // 9999-12-31T23:59:59.999Z

/** |n| below this reads as epoch seconds under epoch_unit auto (1e11 s is the year 5138; 1e11 ms is 1973). */
export const AUTO_SECONDS_BELOW = 1e11;

// ISO 8601 durations as agents write them: integers in every component, a fraction only in the
// seconds (the lowest order one), an optional leading minus (ISO 8601-2, Temporal). Fractional
// months and days have no calendar meaning, so they are refused rather than guessed.
const DURATION = /^-?P(?=\d|T\d)(?:\d{1,9}Y)?(?:\d{1,9}M)?(?:\d{1,9}W)?(?:\d{1,9}D)?(?:T(?=\d)(?:\d{1,9}H)?(?:\d{1,9}M)?(?:\d{1,9}(?:[.,]\d{1,9})?S)?)?$/;
const DURATION_SHAPE = 'must be an ISO 8601 duration such as P90D, PT36H, P1Y2M3DT4H5M6.5S or -P1M (whole numbers, a fraction only in seconds)';
const OFFSET_AT_END = /T.*(?:Z|[+-]\d{2}(?::?\d{2})?)$/i;

const Instant = z
  .union([z.string().min(1).max(64), z.number().finite()])
  .describe('ISO 8601 date-time (2026-03-08T01:30:00-05:00, 2026-12-31T09:00Z; without an offset it is read in `zone`; a date alone is midnight), "now" (the server\'s clock), or epoch time as a number (see epoch_unit)');

const View = z.object({
  iso: z.string().describe('ISO 8601 in `zone`, with milliseconds and offset'),
  utc: z.string().describe('ISO 8601 in UTC (Z)'),
  epoch_s: z.number().describe('Seconds since 1970-01-01T00:00:00Z (fractional when there are milliseconds)'),
  epoch_ms: z.number().int().describe('Milliseconds since 1970-01-01T00:00:00Z'),
  rfc2822: z.string().describe('RFC 2822 / e-mail form in `zone`, e.g. Thu, 31 Dec 2026 09:00:00 +0100'),
  zone: z.string().describe('The IANA zone of the local fields'),
  offset: z.string().describe('UTC offset in force, ±HH:MM'),
  dst: z.boolean().describe('Daylight saving time is in force'),
  weekday: z.string().describe('Day of the week in `zone`, in English (Monday…Sunday)'),
  weekday_number: z.number().int().describe('ISO day of the week: 1 = Monday … 7 = Sunday'),
  iso_week: z.string().describe('ISO 8601 week, e.g. 2026-W53 (the week-numbering year can differ from the calendar year)'),
  iso_week_date: z.string().describe('ISO 8601 week date, e.g. 2026-W53-4'),
  day_of_year: z.number().int().describe('Ordinal day of the year, 1-366'),
});

const Diff = z.object({
  iso: z.string().describe('ISO 8601 duration from `at` to `until` in calendar units of `zone` (years, months, days, then exact hours…), e.g. P1M2DT3H; negative with a leading minus'),
  years: z.number().int().describe('Whole calendar years completed (truncated toward zero)'),
  months: z.number().int().describe('Whole calendar months completed'),
  weeks: z.number().int().describe('Whole weeks completed'),
  days: z.number().int().describe('Whole calendar days completed in `zone` (a DST day of 23 or 25 hours counts as 1)'),
  hours: z.number().describe('Exact elapsed hours'),
  minutes: z.number(),
  seconds: z.number(),
  milliseconds: z.number(),
});

type ViewOut = z.output<typeof View>;

/** A date-time that does not parse: 422, as for any content that does not parse (docs/contract.md). */
function unreadable(field: string, message: string): ToolError {
  return new ToolError('PARSE_ERROR', `${field} ${message}`, { field });
}

function outOfRange(field: string): ToolError {
  return new ToolError('INVALID_INPUT', `${field} lies outside the years 0001-9999`, [{ path: field, message: 'outside the years 0001-9999' }]);
}

/** The instant (epoch ms) `value` names, read in `zone` when it carries no offset. */
export function readInstant(value: string | number, zone: string, unit: 's' | 'ms' | 'auto', field: string, now: number): number {
  let ms: number;
  if (typeof value === 'number') {
    const seconds = unit === 's' || (unit === 'auto' && Math.abs(value) < AUTO_SECONDS_BELOW);
    ms = Math.round(seconds ? value * 1000 : value);
  } else if (value.trim().toLowerCase() === 'now') {
    ms = now;
  } else {
    const s = value.trim();
    // RFC 9557's [Zone] suffix would be a second, competing zone: the zone goes in `zone`.
    if (s.includes('[')) throw unreadable(field, 'takes no [zone] suffix: give the IANA zone in `zone`');
    const hasOffset = OFFSET_AT_END.test(s);
    const dt = DateTime.fromISO(s, { zone: 'UTC', setZone: hasOffset });
    if (!dt.isValid) throw unreadable(field, `is not an ISO 8601 date-time (e.g. 2026-03-08T01:30:00, 2026-03-08T06:30:00Z, 2026-12-31): ${dt.invalidExplanation ?? dt.invalidReason ?? 'unreadable'}`);
    if (hasOffset) ms = dt.toMillis();
    else {
      // The wall time read in the zone by the rule timezone_convert uses: a time clocks skip is
      // refused, a time that happens twice takes the earlier offset.
      const wall = dt.toMillis();
      if (wall < MIN_MS || wall > MAX_MS) throw outOfRange(field);
      const r = resolveWall(zone, wall);
      if (r.kind === 'gap') {
        throw new ToolError(
          'PARSE_ERROR',
          `${field}: ${formatWall(wall)} does not exist in ${zone}: clocks jump forward there (UTC offset ${formatOffset(r.offsetBefore)} → ${formatOffset(r.offsetAfter)})`,
          { field, datetime: formatWall(wall), zone, offsetBefore: formatOffset(r.offsetBefore), offsetAfter: formatOffset(r.offsetAfter) },
        );
      }
      ms = r.instant;
    }
  }
  if (!(ms >= MIN_MS && ms <= MAX_MS)) throw outOfRange(field);
  return ms;
}

/** Every field of one instant seen in `zone`. */
export function view(ms: number, zone: string): ViewOut {
  const dt = DateTime.fromMillis(ms, { zone, locale: 'en-US' });
  return {
    iso: dt.toISO()!,
    utc: dt.toUTC().toISO()!,
    epoch_s: ms / 1000,
    epoch_ms: ms,
    rfc2822: dt.toRFC2822()!,
    zone,
    offset: formatOffset(dt.offset * 60_000),
    dst: dt.isInDST,
    weekday: dt.weekdayLong!,
    weekday_number: dt.weekday,
    iso_week: `${String(dt.weekYear).padStart(4, '0')}-W${String(dt.weekNumber).padStart(2, '0')}`,
    iso_week_date: `${String(dt.weekYear).padStart(4, '0')}-W${String(dt.weekNumber).padStart(2, '0')}-${dt.weekday}`,
    day_of_year: dt.ordinal,
  };
}

const CALENDAR = ['years', 'months', 'days', 'hours', 'minutes', 'seconds', 'milliseconds'] as const;

/** until − at: whole calendar units counted in `zone`, exact totals of time units, and one ISO duration. */
export function difference(from: number, to: number, zone: string): z.output<typeof Diff> {
  const a = DateTime.fromMillis(from, { zone });
  const b = DateTime.fromMillis(to, { zone });
  // Whole calendar units: a fraction of a month or a DST day has no one meaning (luxon would
  // price the rest in average lengths), so they count completed units, as date-fns does.
  const total = (unit: 'years' | 'months' | 'weeks' | 'days') => Math.trunc(b.diff(a, unit).as(unit)) + 0;
  // luxon writes a negative duration as P-1D; ISO 8601-2 and Temporal write -P1D.
  const [lo, hi] = from <= to ? [a, b] : [b, a];
  const iso = hi.diff(lo, [...CALENDAR]).toISO() ?? 'PT0S';
  const ms = to - from;
  return {
    iso: from > to && iso !== 'PT0S' ? `-${iso}` : iso,
    years: total('years'),
    months: total('months'),
    weeks: total('weeks'),
    days: total('days'),
    hours: ms / 3_600_000,
    minutes: ms / 60_000,
    seconds: ms / 1000,
    milliseconds: ms,
  };
}

const Input = z.object({
  at: Instant,
  epoch_unit: z.enum(['auto', 's', 'ms']).default('auto').describe(`How a number in at/until is read: s, ms, or auto (|n| < ${AUTO_SECONDS_BELOW} is seconds, else milliseconds)`),
  zone: zoneSchema('zone').default('UTC').describe('IANA zone for the local fields, for reading times without an offset, and for calendar arithmetic (default UTC)'),
  add: z
    .string()
    .max(64)
    .regex(DURATION, `add ${DURATION_SHAPE}`)
    .optional()
    .describe('ISO 8601 duration to add to at, calendar-aware in zone: P1D keeps the wall-clock time across a DST change, PT24H adds exactly 24 hours; negative with a leading minus (-P1M)'),
  until: Instant.optional().describe('A second instant (same forms as at): the answer gains `diff` = until − at'),
});

export const timeCalc = defineTool({
  name: 'time_calc',
  title: 'Date-time calculator',
  description:
    'Date-time arithmetic in an IANA zone: read an instant (ISO 8601, "now", or epoch seconds/milliseconds) and give its ISO, epoch, RFC 2822, weekday, ISO week and day-of-year; add an ISO 8601 duration calendar-aware (P1D across a DST change keeps the wall time, PT24H does not); or the difference to a second instant in every unit and as an ISO duration.',
  input: Input,
  output: View.extend({
    result: View.optional().describe('With add: at + add, every field'),
    diff: Diff.optional().describe('With until: until − at'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: false, openWorldHint: false },
  rest: { method: 'POST', path: '/api/time-calc' },
  example: { at: '2026-03-07T12:00:00', zone: 'America/New_York', add: 'P1D', until: '2026-12-31T00:00:00' },
  handler: ({ at, epoch_unit, zone, add, until }, ctx: ToolContext) => {
    const now = ctx.services.clock.now();
    const from = readInstant(at, zone, epoch_unit, 'at', now);
    const out: z.output<typeof View> & { result?: ViewOut; diff?: z.output<typeof Diff> } = view(from, zone);
    if (add !== undefined) {
      const sum = DateTime.fromMillis(from, { zone }).plus(Duration.fromISO(add.replace(',', '.')));
      if (!sum.isValid || sum.toMillis() < MIN_MS || sum.toMillis() > MAX_MS) {
        throw new ToolError('INVALID_INPUT', 'at + add lies outside the years 0001-9999', [{ path: 'add', message: 'the result lies outside the years 0001-9999' }]);
      }
      out.result = view(sum.toMillis(), zone);
    }
    if (until !== undefined) out.diff = difference(from, readInstant(until, zone, epoch_unit, 'until', now), zone);
    return out;
  },
});
