/**
 * The store contract: every backend (memory, file, Redis) passes the same tests. What only the
 * file store does (files, locks, failing disks) is tested in ./file/store.test.ts.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../test/harness.js';
import { describeRedis, startRedis, type TestRedis } from '../../test/redis.js';
import { createLogger } from '../log.js';
import { createMemoryStore, defineCollection, openFileStore, REMOVE, StoreError, type Store } from './index.js';
import { connectRedis, openRedisStore, RedisStore } from './redis/index.js';
import { THINGS, type Thing } from '../../test/store-fixtures.js';

const log = createLogger('silent');


const open: Store[] = [];
async function fileStore(): Promise<Store> {
  const store = await openFileStore(tempDir(), { log });
  open.push(store);
  return store;
}
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});

let redisServer: Promise<TestRedis> | undefined;

describeRedis('hot updates across processes (Redis)', () => {
  it('two stores on one prefix: a hot update over a stale remembered version retries, and concurrent hot updates from both add up', async () => {
    const server = await (redisServer ??= startRedis());
    const prefix = server.prefix();
    const [a, b] = [await openRedisStore({ url: server.url, prefix, log, quiet: true }), await openRedisStore({ url: server.url, prefix, log, quiet: true })];
    open.push(a, b);
    const [ta, tb] = [a.collection(THINGS), b.collection(THINGS)];
    const inc = (cur: Thing | undefined): Thing => ({ id: 'x', n: (cur?.n ?? 0) + 1 });
    await ta.update('x', inc, { hot: true }); // a remembers n=1
    await tb.update('x', (cur) => ({ ...cur!, n: 50 })); // a's memory is stale now
    expect((await ta.update('x', inc, { hot: true }))!.n).toBe(51);
    await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 ? ta : tb).update('x', inc, { hot: true })));
    expect((await ta.get('x'))!.n).toBe(251);
  });
});
afterAll(async () => {
  if (redisServer) await (await redisServer).stop();
});
async function redis(): Promise<Store> {
  const server = await (redisServer ??= startRedis());
  const store = await openRedisStore({ url: server.url, prefix: server.prefix(), log, quiet: true });
  open.push(store);
  return store;
}

/** The Cluster key layout (16 shards per collection) on one server: every contract holds across shards too. */
async function redisSharded(): Promise<Store> {
  const server = await (redisServer ??= startRedis());
  const store = new RedisStore(await connectRedis({ url: server.url, log, quiet: true }), server.prefix(), 16);
  open.push(store);
  return store;
}

for (const kind of ['memory', 'file', 'redis', 'redis-sharded'] as const) {
  (kind.startsWith('redis') ? describeRedis : describe)(`store contract (${kind})`, () => {
    const make = async () => (kind === 'memory' ? createMemoryStore() : kind === 'redis' ? redis() : kind === 'redis-sharded' ? redisSharded() : fileStore());

    it('put, get, insert-if-absent, delete', async () => {
      const things = (await make()).collection(THINGS);
      expect(await things.get('a')).toBe(undefined);
      expect(await things.insert({ id: 'a', n: 1 })).toBe(true);
      expect(await things.insert({ id: 'a', n: 2 })).toBe(false);
      expect(await things.get('a')).toStrictEqual({ id: 'a', n: 1 });
      await things.put({ id: 'a', n: 3, tag: 'x' });
      expect(await things.get('a')).toStrictEqual({ id: 'a', n: 3, tag: 'x' });
      expect(await things.delete('a')).toBe(true);
      expect(await things.delete('a')).toBe(false);
      expect(await things.get('a')).toBe(undefined);
    });

    it('getMany: the records of the ids in their order, absent ones undefined, a repeated id twice; an id not a string refused', async () => {
      const things = (await make()).collection(THINGS);
      const ids = Array.from({ length: 40 }, (_, i) => `g${i}`);
      for (const [i, id] of ids.entries()) if (i % 3 !== 1) await things.put({ id, n: i, ...(i % 5 === 0 ? { tag: 't' } : {}) });
      const asked = [...ids, 'nope', 'g0'].reverse();
      const got = await things.getMany(asked);
      expect(got).toStrictEqual(await Promise.all(asked.map((id) => things.get(id))));
      expect(got.filter((r) => r === undefined)).toHaveLength(14);
      expect(got[0]).toStrictEqual({ id: 'g0', n: 0, tag: 't' });
      expect(await things.getMany([])).toStrictEqual([]);
      got[0]!.n = 99;
      expect((await things.get('g0'))!.n).toBe(0);
      await expect(things.getMany(['g1', 5 as unknown as string])).rejects.toMatchObject({ code: 'BAD_RECORD' });
    });

    it('hands out copies: mutating a result changes nothing stored', async () => {
      const things = (await make()).collection(THINGS);
      const rec = { id: 'a', n: 1, list: ['x'] };
      await things.put(rec);
      rec.list.push('mutated after put');
      const got = (await things.get('a'))!;
      got.list!.push('mutated after get');
      expect(await things.get('a')).toStrictEqual({ id: 'a', n: 1, list: ['x'] });
    });

    it('update: write, leave unchanged, remove, and the id cannot change', async () => {
      const things = (await make()).collection(THINGS);
      expect(await things.update('a', (cur) => (cur ? undefined : { id: 'a', n: 1 }))).toStrictEqual({ id: 'a', n: 1 });
      expect(await things.update('a', (cur) => ({ ...cur!, n: cur!.n + 1 }))).toStrictEqual({ id: 'a', n: 2 });
      expect(await things.update('a', () => undefined)).toStrictEqual({ id: 'a', n: 2 });
      await expect(things.update('a', (cur) => ({ ...cur!, id: 'b' }))).rejects.toMatchObject({ code: 'BAD_RECORD' });
      expect(await things.update('a', () => REMOVE)).toBe(undefined);
      expect(await things.get('a')).toBe(undefined);
      expect(await things.update('missing', () => REMOVE)).toBe(undefined);
    });

    it('compareAndSet writes only over the expected version', async () => {
      const things = (await make()).collection(THINGS);
      expect(await things.compareAndSet('a', undefined, { id: 'a', n: 1 })).toBe(true);
      expect(await things.compareAndSet('a', undefined, { id: 'a', n: 9 })).toBe(false);
      expect(await things.compareAndSet('a', { id: 'a', n: 2 }, { id: 'a', n: 9 })).toBe(false);
      const cur = (await things.get('a'))!;
      expect(await things.compareAndSet('a', cur, { id: 'a', n: 2 })).toBe(true);
      expect(await things.compareAndSet('a', cur, REMOVE)).toBe(false);
      expect(await things.compareAndSet('a', { n: 2, id: 'a' }, REMOVE)).toBe(true);
      expect(await things.get('a')).toBe(undefined);
    });

    it('increment creates from init, adds, and sets extra fields in the same step', async () => {
      const things = (await make()).collection(THINGS);
      expect(await things.increment('c', 'n', 1, { init: { id: 'c', n: 10 } })).toStrictEqual({ id: 'c', n: 11 });
      expect(await things.increment('c', 'n', -5, { init: { id: 'c', n: 10 }, set: { tag: 'last' } })).toStrictEqual({ id: 'c', n: 6, tag: 'last' });
      await expect(things.increment('c', 'n', Number.NaN, { init: { id: 'c', n: 0 } })).rejects.toMatchObject({ code: 'BAD_RECORD' });
    });

    it('concurrent updates and increments lose nothing', async () => {
      const things = (await make()).collection(THINGS);
      await Promise.all([
        ...Array.from({ length: 300 }, () => things.increment('k', 'n', 1, { init: { id: 'k', n: 0 } })),
        ...Array.from({ length: 300 }, (_, i) =>
          things.update('l', (cur) => ({ id: 'l', n: (cur?.n ?? 0) + 1, list: [...(cur?.list ?? []), String(i)] })),
        ),
        ...Array.from({ length: 50 }, (_, i) => things.increment('k', 'n', 1, { init: { id: 'k', n: 0 }, durability: i % 2 ? 'lazy' : 'durable' })),
      ]);
      expect((await things.get('k'))!.n).toBe(350);
      const l = (await things.get('l'))!;
      expect(l.n).toBe(300);
      expect(new Set(l.list).size).toBe(300);
    });

    it('hot updates (from the version last written) lose nothing among plain updates and increments, and see removals', async () => {
      const things = (await make()).collection(THINGS);
      const add = (i: number) => (cur: Thing | undefined): Thing => ({ id: 'h', n: (cur?.n ?? 0) + 1, list: [...(cur?.list ?? []), String(i)] });
      await Promise.all(Array.from({ length: 200 }, (_, i) => things.update('h', add(i), { hot: i % 2 === 0, durability: i % 3 ? 'lazy' : 'durable' })));
      expect((await things.get('h'))!.n).toBe(200);
      expect(new Set((await things.get('h'))!.list).size).toBe(200);
      // Written meanwhile by a plain update, then removed and recreated: a hot update starts from what is there.
      await things.update('h', (cur) => ({ ...cur!, n: 1000 }));
      expect((await things.update('h', add(-1), { hot: true }))!.n).toBe(1001);
      await things.delete('h');
      expect(await things.update('h', add(-2), { hot: true })).toStrictEqual({ id: 'h', n: 1, list: ['-2'] });
      expect(await things.update('h', () => REMOVE, { hot: true })).toBe(undefined);
      expect(await things.get('h')).toBe(undefined);
      expect(await things.update('h', () => undefined, { hot: true })).toBe(undefined);
    });

    it('insertCapped: at most max records in the range, decided atomically; a taken id is taken', async () => {
      const things = (await make()).collection(THINGS);
      await things.put({ id: 'other', n: 1, tag: 'elsewhere' });
      const cap = { within: { index: 'tag' as const, eq: 'cap' }, max: 7 };
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => things.insertCapped({ id: `c${i}`, n: i, tag: 'cap' }, cap)));
      expect(results.filter((r) => r === 'inserted')).toHaveLength(7);
      expect(results.filter((r) => r === 'full')).toHaveLength(13);
      expect(await things.count({ index: 'tag', eq: 'cap' })).toBe(7);
      const inside = `c${results.indexOf('inserted')}`;
      expect(await things.insertCapped({ id: 'other', n: 1, tag: 'cap' }, { ...cap, max: 100 })).toBe('taken');
      expect(await things.delete(inside)).toBe(true);
      expect(await things.insertCapped({ id: 'again', n: 1, tag: 'cap' }, cap)).toBe('inserted');
      expect(await things.insertCapped({ id: 'more', n: 1, tag: 'cap' }, cap)).toBe('full');
      // Ranges work as in queries.
      expect(await things.insertCapped({ id: 'r1', n: 100 }, { within: { index: 'n', gte: 100, lt: 200 }, max: 1 })).toBe('inserted');
      expect(await things.insertCapped({ id: 'r2', n: 150 }, { within: { index: 'n', gte: 100, lt: 200 }, max: 1 })).toBe('full');
    });

    it('query: equality, ranges, order, limit, where; count', async () => {
      const things = (await make()).collection(THINGS);
      const recs: Thing[] = [
        { id: 'a', n: 5, tag: 'x' },
        { id: 'b', n: 1, tag: 'y' },
        { id: 'c', n: 3, tag: 'x' },
        { id: 'd', n: 3, tag: null },
        { id: 'e', n: 10 },
      ];
      for (const r of recs) await things.put(r);
      expect((await things.query({ index: 'tag', eq: 'x' })).map((r) => r.id)).toStrictEqual(['a', 'c']);
      expect((await things.query({ index: 'tag', eq: null })).map((r) => r.id)).toStrictEqual(['d', 'e']);
      expect((await things.query({ index: 'n', gte: 3, lt: 10 })).map((r) => r.id)).toStrictEqual(['c', 'd', 'a']);
      expect((await things.query({ index: 'n', gt: 3 })).map((r) => r.id)).toStrictEqual(['a', 'e']);
      expect((await things.query({ index: 'n', lte: 3, order: 'desc' })).map((r) => r.id)).toStrictEqual(['d', 'c', 'b']);
      expect((await things.query({ index: 'n', order: 'desc', limit: 2 })).map((r) => r.id)).toStrictEqual(['e', 'a']);
      expect((await things.query({ index: 'n', eq: 3, where: { tag: 'x' } })).map((r) => r.id)).toStrictEqual(['c']);
      expect((await things.query()).map((r) => r.id)).toStrictEqual(['a', 'b', 'c', 'd', 'e']);
      expect((await things.query({ where: { tag: 'x' }, order: 'desc' })).map((r) => r.id)).toStrictEqual(['c', 'a']);
      expect(await things.query({ index: 'n', limit: 0 })).toStrictEqual([]);
      expect(await things.count()).toBe(5);
      expect(await things.count({ index: 'tag', eq: 'x' })).toBe(2);
      expect(await things.count({ index: 'n', eq: 3, where: { tag: null } })).toBe(1);
      // Index entries follow updates and deletes.
      await things.put({ id: 'a', n: 5, tag: 'y' });
      await things.delete('c');
      expect((await things.query({ index: 'tag', eq: 'x' })).map((r) => r.id)).toStrictEqual([]);
      expect((await things.query({ index: 'tag', eq: 'y' })).map((r) => r.id)).toStrictEqual(['a', 'b']);
      await expect(things.query({ index: 'list' as 'tag' })).rejects.toMatchObject({ code: 'BAD_RECORD' });
    });

    it('refuses records it cannot store', async () => {
      const things = (await make()).collection(THINGS);
      await expect(things.put({ id: '', n: 1 })).rejects.toMatchObject({ code: 'BAD_RECORD' });
      await expect(things.put({ n: 1 } as Thing)).rejects.toMatchObject({ code: 'BAD_RECORD' });
      await expect(things.put({ id: 'x', n: 1n } as unknown as Thing)).rejects.toMatchObject({ code: 'BAD_RECORD' });
      await expect(things.put(null as unknown as Thing)).rejects.toMatchObject({ code: 'BAD_RECORD' });
      await expect(things.put({ id: 'x', n: 1, tag: 'x'.repeat(1024 * 1024) })).rejects.toMatchObject({ code: 'BAD_RECORD' });
      await expect(things.get(5 as unknown as string)).rejects.toBeInstanceOf(StoreError);
      // A prototype key as an id is just a string.
      await things.put({ id: '__proto__', n: 1 });
      expect(await things.get('__proto__')).toStrictEqual({ id: '__proto__', n: 1 });
    });

    it('one collection per name; a conflicting definition throws; closed stores refuse', async () => {
      const store = await make();
      expect(store.collection(THINGS)).toBe(store.collection({ ...THINGS }));
      expect(() => store.collection(defineCollection<Thing>({ name: 'things', key: 'id' }))).toThrow(/already defined/);
      expect(() => defineCollection<Thing>({ name: 'Bad-Name', key: 'id' })).toThrow();
      await store.close();
      await store.close();
      await expect(store.collection(THINGS).get('a')).rejects.toMatchObject({ code: 'CLOSED' });
    });
  });
}

