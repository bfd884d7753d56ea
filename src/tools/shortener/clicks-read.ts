import type { Services } from '../../services.js';
import { dayId, LINK_DAYS, num, type LinkDay } from './analytics-counters.js';
import { readBetweenWrites, visitAnalytics } from './analytics.js';
import { addDays, ROLLUP_ID } from './clicks.js';
import { LINK_CLICK_ROLLUP, LINK_CLICKS, utcDay, type LinkClicks } from './links.js';

/** A link's clicks as url_stats, url_list and the other answers give them (how they are kept: ./clicks.ts). */
export interface Clicks {
  clicks: number;
  lastClickedAt: string | null;
}

/**
 * The first day whose day record still counts towards a link's clicks: after the later of its
 * record's `through` and the roll-up's, and not before the link's creation (records from before are
 * a deleted link's, written late).
 */
function firstNotRolledUp(rec: LinkClicks | undefined, rollUp: string, born: string): string {
  const from = addDays(rec?.through !== undefined && rec.through > rollUp ? rec.through : rollUp, 1);
  return from > born ? from : born;
}

/**
 * The clicks of links (each with its code and creation time): what is stored — their clicks
 * records, the roll-up, their day records not rolled up yet — plus this instance's counts not written
 * yet. Three store reads for the lot.
 */
export async function clicksOf(services: Services, links: readonly { code: string; createdAt: string }[]): Promise<Clicks[]> {
  const now = services.clock.now();
  const today = utcDay(now);
  // An instance whose clock runs ahead near midnight writes tomorrow's record (as keptDayIds).
  const last = addDays(today, 1);
  const { store } = services;
  const analytics = visitAnalytics(services);
  // The store's records and this instance's unwritten clicks, read with no write of them landing in between.
  const { rollUp, recs, spans, dayRecs, unwrittenOf } = await readBetweenWrites(analytics, async () => {
    const [rollUp, recs] = await Promise.all([store.collection(LINK_CLICK_ROLLUP).get(ROLLUP_ID), store.collection(LINK_CLICKS).getMany(links.map((l) => l.code))]);
    const spans: { from: number; days: string[] }[] = [];
    const ids: string[] = [];
    links.forEach((l, i) => {
      // No roll-up yet: no day record holds clicks (see startRollUp), only this instance's memory may.
      const from = rollUp === undefined ? addDays(today, -2) : firstNotRolledUp(recs[i], rollUp.through, l.createdAt.slice(0, 10));
      const days: string[] = [];
      for (let d = from; d <= last; d = addDays(d, 1)) days.push(d);
      spans.push({ from: ids.length, days });
      if (rollUp !== undefined) for (const d of days) ids.push(dayId(d, l.code));
    });
    const dayRecs = ids.length > 0 ? await store.collection(LINK_DAYS).getMany(ids) : [];
    const unwrittenOf = await analytics.unwrittenClicksOf(links.map((l, i) => ({ code: l.code, days: spans[i]!.days })));
    return { rollUp, recs, spans, dayRecs, unwrittenOf };
  });
  return links.map((l, i) => {
    const rec = recs[i];
    let clicks = num(rec?.clicks);
    // lastClickedAt: written by the increments before issue 32's counter layout (kept by old records).
    let latest = rec?.lastClickedAt ? Date.parse(rec.lastClickedAt) : 0;
    if (num(rec?.lastClickedMs) > latest) latest = num(rec?.lastClickedMs);
    const { from, days } = spans[i]!;
    if (rollUp !== undefined) {
      days.forEach((_, k) => {
        const r = dayRecs[from + k] as LinkDay | undefined;
        clicks += num(r?.clicks);
        if (num(r?.last) > latest) latest = num(r?.last);
      });
    }
    const unwritten = unwrittenOf[i]!;
    clicks += unwritten.clicks;
    if (unwritten.last > latest) latest = unwritten.last;
    return { clicks, lastClickedAt: latest > 0 ? new Date(latest).toISOString() : null };
  });
}
