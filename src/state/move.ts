import type { Logger } from '../log.js';
import type { AnyCollectionDef, CollectionDef, Store } from './types.js';

/** Records moved per page by moveCollection. */
const MOVE_PAGE = 1000;

/**
 * Moves every record of `def` from one store to another (the link-day records into the
 * analytics thread's store, the first time it starts on a data dir — startAnalyticsThread — or
 * what such a move cut short left behind: finishAnalyticsMove in ./index.ts), a page
 * at a time in id order: each page written to `to` durably before it is deleted from `from`,
 * so a move cut short leaves each record in one store or in both (the same record: nothing is
 * served while it runs), and the next start goes on. Resolves with how many records moved.
 */
export async function moveCollection(from: Store, to: Store, def: AnyCollectionDef, log: Logger): Promise<number> {
  // This collection's count only (listCollections would wait for every collection to load).
  const src = from.collection(def as CollectionDef<object>);
  const count = await src.count();
  if (count === 0) return 0;
  log.info(`moving ${count} records of ${def.name} into their own store (once)`);
  let moved = 0;
  for (;;) {
    const page = await from.scan(def.name, { limit: MOVE_PAGE });
    if (page.length === 0) break;
    await to.putMany(def, page.map((r) => JSON.parse(r.json) as object), { durability: 'durable' });
    for (const r of page) await src.delete(r.id, { durability: 'lazy' });
    moved += page.length;
  }
  await from.flush();
  log.info(`moved ${moved} records of ${def.name}`);
  return moved;
}
