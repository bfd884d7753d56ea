import { z } from 'zod';
import { ToolError } from '../../errors.js';
import { defineTool } from '../../registry.js';
import { formatOffset, formatWall, resolveWall, zonedView, zoneSchema } from '../../lib/zone-time.js';

/** The fixed world list answered when no `toZone` is given, west to east (docs/text-tools.md). */
export const WORLD_CITIES: ReadonlyArray<{ city: string; zone: string }> = [
  { city: 'Honolulu', zone: 'Pacific/Honolulu' },
  { city: 'Los Angeles', zone: 'America/Los_Angeles' },
  { city: 'Mexico City', zone: 'America/Mexico_City' },
  { city: 'Chicago', zone: 'America/Chicago' },
  { city: 'New York', zone: 'America/New_York' },
  { city: 'São Paulo', zone: 'America/Sao_Paulo' },
  { city: 'London', zone: 'Europe/London' },
  { city: 'Lagos', zone: 'Africa/Lagos' },
  { city: 'Paris', zone: 'Europe/Paris' },
  { city: 'Cairo', zone: 'Africa/Cairo' },
  { city: 'Johannesburg', zone: 'Africa/Johannesburg' },
  { city: 'Moscow', zone: 'Europe/Moscow' },
  { city: 'Dubai', zone: 'Asia/Dubai' },
  { city: 'Mumbai', zone: 'Asia/Kolkata' },
  { city: 'Bangkok', zone: 'Asia/Bangkok' },
  { city: 'Singapore', zone: 'Asia/Singapore' },
  { city: 'Shanghai', zone: 'Asia/Shanghai' },
  { city: 'Tokyo', zone: 'Asia/Tokyo' },
  { city: 'Sydney', zone: 'Australia/Sydney' },
  { city: 'Auckland', zone: 'Pacific/Auckland' },
];

/** Supported years: the tz database is dependable well inside this range. */
export const MIN_YEAR = 1900;
export const MAX_YEAR = 2199;

const DATETIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/;

/**
 * What `parseLocalDateTime` accepts, as one JSON Schema pattern: years 1900-2199, real
 * days of each month (29 February in leap years only: 1900 and 2100 are not), 00:00-23:59, optional
 * :00-:59. Published instead of DATETIME's shape so that a schema-valid datetime is accepted; a test
 * checks the two agree on every year, month, day and time field.
 */
const LEAP_YEAR = '(?:19(?:0[48]|[2468][048]|[13579][26])|20(?:[02468][048]|[13579][26])|21(?:0[48]|[2468][048]|[13579][26]))';
export const DATETIME_PATTERN =
  '^(?:(?:19|2[01])[0-9]{2}-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)|' +
  `${LEAP_YEAR}-02-29)T(?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9])?$`;
const DATETIME_SHAPE = 'datetime must look like YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SS, without offset or Z (the zone goes in fromZone)';

/** The wall time (as if UTC) of a valid `YYYY-MM-DDTHH:MM[:SS]`, or a reason it is not valid. */
export function parseLocalDateTime(s: string): { wall: number } | { error: string } {
  const m = DATETIME.exec(s);
  if (!m) return { error: DATETIME_SHAPE };
  const [y, mo, d, h, mi, sec] = m.slice(1).map((v) => Number(v ?? 0)) as [number, number, number, number, number, number];
  if (y < MIN_YEAR || y > MAX_YEAR) return { error: `year ${y} out of range ${MIN_YEAR}-${MAX_YEAR}` };
  if (mo < 1 || mo > 12) return { error: `month ${mo} out of range 1-12` };
  const days = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  if (d < 1 || d > days) return { error: `day ${d} out of range 1-${days} for ${m[1]}-${m[2]}` };
  if (h > 23) return { error: `hour ${h} out of range 0-23` };
  if (mi > 59) return { error: `minute ${mi} out of range 0-59` };
  if (sec > 59) return { error: `second ${sec} out of range 0-59` };
  return { wall: Date.UTC(y, mo - 1, d, h, mi, sec) };
}

const View = z.object({
  zone: z.string().describe('IANA zone name, as given'),
  datetime: z.string().describe('Local wall-clock time, YYYY-MM-DDTHH:MM:SS'),
  offset: z.string().describe('UTC offset in force, ±HH:MM (±HH:MM:SS for historical local mean time)'),
  iso: z.string().describe('The same instant as ISO 8601 with that offset, e.g. 2026-11-22T09:00:00.000+08:00'),
});

export const timezoneConvert = defineTool({
  name: 'timezone_convert',
  title: 'Time zone converter',
  description:
    'Convert a local date-time (YYYY-MM-DDTHH:MM, optional :SS, no offset) read in fromZone (default Asia/Shanghai) to toZone, or, without toZone, to 20 major world cities. A time skipped by a DST change is refused (422); a time that happens twice takes the earlier offset.',
  input: z.object({
    datetime: z
      .string()
      .max(32)
      .regex(DATETIME, DATETIME_SHAPE)
      .meta({
        pattern: DATETIME_PATTERN,
        description: `Local date-time without offset: YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SS, a real date of the years ${MIN_YEAR}-${MAX_YEAR}`,
      }),
    fromZone: zoneSchema('fromZone').default('Asia/Shanghai').describe('IANA zone the datetime is read in (default Asia/Shanghai)'),
    toZone: zoneSchema('toZone').optional().describe('IANA zone to convert to; omit to get 20 major world cities'),
  }),
  output: z.object({
    source: View.describe('The given time in fromZone'),
    target: View.optional().describe('The same instant in toZone (when toZone is given)'),
    results: z
      .array(View.extend({ city: z.string().describe('City name') }))
      .optional()
      .describe('The same instant in 20 major cities (when toZone is omitted)'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  rest: { method: 'POST', path: '/api/timezone-convert' },
  example: { datetime: '2026-11-22T09:00', fromZone: 'Asia/Shanghai', toZone: 'America/New_York' },
  handler: ({ datetime, fromZone, toZone }) => {
    const parsed = parseLocalDateTime(datetime);
    if ('error' in parsed) throw new ToolError('INVALID_INPUT', parsed.error, [{ path: 'datetime', message: parsed.error }]);
    const r = resolveWall(fromZone, parsed.wall);
    if (r.kind === 'gap') {
      throw new ToolError(
        'PARSE_ERROR',
        `${formatWall(parsed.wall)} does not exist in ${fromZone}: clocks jump forward there (UTC offset ${formatOffset(r.offsetBefore)} → ${formatOffset(r.offsetAfter)})`,
        { datetime: formatWall(parsed.wall), zone: fromZone, offsetBefore: formatOffset(r.offsetBefore), offsetAfter: formatOffset(r.offsetAfter) },
      );
    }
    const source = zonedView(fromZone, r.instant);
    if (toZone !== undefined) return { source, target: zonedView(toZone, r.instant) };
    return { source, results: WORLD_CITIES.map(({ city, zone }) => ({ city, ...zonedView(zone, r.instant) })) };
  },
});
