/**
 * The contract of Collection.add on every backend, with and without the native counter layout
 * (`counters: true`: on Redis a hash per record with HINCRBY).
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../test/harness.js';
import { describeRedis, startRedis, type TestRedis } from '../../test/redis.js';
import { createLogger } from '../log.js';
import { MAX_ADD_ITEMS } from './counters.js';
import { createMemoryStore, defineCollection, openFileStore, type AddItem, type CollectionDef, type Store } from './index.js';
import { connectRedis, openRedisStore, RedisStore } from './redis/index.js';
import { shardOf } from './redis/shards.js';

const log = createLogger('silent');

/** The counter fields (`h:13`, `ref:…`) are read through `fields`. */
interface Day {
  id: string;
  code: string;
  visits?: number;
  note?: string;
  hours?: string;
  last?: number;
  first?: number;
}
const fields = (d: Day) => Object.entries(d) as [string, unknown][];
const plain = defineCollection<Day>({ name: 'days', key: 'id', indexes: ['code'], segmentSize: 3 });
const native = defineCollection<Day>({ name: 'cdays', key: 'id', indexes: ['code'], segmentSize: 3, counters: true });
/** Counters without indexes: what Redis writes with one script per shard in addMany. */
const flat = defineCollection<Day>({ name: 'fdays', key: 'id', segmentSize: 3, counters: true });
const init = (id: string, code = 'c'): Day => ({ id, code });
const CAPS = [{ prefix: 'ref:', max: 3, overflow: 'ref:other' }];

const open: Store[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});
let redisServer: Promise<TestRedis> | undefined;
afterAll(async () => {
  if (redisServer) await (await redisServer).stop();
});
async function redis(prefix?: string, shards?: number): Promise<Store> {
  const server = await (redisServer ??= startRedis());
  const store = shards ? new RedisStore(await connectRedis({ url: server.url, log, quiet: true }), prefix ?? server.prefix(), shards) : await openRedisStore({ url: server.url, prefix: prefix ?? server.prefix(), log, quiet: true });
  open.push(store);
  return store;
}
async function file(dir = tempDir()): Promise<Store> {
  const store = await openFileStore(dir, { log });
  open.push(store);
  return store;
}

for (const kind of ['memory', 'file', 'redis', 'redis-sharded'] as const) {
  (kind.startsWith('redis') ? describeRedis : describe)(`Collection.add (${kind})`, () => {
    const make = async () => (kind === 'memory' ? createMemoryStore() : kind === 'file' ? file() : redis(undefined, kind === 'redis-sharded' ? 16 : undefined));
    for (const def of [plain, native]) {
      const layout = def.counters ? 'native layout' : 'JSON layout';

      it(`creates from init, adds, new fields start at 0; reads, queries and scans see plain numbers (${layout})`, async () => {
        const store = await make();
        const days = store.collection(def);
        await days.add('a|1', { visits: 2, 'h:13': 1 }, { init: init('a|1', 'a') });
        await days.add('a|1', { visits: 3, 'h:14': 4 }, { init: init('a|1', 'a'), durability: 'lazy' });
        await days.add('b|1', { visits: 1 }, { init: init('b|1', 'b') });
        expect(await days.get('a|1')).toStrictEqual({ id: 'a|1', code: 'a', visits: 5, 'h:13': 1, 'h:14': 4 });
        expect(await days.query({ index: 'code', eq: 'a' })).toStrictEqual([{ id: 'a|1', code: 'a', visits: 5, 'h:13': 1, 'h:14': 4 }]);
        expect(await days.count({ index: 'code', eq: 'b' })).toBe(1);
        const scanned = await store.scan(def.name, { limit: 10 });
        expect(scanned.map((s) => [s.id, JSON.parse(s.json) as unknown])).toStrictEqual([
          ['a|1', { id: 'a|1', code: 'a', visits: 5, 'h:13': 1, 'h:14': 4 }],
          ['b|1', { id: 'b|1', code: 'b', visits: 1 }],
        ]);
      });

      it(`caps distinct fields per prefix: further new fields go to the overflow, totals exact (${layout})`, async () => {
        const days = (await make()).collection(def);
        for (let i = 0; i < 10; i++) await days.add('x', { [`ref:h${i}`]: 1, visits: 1 }, { init: init('x'), caps: CAPS });
        await days.add('x', { 'ref:h0': 5, 'ref:other': 1 }, { init: init('x'), caps: CAPS });
        expect(await days.get('x')).toStrictEqual({ id: 'x', code: 'c', visits: 10, 'ref:h0': 6, 'ref:h1': 1, 'ref:h2': 1, 'ref:other': 8 });
      });

      it(`a first add with more fields under a cap than it allows: the cap holds in that add too (${layout})`, async () => {
        const days = (await make()).collection(def);
        await days.add('n', { 'ref:a': 1, 'ref:b': 2, 'ref:c': 3, 'ref:d': 4, 'ref:e': 5, visits: 1 }, { init: init('n'), caps: CAPS });
        const rec = (await days.get('n'))!;
        expect(fields(rec).filter(([k]) => k.startsWith('ref:') && k !== 'ref:other')).toHaveLength(3);
        expect(fields(rec).filter(([k]) => k.startsWith('ref:')).reduce((n, [, v]) => n + (v as number), 0)).toBe(15);
        expect(rec['ref:other' as keyof Day]).toBe(9);
      });

      it(`getMany reads records with their counts, as get does (${layout})`, async () => {
        const days = (await make()).collection(def);
        await days.add('g1', { visits: 2, 'h:1': 1 }, { init: init('g1'), max: { last: 5 } });
        await days.addMany([{ id: 'g2', deltas: { visits: 1 }, init: init('g2') }, { id: 'g1', deltas: { visits: 1 }, init: init('g1') }]);
        expect(await days.getMany(['g2', 'none', 'g1'])).toStrictEqual([{ id: 'g2', code: 'c', visits: 1 }, undefined, { id: 'g1', code: 'c', visits: 3, 'h:1': 1, last: 5 }]);
      });

      it(`a cap filled exactly across adds and batches admits its last field, the next goes to the overflow (${layout})`, async () => {
        // Redis skips the field checks while the hash's fields and the new ones stay within the
        // smallest cap: the boundary, with a second cap and a maximum in the hash.
        const two = [...CAPS, { prefix: 'br:', max: 5, overflow: 'br:other' }];
        const days = (await make()).collection(def);
        await days.add('b', { 'ref:a': 1 }, { init: init('b'), caps: two });
        await days.addMany([{ id: 'b', deltas: { 'ref:b': 1 }, init: init('b') }], { caps: two });
        await days.add('b', { 'ref:c': 1 }, { init: init('b'), caps: two, max: { last: 7 } });
        await days.addMany([{ id: 'b', deltas: { 'ref:d': 2, 'br:x': 1 }, init: init('b') }], { caps: two });
        await days.addMany([{ id: 'f', deltas: { 'ref:a': 1, 'ref:b': 1, 'ref:c': 1 }, init: init('f') }], { caps: two });
        await days.add('f', { 'ref:d': 1, 'ref:a': 1 }, { init: init('f'), caps: two });
        expect(await days.get('b')).toStrictEqual({ id: 'b', code: 'c', 'ref:a': 1, 'ref:b': 1, 'ref:c': 1, 'ref:other': 2, 'br:x': 1, last: 7 });
        expect(await days.get('f')).toStrictEqual({ id: 'f', code: 'c', 'ref:a': 2, 'ref:b': 1, 'ref:c': 1, 'ref:other': 1 });
        // One field past the cap, in a first add and in a later one: the fourth goes to the overflow.
        await days.addMany([{ id: 'g', deltas: { 'ref:a': 1, 'ref:b': 1, 'ref:c': 1, 'ref:d': 1 }, init: init('g') }], { caps: two });
        await days.add('h', { 'ref:a': 1, 'ref:b': 1 }, { init: init('h'), caps: two });
        await days.add('h', { 'ref:c': 1, 'ref:d': 1 }, { init: init('h'), caps: two });
        for (const id of ['g', 'h']) expect(await days.get(id)).toStrictEqual({ id, code: 'c', 'ref:a': 1, 'ref:b': 1, 'ref:c': 1, 'ref:other': 1 });
      });

      it(`update, delete and put after adds: counts carried, removed, replaced (${layout})`, async () => {
        const days = (await make()).collection(def);
        await days.add('x', { visits: 4 }, { init: init('x') });
        expect(await days.update('x', (cur) => ({ ...cur!, note: 'kept' }))).toStrictEqual({ id: 'x', code: 'c', visits: 4, note: 'kept' });
        await days.add('x', { visits: 1 }, { init: init('x') });
        expect(await days.get('x')).toStrictEqual({ id: 'x', code: 'c', visits: 5, note: 'kept' });
        expect(await days.compareAndSet('x', { id: 'x', code: 'c', visits: 5, note: 'kept' }, { id: 'x', code: 'd', visits: 7 })).toBe(true);
        expect(await days.query({ index: 'code', eq: 'd' })).toStrictEqual([{ id: 'x', code: 'd', visits: 7 }]);
        await days.put({ id: 'x', code: 'c', visits: 100 });
        await days.add('x', { visits: 1 }, { init: init('x') });
        expect(await days.get('x')).toStrictEqual({ id: 'x', code: 'c', visits: 101 });
        expect(await days.delete('x')).toBe(true);
        expect(await days.get('x')).toBe(undefined);
        await days.add('x', { visits: 1 }, { init: init('x') });
        expect(await days.get('x')).toStrictEqual({ id: 'x', code: 'c', visits: 1 });
      });

      it(`concurrent adds lose nothing (${layout})`, async () => {
        const days = (await make()).collection(def);
        await Promise.all(Array.from({ length: 100 }, (_, i) => days.add('x', { visits: 1, [`h:${i % 24}`]: 2 }, { init: init('x'), durability: i % 2 ? 'lazy' : 'durable' })));
        const rec = (await days.get('x'))!;
        expect(rec.visits).toBe(100);
        expect(fields(rec).filter(([k]) => k.startsWith('h:')).reduce((n, [, v]) => n + (v as number), 0)).toBe(200);
      });

      it(`maxima keep the largest value given, beside the sums, in reads, queries and after a put (${layout})`, async () => {
        const days = (await make()).collection(def);
        await days.add('x', { visits: 1 }, { init: init('x'), max: { last: 500 } });
        await days.add('x', { visits: 1 }, { init: init('x'), max: { last: 300 }, durability: 'lazy' });
        expect(await days.get('x')).toStrictEqual({ id: 'x', code: 'c', visits: 2, last: 500 });
        await days.add('x', { visits: 1 }, { init: init('x'), max: { last: 900, first: 7 } });
        expect(await days.query({ index: 'code', eq: 'c' })).toStrictEqual([{ id: 'x', code: 'c', visits: 3, last: 900, first: 7 }]);
        // A put (an import) writes the value into the record; later maxima compare with it.
        await days.put({ id: 'x', code: 'c', visits: 3, last: 1000 });
        await days.add('x', {}, { init: init('x'), max: { last: 950 } });
        expect((await days.get('x'))!.last).toBe(1000);
        await days.add('x', {}, { init: init('x'), max: { last: 1200 } });
        expect((await days.get('x'))!.last).toBe(1200);
        await Promise.all(Array.from({ length: 60 }, (_, i) => days.add('y', { visits: 1 }, { init: init('y'), max: { last: (i * 37) % 61 }, durability: i % 2 ? 'lazy' : 'durable' })));
        expect(await days.get('y')).toStrictEqual({ id: 'y', code: 'c', visits: 60, last: 60 });
      });

      it(`refuses what it cannot count (${layout})`, async () => {
        const days = (await make()).collection(def);
        const bad = async (deltas: Record<string, number>, opts: Partial<Parameters<typeof days.add>[2]> = {}) =>
          expect(days.add('x', deltas, { init: init('x'), ...opts })).rejects.toMatchObject({ code: 'BAD_RECORD' });
        await bad({ visits: 1.5 });
        await bad({ visits: Number.NaN });
        await bad({ code: 1 });
        await bad({ id: 1 });
        await bad({ ['__proto__']: 1 } as Record<string, number>);
        await bad({ 'a\u0000b': 1 });
        await bad({ ['x'.repeat(301)]: 1 });
        await bad({ visits: 1 }, { init: init('y') });
        await bad({ 'ref:a': 1 }, { caps: [{ prefix: 'ref:', max: 1, overflow: 'other' }] });
        await bad({ visits: 1 }, { max: { visits: 5 } });
        await bad({}, { max: { last: 1.5 } });
        await bad({}, { max: { code: 1 } });
        await bad({}, { max: { 'a\u0001b': 1 } });
        expect(await days.get('x')).toBe(undefined);
      });
    }

    it('a record written before as plain JSON: maxima compare with its field (native layout)', async () => {
      const days = (await make()).collection(native);
      await days.put({ id: 'x', code: 'c', visits: 10, last: 50 });
      await days.add('x', { visits: 1 }, { init: init('x'), max: { last: 40 } });
      expect(await days.get('x')).toStrictEqual({ id: 'x', code: 'c', visits: 11, last: 50 });
      await days.add('x', {}, { init: init('x'), max: { last: 60 } });
      expect(await days.get('x')).toStrictEqual({ id: 'x', code: 'c', visits: 11, last: 60 });
    });

    it('a record written before as plain JSON: adds sum onto its numeric fields (native layout)', async () => {
      const days = (await make()).collection(native);
      await days.put({ id: 'x', code: 'c', visits: 10, hours: '[legacy]' });
      await days.add('x', { visits: 2, 'h:1': 1 }, { init: init('x') });
      expect(await days.get('x')).toStrictEqual({ id: 'x', code: 'c', visits: 12, hours: '[legacy]', 'h:1': 1 });
    });
  });
}

/** A seeded mix of adds over a few records: caps, maxima, repeated ids within a batch. */
function mixedItems(seed: number, n: number): AddItem<Day>[] {
  let x = seed;
  const next = (m: number) => ((x = (x * 1103515245 + 12345) % 2147483648), Math.floor(x / 65536) % m);
  return Array.from({ length: n }, () => {
    const id = `x${next(8)}`;
    const deltas: Record<string, number> = { visits: 1 + next(3) };
    deltas[`h:${next(24)}`] = 1;
    if (next(2)) deltas[`ref:r${next(6)}`] = 1 + next(4);
    return { id, deltas, init: init(id, `c${id}`), ...(next(3) === 0 ? { max: { last: next(1000) } } : {}) };
  });
}

/** The twin of a collection definition under another name (the reference written by plain adds). */
const twin = (def: CollectionDef<Day>): CollectionDef<Day> => ({ ...def, name: `${def.name}_ref` });

for (const kind of ['memory', 'file', 'redis', 'redis-sharded'] as const) {
  (kind.startsWith('redis') ? describeRedis : describe)(`Collection.addMany (${kind})`, () => {
    const make = async () => (kind === 'memory' ? createMemoryStore() : kind === 'file' ? file() : redis(undefined, kind === 'redis-sharded' ? 16 : undefined));
    for (const def of [plain, native, flat]) {
      const layout = !def.counters ? 'JSON layout' : def.indexes ? 'native layout' : 'native layout, no index';

      it(`applies its items as the same adds one by one would: sums, caps, maxima, repeated ids (${layout})`, async () => {
        const store = await make();
        const batched = store.collection(def);
        const reference = store.collection(twin(def));
        for (let b = 0; b < 6; b++) {
          const items = mixedItems(b + 1, 50);
          const out = await batched.addMany(items, { caps: CAPS, durability: b % 2 ? 'lazy' : 'durable' });
          expect(out.map((r) => r.status)).toStrictEqual(items.map(() => 'fulfilled'));
          for (const it of items) await reference.add(it.id, it.deltas, { init: it.init, caps: CAPS, ...(it.max ? { max: it.max } : {}) });
        }
        const got = await batched.query();
        expect(got).toHaveLength(8);
        expect(got).toStrictEqual(await reference.query());
        expect(got.every((r) => fields(r).filter(([k]) => k.startsWith('ref:') && k !== 'ref:other').length <= CAPS[0]!.max)).toBe(true);
      });

      it(`items whose init is only the id, sharing deltas objects, ids that JSON escapes among them: as adds one by one (${layout})`, async () => {
        const store = await make();
        const batched = store.collection(def);
        const reference = store.collection(twin(def));
        // Plain ids (what Redis packs into one argument) beside ids JSON writes otherwise, and a field-like id.
        const ids = ['p1', 'p2', 'quo"te', 'back\\slash', 'ctl\u0001x', 'nul\u0000x', 'lone\ud800', 'été 😀', '2026-11-28|p1', 'x\u2028y'];
        const shared: Record<string, number>[] = [{ visits: 1, 'h:3': 1, 'ref:a': 1 }, { visits: 2, 'ref:b': 1, 'ref:c': 1 }, {}, { 'ref:d': 1, 'ref:e': 2 }];
        const only = (id: string) => ({ id }) as Day;
        for (let b = 0; b < 5; b++) {
          const items: AddItem<Day>[] = ids.flatMap((id, i) => [
            { id, deltas: shared[(i + b) % shared.length]!, init: only(id), ...(i % 2 ? { max: { last: b * 10 + i } } : {}) },
            { id: ids[(i + b) % ids.length]!, deltas: shared[i % 2]!, init: only(ids[(i + b) % ids.length]!) },
          ]);
          // One with deltas of its own, one whose init holds more than the id.
          items.push({ id: 'p1', deltas: { visits: 5, [`ref:z${b}`]: 1 }, init: only('p1'), max: { first: b } }, { id: `full${b % 2}`, deltas: shared[0]!, init: init(`full${b % 2}`) });
          const out = await batched.addMany(items, { caps: CAPS, durability: b % 2 ? 'lazy' : 'durable' });
          expect(out.map((r) => r.status)).toStrictEqual(items.map(() => 'fulfilled'));
          for (const it of items) await reference.add(it.id, it.deltas, { init: it.init, caps: CAPS, ...(it.max ? { max: it.max } : {}) });
        }
        const got = await batched.query();
        expect(got).toHaveLength(ids.length + 2);
        expect(got).toStrictEqual(await reference.query());
        expect(await batched.get('quo"te')).toStrictEqual(await reference.get('quo"te'));
        expect((await batched.get('p2'))?.visits).toBeGreaterThan(0);
        expect(got.every((r) => fields(r).filter(([k]) => k.startsWith('ref:') && k !== 'ref:other').length <= CAPS[0]!.max)).toBe(true);
      });

      it(`a first add keeps the largest safe integers and negative deltas exact, sums and maxima (${layout})`, async () => {
        const days = (await make()).collection(def);
        const big = Number.MAX_SAFE_INTEGER;
        await days.add('one', { visits: big, 'h:1': -big }, { init: init('one'), max: { last: big - 1 } });
        await days.addMany([
          { id: 'many', deltas: { visits: big - 2, 'h:2': -5 }, init: init('many'), max: { last: 2 ** 52 } },
          { id: 'many', deltas: { visits: 2 }, init: init('many') },
        ]);
        expect(await days.get('one')).toStrictEqual({ id: 'one', code: 'c', visits: big, 'h:1': -big, last: big - 1 });
        expect(await days.get('many')).toStrictEqual({ id: 'many', code: 'c', visits: big, 'h:2': -5, last: 2 ** 52 });
      });

      for (const durability of ['durable', 'lazy'] as const) it(`a refused item leaves the others written; a bad batch is refused whole (${layout}, ${durability})`, async () => {
        const days = (await make()).collection(def);
        const out = await days.addMany([
          { id: 'a', deltas: { visits: 1 }, init: init('a') },
          { id: 'b', deltas: { visits: 1.5 }, init: init('b') },
          { id: 'c', deltas: { visits: 1 }, init: init('not-c') },
          { id: 'd', deltas: { code: 1 }, init: init('d') },
          { id: 'e', deltas: { visits: 2 }, init: init('e'), max: { last: 4 } },
          { id: 7 as never, deltas: { visits: 1 }, init: init('7') },
        ], { durability });
        expect(out.map((r) => (r.status === 'fulfilled' ? 'ok' : (r.reason as { code: string }).code))).toStrictEqual(['ok', 'BAD_RECORD', 'BAD_RECORD', 'BAD_RECORD', 'ok', 'BAD_RECORD']);
        expect(await days.query()).toStrictEqual([
          { id: 'a', code: 'c', visits: 1 },
          { id: 'e', code: 'c', visits: 2, last: 4 },
        ]);
        const one = { id: 'f', deltas: { visits: 1 }, init: init('f') };
        await expect(days.addMany('f' as never)).rejects.toMatchObject({ code: 'BAD_RECORD' });
        await expect(days.addMany([one, null as never])).rejects.toMatchObject({ code: 'BAD_RECORD' });
        await expect(days.addMany(Array.from({ length: MAX_ADD_ITEMS + 1 }, () => one))).rejects.toMatchObject({ code: 'BAD_RECORD' });
        await expect(days.addMany([one], { caps: [{ prefix: 'ref:', max: 1, overflow: 'other' }] })).rejects.toMatchObject({ code: 'BAD_RECORD' });
        expect(await days.get('f')).toBe(undefined);
        expect(await days.addMany([])).toStrictEqual([]);
      });
    }
  });
}

for (const kind of ['memory', 'file', 'redis', 'redis-sharded'] as const) {
  (kind.startsWith('redis') ? describeRedis : describe)(`Collection.addMany with a token (${kind})`, () => {
    const make = async () => (kind === 'memory' ? createMemoryStore() : kind === 'file' ? file() : redis(undefined, kind === 'redis-sharded' ? 16 : undefined));

    it('a batch sent again under the token it was applied with is not applied again; another token is', async () => {
      const store = await make();
      const days = store.collection(flat);
      const batch = Array.from({ length: 40 }, (_, i) => ({ id: `t${i % 10}`, deltas: { visits: 1, [`ref:r${i % 5}`]: 1 }, init: init(`t${i % 10}`) }));
      for (const [i, once] of ['batch-1', 'batch-1', 'batch-2', 'batch-1', 'batch-3', 'batch-3'].entries()) {
        const out = await days.addMany(batch, { caps: CAPS, once, durability: i < 3 ? 'durable' : 'lazy' });
        expect(out.every((r) => r.status === 'fulfilled')).toBe(true);
      }
      const got = await days.query();
      expect(got.map((r) => r.visits)).toStrictEqual(Array.from({ length: 10 }, () => 12));
      expect(got.every((r) => fields(r).filter(([k]) => k.startsWith('ref:') && k !== 'ref:other').length <= CAPS[0]!.max)).toBe(true);
    });

    it('refuses a token on a collection with indexes, and a token that is empty or too long', async () => {
      const store = await make();
      const one = [{ id: 'a', deltas: { visits: 1 }, init: init('a') }];
      await expect(store.collection(native).addMany(one, { once: 'x' })).rejects.toMatchObject({ code: 'BAD_RECORD' });
      await expect(store.collection(flat).addMany(one, { once: '' })).rejects.toMatchObject({ code: 'BAD_RECORD' });
      await expect(store.collection(flat).addMany(one, { once: 'x'.repeat(201) })).rejects.toMatchObject({ code: 'BAD_RECORD' });
      expect(await store.collection(native).get('a')).toBe(undefined);
      expect(await store.collection(flat).get('a')).toBe(undefined);
    });
  });
}

describeRedis('Collection.addMany across a Redis that stops answering (SIGSTOP)', () => {
  it('a batch whose call timed out ran once Redis answered again: sent again under its token, it is not counted twice', async () => {
    const own = await startRedis();
    try {
      const store = await openRedisStore({ url: own.url, prefix: own.prefix(), log, quiet: true, commandTimeoutMs: 300 });
      open.push(store);
      const days = store.collection(flat);
      const batch = [
        { id: 'x', deltas: { visits: 5 }, init: init('x') },
        { id: 'y', deltas: { visits: 7 }, init: init('y') },
      ];
      await days.addMany([{ id: 'x', deltas: { visits: 1 }, init: init('x') }]);
      own.signal('SIGSTOP');
      let refused: PromiseSettledResult<void>[];
      try {
        refused = await days.addMany(batch, { once: 'stalled' });
      } finally {
        own.signal('SIGCONT');
      }
      expect(refused.map((r) => r.status)).toStrictEqual(['rejected', 'rejected']);
      // The stalled call ran when Redis went on; the caller, told it failed, sends it again.
      await expect.poll(async () => (await days.get('y'))?.visits).toBe(7);
      expect((await days.addMany(batch, { once: 'stalled' })).map((r) => r.status)).toStrictEqual(['fulfilled', 'fulfilled']);
      expect((await days.query()).map((r) => [r.id, r.visits])).toStrictEqual([
        ['x', 6],
        ['y', 7],
      ]);
    } finally {
      own.signal('SIGCONT');
      await own.stop();
    }
  });
});

/**
 * Seeded adds with two caps, fields crossing them (and their overflows named outright),
 * maxima and repeated ids: the Redis scripts' shortcuts (no field checks while a record stays
 * within the smallest cap) against the memory store, which applies every rule in TypeScript.
 */
function cappedItems(seed: number, n: number): AddItem<Day>[] {
  let x = seed;
  const next = (m: number) => ((x = (x * 1103515245 + 12345) % 2147483648), Math.floor(x / 65536) % m);
  return Array.from({ length: n }, () => {
    const id = `y${next(40)}`;
    // Half the items carry capped fields only: a record's field count then meets a cap's max exactly.
    const deltas: Record<string, number> = next(2) ? { visits: 1 + next(3), [`h:${next(24)}`]: 1 } : {};
    for (let i = next(7); i > 0; i--) deltas[next(12) === 0 ? 'ref:other' : `ref:r${next(9)}`] = 1 + next(3);
    for (let i = next(4); i > 0; i--) deltas[`br:b${next(7)}`] = 1;
    if (Object.keys(deltas).length === 0) deltas['ref:r0'] = 1;
    return { id, deltas, init: init(id, `c${id}`), ...(next(3) === 0 ? { max: { last: next(1000) } } : {}) };
  });
}
const TWO_CAPS = [...CAPS, { prefix: 'br:', max: 5, overflow: 'br:other' }];

for (const kind of ['redis', 'redis-sharded'] as const) {
  describeRedis(`Collection.add and addMany (${kind}) give what the memory store gives`, () => {
    for (const def of [native, flat]) {
      it(`seeded batches and single adds with two caps crossed, maxima, repeated ids (${def.indexes ? 'native layout' : 'native layout, no index'})`, async () => {
        const stores = [await redis(undefined, kind === 'redis-sharded' ? 16 : undefined), createMemoryStore()];
        open.push(stores[1]!);
        for (let b = 0; b < 8; b++) {
          const items = cappedItems(b + 7, 40);
          for (const store of stores) {
            const c = store.collection(def);
            if (b % 2 === 0) expect((await c.addMany(items, { caps: TWO_CAPS, durability: b % 4 ? 'lazy' : 'durable' })).map((r) => r.status)).toStrictEqual(items.map(() => 'fulfilled'));
            else for (const it of items) await c.add(it.id, it.deltas, { init: it.init, caps: TWO_CAPS, ...(it.max ? { max: it.max } : {}) });
          }
        }
        const [got, want] = await Promise.all(stores.map((s) => s.collection(def).query()));
        expect(got).toHaveLength(40);
        expect(got).toStrictEqual(want);
        // The caps held and were crossed: some record has its overflow fields.
        expect(want!.some((r) => fields(r).some(([k]) => k === 'ref:other'))).toBe(true);
        expect(want!.every((r) => fields(r).filter(([k]) => k.startsWith('br:') && k !== 'br:other').length <= 5)).toBe(true);
      });
    }
  });
}

describeRedis('Collection.addMany on Redis: one script per shard', () => {
  /** EVALSHA and EVAL calls redis-server has run so far. */
  async function scriptCalls(store: Store): Promise<number> {
    const info = await (store as RedisStore).conn.redis.info('commandstats');
    return [...info.matchAll(/cmdstat_eval(?:sha)?:calls=(\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
  }
  for (const shards of [1, 16]) {
    it(`${shards === 1 ? 'one slot' : `${shards} shards`}: a batch of 200 records costs ${shards === 1 ? 'one script call' : 'a call per shard holding some'}`, async () => {
      const store = await redis(undefined, shards);
      const days = store.collection(flat);
      await days.addMany([{ id: 'warm', deltas: { visits: 1 }, init: init('warm') }]);
      const items = Array.from({ length: 200 }, (_, i) => ({ id: `r${i}`, deltas: { visits: 1, [`ref:r${i % 5}`]: 1 }, init: init(`r${i}`) }));
      const before = await scriptCalls(store);
      await days.addMany(items, { caps: CAPS });
      const calls = (await scriptCalls(store)) - before;
      expect(calls).toBe(shards === 1 ? 1 : new Set(items.map((it) => shardOf(it.id, shards))).size);
      expect(await days.count()).toBe(201);
    });
  }
});

describeRedis('Collection.add across processes (Redis, native layout)', () => {
  it('three instances adding in parallel sum exactly, and the cap holds across them', async () => {
    const server = await (redisServer ??= startRedis());
    const prefix = server.prefix();
    const stores = [await redis(prefix), await redis(prefix), await redis(prefix)];
    const colls = stores.map((s) => s.collection(native));
    await Promise.all(
      Array.from({ length: 300 }, (_, i) => colls[i % 3]!.add('x', { visits: 1, [`ref:h${i % 7}`]: 1 }, { init: init('x'), caps: CAPS, durability: 'lazy' })),
    );
    const rec = (await colls[1]!.get('x'))!;
    expect(rec.visits).toBe(300);
    const refs = fields(rec).filter(([k]) => k.startsWith('ref:'));
    expect(refs.filter(([k]) => k !== 'ref:other')).toHaveLength(3);
    expect(refs.reduce((n, [, v]) => n + (v as number), 0)).toBe(300);
  });
});

describeRedis('Collection.addMany across processes (Redis, no index)', () => {
  it('three instances writing batches at once sum exactly, and the cap holds across them', async () => {
    const server = await (redisServer ??= startRedis());
    const prefix = server.prefix();
    const colls = [await redis(prefix, 4), await redis(prefix, 4), await redis(prefix, 4)].map((s) => s.collection(flat));
    await Promise.all(
      Array.from({ length: 30 }, (_, b) =>
        colls[b % 3]!.addMany(
          Array.from({ length: 20 }, (_, i) => ({ id: `x${i % 4}`, deltas: { visits: 1, [`ref:h${(b + i) % 7}`]: 1 }, init: init(`x${i % 4}`) })),
          { caps: CAPS, durability: 'lazy' },
        ),
      ),
    );
    for (const id of ['x0', 'x1', 'x2', 'x3']) {
      const rec = (await colls[1]!.get(id))!;
      expect(rec.visits).toBe(150);
      const refs = fields(rec).filter(([k]) => k.startsWith('ref:'));
      expect(refs.filter(([k]) => k !== 'ref:other')).toHaveLength(3);
      expect(refs.reduce((n, [, v]) => n + (v as number), 0)).toBe(150);
    }
  });
});

describe('Collection.add (file store, restart)', () => {
  it('lazy adds survive a clean restart', async () => {
    const dir = tempDir();
    const a = await file(dir);
    for (let i = 0; i < 50; i++) await a.collection(native).add(`d${i % 5}`, { visits: 1, [`h:${i % 3}`]: 1 }, { init: init(`d${i % 5}`), durability: 'lazy' });
    await a.close();
    const b = await file(dir);
    const recs = await b.collection(native).query({ index: 'code', eq: 'c' });
    expect(recs.map((r) => r.visits)).toStrictEqual([10, 10, 10, 10, 10]);
  });

});
