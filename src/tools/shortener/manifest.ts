import { defineManifest } from '../../core/family.js';
import { LINK_CHANGES, LINK_CLICK_ROLLUP, LINK_CLICKS, LINK_EXTERNAL_IDS, LINK_TOMBSTONES, LINK_VISITS, LINKS } from './links.js';
import { LINK_DAY_STATS, LINK_DAYS } from './analytics-counters.js';

/** The shortener family's name and collections (src/tools/manifests.ts); `load` imports the rest. */
export const shortener = defineManifest({
  name: 'shortener',
  collections: [LINKS, LINK_CLICKS, LINK_VISITS, LINK_EXTERNAL_IDS, LINK_TOMBSTONES, LINK_CHANGES, LINK_DAY_STATS, LINK_DAYS, LINK_CLICK_ROLLUP],
  // ANALYTICS_THREAD=worker: the visit analytics counted and written in a thread of their own.
  startThread: async (store, config, log) => (await import('./analytics-thread.js')).startAnalyticsThread(store, config, log),
  // The analytics thread's visit log, left by a crash: replayed before an export reads the records or an import adds to them.
  settleForCli: async (store, config, log) => (await import('./analytics-thread.js')).settleAnalytics(store, config, log),
  load: async () => (await import('./index.js')).shortenerFamily,
});
