import type { Store } from '../src/state/index.js';
import { dayId, LINK_DAYS } from '../src/tools/shortener/analytics-counters.js';
import { LINK_CLICKS } from '../src/tools/shortener/links.js';

/**
 * The clicks of codes as the store holds them, read apart from the server's own reader
 * (clicksOf): the clicks record plus the `clicks` of the day records of yesterday, today and
 * tomorrow by this process's clock (a run that crosses midnight). Only for links whose days are
 * not folded yet (the tests' links are minutes old).
 */
export async function clicksStored(store: Store, codes: readonly string[]): Promise<number[]> {
  const now = Date.now();
  const days = [-1, 0, 1].map((d) => new Date(now + d * 86_400_000).toISOString().slice(0, 10));
  const recs = await store.collection(LINK_CLICKS).getMany(codes);
  const dayRecs = await store.collection(LINK_DAYS).getMany(codes.flatMap((c) => days.map((d) => dayId(d, c))));
  return codes.map((_, i) => (recs[i]?.clicks ?? 0) + days.reduce((t, _d, k) => t + (dayRecs[i * days.length + k]?.clicks ?? 0), 0));
}
