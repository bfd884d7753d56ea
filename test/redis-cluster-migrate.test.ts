/**
 * Issue 37: a store that ran with the one-slot layout (`{items}`) and starts with the Cluster
 * layout (16 shards) moves its records at start-up: none lost, none twice, indexes intact, a
 * record already written in the shards kept, two processes starting at once move them once.
 * The layouts are the same on one server as on a Cluster, so one redis-server suffices here.
 */
import { expect, it } from 'vitest';
import { ITEMS, type Item } from './store-fixtures.js';
import { describeRedis } from './redis.js';
import { useLayoutStores } from './redis-layout-stores.js';

describeRedis('moving the one-slot layout into shards at start-up (issue 37)', () => {
  const { open, prefix: freshPrefix } = useLayoutStores();

  it('1200 records with two indexes: all moved once, queries and counts as before, the old keys gone', async () => {
    const prefix = freshPrefix();
    const before = await open(prefix, 1);
    const items: Item[] = Array.from({ length: 1200 }, (_, i) => ({ id: `i${String(i).padStart(4, '0')}`, owner: `o${i % 7}`, n: i % 100 }));
    await before.putMany(ITEMS, items);
    await before.collection(ITEMS).put({ id: 'i0005', owner: 'o5', n: 5 });
    // A process already on the new layout wrote one record before the move: that version wins.
    const early = await open(prefix, 16);
    await early.collection(ITEMS).put({ id: 'i0005', owner: 'o5', n: 999 });

    const [a, b] = [await open(prefix, 16), await open(prefix, 16)];
    await Promise.all([a.preload([ITEMS]), b.preload([ITEMS])]);
    const items16 = a.collection(ITEMS);
    expect(await items16.count()).toBe(1200);
    expect((await items16.get('i0005'))!.n).toBe(999);
    expect((await items16.get('i1199'))).toStrictEqual({ id: 'i1199', owner: 'o2', n: 99 });
    const o3 = (await items16.query({ index: 'owner', eq: 'o3' })).map((r) => r.id);
    expect(o3).toStrictEqual(items.filter((r) => r.owner === 'o3').map((r) => r.id));
    expect(await items16.count({ index: 'n', gte: 10, lt: 20 })).toBe(120);
    expect((await items16.query({ order: 'desc', limit: 3 })).map((r) => r.id)).toStrictEqual(['i1199', 'i1198', 'i1197']);
    const raw = a.conn.redis;
    expect(await raw.exists(`${prefix}{items}:data`, `${prefix}{items}:ids`, `${prefix}{items}:ix:owner`, `${prefix}{items}:iv:owner`, `${prefix}{items}:ix:n`)).toBe(0);
    // Again: nothing left to move, nothing changes.
    await (await open(prefix, 16)).preload([ITEMS]);
    expect(await items16.count()).toBe(1200);
  });
});
