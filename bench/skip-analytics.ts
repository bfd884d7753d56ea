// A preload for bench servers only (issue 32): what a redirect costs without a part of its visit
// analytics, in the same build. SKIP_ANALYTICS=writes — the file store's link_days adds answer at
// once and write nothing (the visits are still classified, counted in memory and flushed: only
// the store's work is gone); SKIP_ANALYTICS=all — a visit records nothing. Unset: nothing changes.
// `SERVER_ARGS='--import ./bench/skip-analytics.ts' SKIP_ANALYTICS=writes node --import tsx
// bench/links-steady.ts`; bench/link-visits.ts imports it itself (file store only).
import type { AddItem, AddManyOptions } from '../src/state/types.js';
import { FULFILLED } from '../src/state/counters.js';
import { EngineCollection } from '../src/state/file/collection.js';
import { VisitAnalytics } from '../src/tools/shortener/analytics.js';
import { LINK_DAYS } from '../src/tools/shortener/analytics-counters.js';

const skip = process.env.SKIP_ANALYTICS;
if (skip === 'writes') {
  const addMany = EngineCollection.prototype.addMany;
  EngineCollection.prototype.addMany = function (this: EngineCollection<object>, items: readonly AddItem<object>[], opts?: AddManyOptions) {
    return this.name === LINK_DAYS.name ? Promise.resolve(items.map(() => FULFILLED)) : addMany.call(this, items, opts);
  };
} else if (skip === 'all') {
  VisitAnalytics.prototype.record = () => {};
} else if (skip !== undefined && skip !== '') {
  throw new Error(`SKIP_ANALYTICS: ${skip} is neither writes nor all`);
}
