/**
 * Standard 5-field cron: parsing with specific reasons, and next run times in a zone with the
 * documented DST rule. Shared by the cron_parse tool and the cron task manager.
 */
import { CronExpressionParser } from 'cron-parser';
import { ToolError } from '../errors.js';
import { offsetAt, resolveWall } from './zone-time.js';

/** Longest expression accepted (a minute list 0,1,…,59 alone is 170 characters). */
export const CRON_MAX_LENGTH = 1000;

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
// Larger than any DST jump in the tz database today (2 h at Troll, Antarctica): walls this far
// apart map to instants in the same order.
const DST_MARGIN = 4 * HOUR;

export const MACROS: Readonly<Record<string, string>> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

interface FieldSpec {
  key: 'minute' | 'hour' | 'dayOfMonth' | 'month' | 'dayOfWeek';
  label: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

const FIELDS: readonly FieldSpec[] = [
  { key: 'minute', label: 'minute', min: 0, max: 59 },
  { key: 'hour', label: 'hour', min: 0, max: 23 },
  { key: 'dayOfMonth', label: 'day-of-month', min: 1, max: 31 },
  { key: 'month', label: 'month', min: 1, max: 12, names: MONTHS },
  { key: 'dayOfWeek', label: 'day-of-week', min: 0, max: 7, names: DAYS },
];

// Quartz / Jenkins extensions (?, L, W, #, H) that cron-parser would otherwise accept.
const EXTENSION = /^(?:\?|H(?:\(.*\))?(?:\/\d+)?|L(?:W|-\d+)?|\d+[LW]|\w+#\d+)$/i;

const MONTH_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function fail(message: string, details?: Record<string, unknown>): never {
  throw new ToolError('PARSE_ERROR', message, details);
}

/** Shortens user text quoted in an error message. */
function quote(s: string): string {
  return s.length > 20 ? `'${s.slice(0, 20)}…'` : `'${s}'`;
}

/** One value: a number or (month / day-of-week) a three-letter name. */
function value(spec: FieldSpec, token: string): number {
  let n: number;
  if (/^\d+$/.test(token)) n = Number(token);
  else {
    const i = spec.names?.indexOf(token.toUpperCase()) ?? -1;
    if (i < 0) fail(`${spec.label}: invalid value ${quote(token)}`, { field: spec.key, value: token });
    n = spec.key === 'month' ? i + 1 : i;
  }
  if (n < spec.min || n > spec.max) fail(`${spec.label} ${token.length > 10 ? token.slice(0, 10) + '…' : token} out of range ${spec.min}-${spec.max}`, { field: spec.key, value: token });
  return n;
}

/**
 * Checks one field and returns the set of values it selects plus the same field with names
 * replaced by numbers (what cron-parser is given).
 */
function parseField(spec: FieldSpec, raw: string): { values: Set<number>; numeric: string } {
  const values = new Set<number>();
  const items: string[] = [];
  for (const item of raw.split(',')) {
    if (item === '') fail(`${spec.label}: empty item in list ${quote(raw)}`, { field: spec.key });
    if (EXTENSION.test(item)) {
      fail(`${spec.label}: ${quote(item)} is not standard cron; use numbers${spec.names ? ', names' : ''}, *, ranges (a-b), steps (/n) and lists (,)`, {
        field: spec.key,
        value: item.slice(0, 20),
      });
    }
    const m = /^([^/]*)(?:\/(.*))?$/.exec(item)!;
    const base = m[1]!;
    const stepText = m[2];
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText)) fail(`${spec.label}: invalid step ${quote(stepText)}`, { field: spec.key, value: stepText });
      step = Number(stepText);
      const maxStep = spec.key === 'dayOfWeek' ? 7 : spec.max;
      if (step < 1 || step > maxStep) fail(`${spec.label} step ${stepText.slice(0, 10)} out of range 1-${maxStep}`, { field: spec.key, value: stepText });
    }
    let lo: number;
    let hi: number;
    let numeric: string;
    if (base === '*') {
      lo = spec.min;
      hi = spec.key === 'dayOfWeek' ? 6 : spec.max;
      numeric = '*';
    } else if (base.includes('-')) {
      const [a = '', b = '', ...rest] = base.split('-');
      if (rest.length || a === '' || b === '') fail(`${spec.label}: invalid range ${quote(base)}`, { field: spec.key, value: base });
      lo = value(spec, a);
      hi = value(spec, b);
      // SAT-SUN / MON-SUN: Sunday at the end of a range is 7.
      if (spec.key === 'dayOfWeek' && hi === 0 && lo > 0) hi = 7;
      if (lo > hi) fail(`${spec.label} range ${base} is backwards (start after end)`, { field: spec.key, value: base });
      numeric = `${lo}-${hi}`;
    } else {
      lo = value(spec, base);
      // "5/15" means from 5 to the end of the field, every 15.
      hi = stepText !== undefined ? (spec.key === 'dayOfWeek' ? 6 : spec.max) : lo;
      if (lo > hi) hi = lo;
      numeric = stepText !== undefined ? `${lo}-${hi}` : `${lo}`;
    }
    for (let v = lo; v <= hi; v += step) values.add(spec.key === 'dayOfWeek' ? v % 7 : v);
    items.push(stepText !== undefined ? `${numeric}/${step}` : numeric);
  }
  return { values, numeric: items.join(',') };
}

export interface ParsedCron {
  fields: Record<FieldSpec['key'], string>;
  numeric: string;
  values: Record<FieldSpec['key'], Set<number>>;
}

/** Validates a 5-field expression or macro; throws PARSE_ERROR saying what is wrong. */
export function parseCron(expression: string): ParsedCron {
  const text = expression.trim();
  if (text === '') fail('The expression is empty');
  let expanded = text;
  if (text.startsWith('@')) {
    const macro = MACROS[text.toLowerCase()];
    if (macro === undefined) fail(`Unsupported macro ${quote(text)}; use ${Object.keys(MACROS).join(', ')}`, { value: text.slice(0, 20) });
    expanded = macro;
  }
  const parts = expanded.split(/\s+/);
  if (parts.length !== 5) {
    const extra = parts.length === 6 ? ': a seconds (or year) field is not supported' : '';
    fail(`Expected 5 fields (minute hour day-of-month month day-of-week), got ${parts.length}${extra}`, { fields: parts.length });
  }
  const fields = {} as ParsedCron['fields'];
  const values = {} as ParsedCron['values'];
  const numeric: string[] = [];
  FIELDS.forEach((spec, i) => {
    const raw = parts[i]!;
    const f = parseField(spec, raw);
    fields[spec.key] = raw;
    values[spec.key] = f.values;
    numeric.push(f.numeric);
  });
  // Day-of-month restricts days only when day-of-week is "*": then a day that no chosen month
  // has (31 in April, 30 in February) means the schedule never runs.
  if (fields.dayOfMonth !== '*' && fields.dayOfWeek === '*') {
    const possible = [...values.month].some((m) => [...values.dayOfMonth].some((d) => d <= MONTH_DAYS[m - 1]!));
    if (!possible) {
      fail(`The expression never runs: day-of-month ${fields.dayOfMonth} does not occur in month ${fields.month}`, { field: 'dayOfMonth' });
    }
  }
  return { fields, numeric: numeric.join(' '), values };
}

/**
 * The next `count` instants strictly after `now` at which the schedule fires in `zone`, by the
 * documented DST rule: a wall time that happens twice fires once, at its first occurrence; one
 * skipped by a forward jump fires at the instant it names with the offset before the jump
 * (02:30 → 03:30 after a 02:00→03:00 jump), merged with any run already at that instant.
 * The one next-fire computation: cron_parse lists these, the cron task manager's next_run_at
 * is the first of them.
 */
export function nextRuns(parsed: ParsedCron, zone: string, now: number, count: number): number[] {
  return steadyRuns(parsed, zone, now, count) ?? resolvedRuns(parsed, zone, now, count);
}

/**
 * The first fire time of `expression` in `zone` strictly after `after` (ms). Throws
 * PARSE_ERROR for an expression that does not parse or never fires.
 */
export function nextFire(expression: string, zone: string, after: number): number {
  const next = nextRuns(parseCron(expression), zone, after, 1)[0];
  if (next === undefined) fail('The schedule never fires', { field: 'schedule' });
  return next;
}

/**
 * The general case of nextRuns, exported so that a test holds the fast path to it.
 * cron-parser enumerates matching local wall times (read as if UTC, so its own DST handling
 * never applies); resolveWall() turns each into an instant. It scans hours of wall time around
 * `now`: ~10 ms for an every-minute schedule.
 */
export function resolvedRuns(parsed: ParsedCron, zone: string, now: number, count: number): number[] {
  const start = Math.floor((now + offsetAt(zone, now)) / 60_000) * 60_000 - DST_MARGIN;
  const it = CronExpressionParser.parse(parsed.numeric, { currentDate: new Date(start - 1000), tz: 'UTC', strict: false });
  const runs = new Set<number>();
  let cutoff = Infinity;
  for (;;) {
    const wall = it.next().getTime();
    if (wall > cutoff) break;
    const instant = resolveWall(zone, wall).instant;
    if (instant <= now) continue;
    runs.add(instant);
    if (runs.size >= count) {
      const kth = [...runs].sort((a, b) => a - b)[count - 1]!;
      cutoff = kth + offsetAt(zone, kth) + DST_MARGIN;
    }
  }
  return [...runs].sort((a, b) => a - b).slice(0, count);
}

/**
 * The fast path of nextRuns (~20 µs): when the zone's offset is the same a day either side of
 * `now` and every run asked for falls inside that day, local wall time maps to instants one to
 * one and in order, so the first matching wall times after `now` are the answer. Otherwise
 * null (resolvedRuns, which handles DST gaps and overlaps, decides).
 */
function steadyRuns(parsed: ParsedCron, zone: string, now: number, count: number): number[] | null {
  const offset = offsetAt(zone, now);
  if (offsetAt(zone, now - DAY) !== offset || offsetAt(zone, now + DAY) !== offset) return null;
  const wall = now + offset;
  const it = CronExpressionParser.parse(parsed.numeric, { currentDate: new Date(Math.floor(wall / 1000) * 1000), tz: 'UTC', strict: false });
  const runs: number[] = [];
  while (runs.length < count) {
    const next = it.next().getTime();
    // cron-parser answers strictly after the whole second it was given.
    if (next <= wall) continue;
    const instant = next - offset;
    if (instant - now >= DAY) return null;
    runs.push(instant);
  }
  return runs;
}
