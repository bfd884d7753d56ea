/**
 * Issues 32 and 37: the upgrade edges of the Redis counter layout (`counters: true`, a hash per
 * record that `Collection.add` increments). Moving the one-slot layout into shards keeps each
 * record's counts, once, across a crash mid-way; building a new index while other processes
 * count and update loses none of their changes; and the counts cross from the shards back to
 * one Redis through export and import. One redis-server: the layouts are the same there as on
 * a Cluster (test/redis-cluster-migrate.test.ts).
 */
import { PassThrough } from 'node:stream';
import { expect, it } from 'vitest';
import { defineCollection } from '../src/state/index.js';
import type { RedisStore } from '../src/state/redis/index.js';
import { exportStore, importStore } from '../src/state/transfer.js';
import { describeRedis } from './redis.js';
import { useLayoutStores } from './redis-layout-stores.js';


interface Day {
  id: string;
  code: string;
  day: string;
  visits?: number;
  views?: number;
}
/** As an older version defined it (no `day` index), and as this one does. */
const DAYS_V1 = defineCollection<Day>({ name: 'days', key: 'id', indexes: ['code'], counters: true });
const DAYS = defineCollection<Day>({ name: 'days', key: 'id', indexes: ['code', 'day'], counters: true });
/** A collection without the counter layout: its counts are JSON fields (increment). */
interface PlainDay {
  id: string;
  code: string;
  day: string;
  visits: number;
}
const PLAIN_V1 = defineCollection<PlainDay>({ name: 'pdays', key: 'id', indexes: ['code'] });
const PLAIN = defineCollection<PlainDay>({ name: 'pdays', key: 'id', indexes: ['code', 'day'] });
const init = (i: number): Day => ({ id: `d${String(i).padStart(5, '0')}`, code: `c${i % 13}`, day: `2026-11-${String((i % 28) + 1).padStart(2, '0')}` });

describeRedis('the counter layout across upgrades on Redis (issues 32, 37)', () => {
  const { open, prefix: freshPrefix } = useLayoutStores();
  const keys = async (s: RedisStore, pattern: string) => (await s.conn.redis.keys(pattern)).sort();

  it('the one-slot layout moves into shards with its counts: once each, the shards\' own version kept, a crash mid-way finished without adding twice', async () => {
    const prefix = freshPrefix();
    const before = await open(prefix, 1);
    const days = before.collection(DAYS);
    for (let i = 0; i < 700; i++) await days.add(init(i).id, { visits: i + 1, [`h:${i % 24}`]: 2 }, { init: init(i) });
    await days.add(init(7).id, { visits: 5 }, { init: init(7) });
    const expected = new Map((await days.query()).map((d) => [d.id, d]));
    expect(expected.get(init(7).id)).toStrictEqual({ ...init(7), visits: 13, 'h:7': 2 });

    // A move cut short after copying d00001 (the old record still there), and a process on the
    // new layout that counted d00002 on its own before the move: the shards' versions win.
    const early = (await open(prefix, 16)).collection(DAYS);
    await early.put({ ...(expected.get(init(1).id) as Day) });
    await early.add(init(1).id, { visits: 100 }, { init: init(1) });
    await early.add(init(2).id, { visits: 1 }, { init: init(2) });

    const [a, b] = [await open(prefix, 16), await open(prefix, 16)];
    await Promise.all([a.preload([DAYS]), b.preload([DAYS])]);
    const moved = a.collection(DAYS);
    expect(await moved.count()).toBe(700);
    const want = (i: number) => expected.get(init(i).id)!;
    expect(await moved.get(init(1).id)).toStrictEqual({ ...want(1), visits: 2 + 100 });
    expect(await moved.get(init(2).id)).toStrictEqual({ ...init(2), visits: 1 });
    for (const i of [0, 7, 300, 699]) expect(await moved.get(init(i).id)).toStrictEqual(want(i));
    const special = new Map<string, Day>([
      [init(1).id, { ...want(1), visits: 2 + 100 }],
      [init(2).id, { ...init(2), visits: 1 }],
    ]);
    expect(await moved.query()).toStrictEqual([...expected.values()].map((d) => special.get(d.id) ?? d));
    expect((await moved.query({ index: 'code', eq: 'c3' })).map((d) => d.id)).toStrictEqual([...expected.values()].filter((d) => d.code === 'c3').map((d) => d.id));
    // Nothing left in the old layout: records, ids, counter hashes, index keys.
    expect(await keys(a, `${prefix}{days}*`)).toStrictEqual([]);
    // Counting goes on in the shards.
    await moved.add(init(7).id, { visits: 1 }, { init: init(7) });
    expect((await b.collection(DAYS).get(init(7).id))!.visits).toBe(14);
  });

  for (const shards of [1, 16]) {
    it(`building a new index while another process counts, increments and deletes loses none of it (${shards === 1 ? 'one Redis' : '16 shards'})`, async () => {
      const prefix = freshPrefix();
      const old = await open(prefix, shards);
      const [counted, plain] = [old.collection(DAYS_V1), old.collection(PLAIN_V1)];
      const n = 2000;
      for (let i = 0; i < n; i += 250) {
        const ids = Array.from({ length: 250 }, (_, j) => i + j);
        await Promise.all(ids.map((j) => counted.add(init(j).id, { visits: 1 }, { init: init(j) })));
        await Promise.all(ids.map((j) => plain.put({ ...init(j), visits: 1 })));
      }
      // An instance still on the old definition counts and increments the first half and
      // deletes from the second, all through the rebuild.
      let adds = 0;
      let increments = 0;
      const deleted: string[] = [];
      let building = true;
      const writer = async (w: number) => {
        for (let k = 0; building || k < 20; k++) {
          const i = (w * 7919 + k * 104_729) % (n / 2);
          await counted.add(init(i).id, { visits: 1, views: 2 }, { init: init(i) });
          adds++;
          await plain.increment(init(i).id, 'visits', 1, { init: { ...init(i), visits: 0 } });
          increments++;
        }
      };
      const remover = async () => {
        for (let i = n - 1; building && i >= n / 2; i -= 3) {
          await Promise.all([counted.delete(init(i).id), plain.delete(init(i).id)]);
          deleted.push(init(i).id);
        }
      };
      const upgraded = await open(prefix, shards);
      const rebuild = upgraded.preload([DAYS, PLAIN]).finally(() => (building = false));
      await Promise.all([rebuild, remover(), ...Array.from({ length: 12 }, (_, w) => writer(w))]);
      expect(adds).toBeGreaterThan(0);
      expect(deleted.length).toBeGreaterThan(0);
      const days = await upgraded.collection(DAYS).query();
      const pdays = await upgraded.collection(PLAIN).query();
      // Every add and increment is there, no deleted record came back.
      expect(days.length).toBe(n - deleted.length);
      expect(pdays.length).toBe(n - deleted.length);
      expect(days.reduce((s, d) => s + (d.views ?? 0), 0)).toBe(2 * adds);
      expect(days.reduce((s, d) => s + (d.visits ?? 0), 0)).toBe(n - deleted.length + adds);
      expect(pdays.reduce((s, d) => s + d.visits, 0)).toBe(n - deleted.length + increments);
      // The new index holds every record.
      const day5 = days.filter((d) => d.day === '2026-11-05').map((d) => d.id);
      expect((await upgraded.collection(DAYS).query({ index: 'day', eq: '2026-11-05' })).map((d) => d.id)).toStrictEqual(day5);
      // Through the index, not a count of it: a record the old instance deleted after the rebuild
      // rewrote it leaves its entry in the new index, which a query skips and a count does not
      // (the old code knows no such index; docs/scale-out.md, "Building a new index").
      const pday5 = pdays.filter((d) => d.day === '2026-11-05').map((d) => d.id);
      expect((await upgraded.collection(PLAIN).query({ index: 'day', eq: '2026-11-05' })).map((d) => d.id)).toStrictEqual(pday5);
    });
  }

  it('the counts cross from 16 shards to one Redis and back through export and import', async () => {
    const sharded = await open(freshPrefix(), 16);
    const days = sharded.collection(DAYS);
    for (let i = 0; i < 300; i++) await days.add(init(i).id, { visits: i, [`ref:h${i % 5}`]: 1 }, { init: init(i) });
    const want = await days.query();
    const move = async (from: RedisStore, to: RedisStore) => {
      const pipe = new PassThrough();
      const [, got] = await Promise.all([exportStore(from, pipe).then(() => pipe.end()), importStore(to, pipe, { known: [DAYS] })]);
      expect(got.records).toBe(300);
    };
    const single = await open(freshPrefix(), 1);
    await move(sharded, single);
    expect(await single.collection(DAYS).query()).toStrictEqual(want);
    // The imported counts are the JSON's; counting goes on from them.
    await single.collection(DAYS).add(init(4).id, { visits: 1 }, { init: init(4) });
    const back = await open(freshPrefix(), 16);
    await move(single, back);
    expect(await back.collection(DAYS).get(init(4).id)).toStrictEqual({ ...want[4], visits: 5 });
    expect((await back.collection(DAYS).query({ index: 'code', eq: 'c1' })).length).toBe(want.filter((d) => d.code === 'c1').length);
  });
});
