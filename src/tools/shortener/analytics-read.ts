import { z } from 'zod';
import { ToolError } from '../../errors.js';
import type { Services } from '../../services.js';
import { ANALYTICS_DAYS, ANALYTICS_HOURS, COUNTER_CAPS, dayOf, dayOfId, emptyDelta, LINK_DAY_STATS, LINK_DAYS, OTHER, addDelta, type DayDelta } from './analytics-counters.js';
import { keptDayIds, oldestKeptDay, readBetweenWrites, visitAnalytics } from './analytics.js';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
/** Top keys per counter in an answer (the rest summed under 'other'). */
const TOP = COUNTER_CAPS.referrers;

const counted = (key: string) => z.object({ [key]: z.string(), visits: z.number().int().min(0) });
const named = z.array(z.object({ name: z.string(), visits: z.number().int().min(0) }));

/** The owner's part of url_stats (absent for keyless links and for nobody else). */
export const analyticsOutput = {
  from: z.string().optional().describe('First UTC day of the analytics (YYYY-MM-DD); owner only'),
  to: z.string().optional().describe('Last UTC day of the analytics (YYYY-MM-DD); owner only'),
  visits: z
    .object({
      byDay: z.array(z.object({ day: z.string(), visits: z.number().int().min(0) })).describe('Visits by people per UTC day, from `from` to `to`, zeros included'),
      byHour: z.array(z.object({ hour: z.string(), visits: z.number().int().min(0) })).describe(`Visits by people per UTC hour, the last ${ANALYTICS_HOURS} hours (ISO time of the hour's start)`),
    })
    .optional()
    .describe('Visits by people over time (the clicks); owner only'),
  referrers: z.array(counted('host')).optional().describe(`Top referrer hosts ('direct': none), at most ${TOP} plus 'other'; owner only`),
  browsers: named.optional().describe('Browser families; owner only'),
  os: named.optional().describe('Operating system families; owner only'),
  devices: z.array(counted('type')).optional().describe('Device types: desktop, mobile, tablet, other; owner only'),
  bots: z
    .object({ visits: z.number().int().min(0), names: named })
    .optional()
    .describe('Visits by crawlers and link-preview fetchers, not counted in clicks; owner only'),
};

export const ISO_DAY = /^\d{4}-\d{2}-\d{2}$/;

/** from/to as given, checked: real days, from ≤ to, within the kept window (else 400). */
export function analyticsRange(now: number, from: string | undefined, to: string | undefined): { from: string; to: string } {
  const today = new Date(now).toISOString().slice(0, 10);
  const oldest = oldestKeptDay(now);
  const range = { from: from ?? oldest, to: to ?? today };
  for (const [field, day] of Object.entries(range)) {
    const t = ISO_DAY.test(day) ? Date.parse(`${day}T00:00:00Z`) : NaN;
    // Date.parse rolls 2026-02-30 over to March: a real day reads back the same.
    if (Number.isNaN(t) || new Date(t).toISOString().slice(0, 10) !== day) {
      throw new ToolError('INVALID_INPUT', `${field} must be a UTC day, YYYY-MM-DD`, { field });
    }
    if (day < oldest || day > today) throw new ToolError('INVALID_INPUT', `${field} must lie within the last ${ANALYTICS_DAYS} days (${oldest} to ${today})`, { field });
  }
  if (range.from > range.to) throw new ToolError('INVALID_INPUT', 'from must not be after to', { field: 'from' });
  return range;
}

function top(m: Map<string, number>, key: 'name' | 'host' | 'type'): Record<string, string | number>[] {
  const sorted = [...m].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const out = sorted.filter(([k]) => k !== OTHER).slice(0, TOP);
  const rest = m.get(OTHER) ?? 0;
  const tail = sorted.filter(([k]) => k !== OTHER).slice(TOP).reduce((n, [, v]) => n + v, rest);
  const rows = out.map(([k, visits]) => ({ [key]: k, visits }));
  if (tail > 0) rows.push({ [key]: OTHER, visits: tail });
  return rows;
}

/**
 * A code's analytics between two UTC days (written records plus this instance's unwritten
 * counters). Records from before the link was created (a deleted link's, written late by an
 * instance that had counted them) are not its own and are left out.
 */
export async function readAnalytics(services: Services, code: string, createdAt: string, range: { from: string; to: string }) {
  const now = services.clock.now();
  const born = createdAt.slice(0, 10);
  const oldest = oldestKeptDay(now);
  const byDay = new Map<string, DayDelta>();
  const dayFor = (day: string) => {
    let d = byDay.get(day);
    if (!d) byDay.set(day, (d = emptyDelta()));
    return d;
  };
  // The kept days' records by id, from the link's creation on (records from before it are a
  // deleted link's, written late by an instance that had counted them).
  const days = services.store.collection(LINK_DAYS);
  const ids = keptDayIds(now, code).filter((id) => dayOfId(id) >= born);
  // The layout before (read until it is empty).
  const before = services.store.collection(LINK_DAY_STATS);
  const analytics = visitAnalytics(services);
  // The records and this instance's unwritten counts, read with no write of them landing in between.
  const [recs, beforeRecs, unwritten] = await readBetweenWrites(analytics, async () => [await Promise.all(ids.map((id) => days.get(id))), await before.query({ index: 'code', eq: code }), await analytics.unwritten(code)] as const);
  for (const r of recs) if (r) addDelta(dayFor(dayOfId(r.id)), dayOf(r));
  for (const r of beforeRecs) {
    // Past the window: gone now (a link no longer visited is pruned here, not on its next visit).
    if (r.day < oldest) void before.delete(r.id, { durability: 'lazy' }).catch(() => {});
    if (r.day < born) continue;
    addDelta(dayFor(r.day), dayOf(r));
  }
  for (const { day, delta } of unwritten) if (day >= born) addDelta(dayFor(day), delta);

  const total = emptyDelta();
  const perDay: { day: string; visits: number }[] = [];
  for (let t = Date.parse(`${range.from}T00:00:00Z`); t <= Date.parse(`${range.to}T00:00:00Z`); t += DAY_MS) {
    const day = new Date(t).toISOString().slice(0, 10);
    const d = byDay.get(day);
    perDay.push({ day, visits: d?.visits ?? 0 });
    if (d) addDelta(total, d);
  }
  const hours: { hour: string; visits: number }[] = [];
  const thisHour = Math.floor(now / HOUR_MS) * HOUR_MS;
  for (let t = thisHour - (ANALYTICS_HOURS - 1) * HOUR_MS; t <= thisHour; t += HOUR_MS) {
    const iso = new Date(t).toISOString();
    hours.push({ hour: `${iso.slice(0, 13)}:00:00Z`, visits: byDay.get(iso.slice(0, 10))?.hours[Number(iso.slice(11, 13))] ?? 0 });
  }
  return {
    from: range.from,
    to: range.to,
    visits: { byDay: perDay, byHour: hours },
    referrers: top(total.referrers, 'host') as { host: string; visits: number }[],
    browsers: top(total.browsers, 'name') as { name: string; visits: number }[],
    os: top(total.os, 'name') as { name: string; visits: number }[],
    devices: top(total.devices, 'type') as { type: string; visits: number }[],
    bots: { visits: total.bots, names: top(total.botNames, 'name') as { name: string; visits: number }[] },
  };
}
