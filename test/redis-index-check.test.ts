/**
 * Issue 37: the index check after a rolling upgrade. A start that finds a collection stored
 * without one of its indexes builds it; an instance still on the version before goes on
 * deleting, updating and inserting records without that index. `check-indexes` finds what it
 * left out of step (entries whose record is gone, entries with an old value, records without
 * an entry) and `--repair` fixes them while writers of the new version run, rewriting no
 * record. One redis-server; one slot and 16 shards (the Cluster layout).
 */
import { expect, it } from 'vitest';
import { checkIndexesCommand } from '../src/state/check-indexes-cli.js';
import { defineCollection, type IndexCheck } from '../src/state/index.js';
import type { RedisStore } from '../src/state/redis/index.js';
import type { ScriptedRedis } from '../src/state/redis/scripts.js';
import { testConfig } from './harness.js';
import { describeRedis } from './redis.js';
import { useLayoutStores } from './redis-layout-stores.js';

interface Day {
  id: string;
  code: string;
  day: string;
  visits?: number;
}
/** As the version before defined them (no `day` index), and as this one does. */
const DAYS_V1 = defineCollection<Day>({ name: 'days', key: 'id', indexes: ['code'], counters: true });
const DAYS = defineCollection<Day>({ name: 'days', key: 'id', indexes: ['code', 'day'], counters: true });
const PLAIN_V1 = defineCollection<Day>({ name: 'pdays', key: 'id', indexes: ['code'] });
const PLAIN = defineCollection<Day>({ name: 'pdays', key: 'id', indexes: ['code', 'day'] });

const N = 600;
const id = (i: number) => `d${String(i).padStart(5, '0')}`;
const rec = (i: number, day = `2026-11-${String((i % 7) + 1).padStart(2, '0')}`): Day => ({ id: id(i), code: `c${i % 13}`, day });
/** What the old instance does after the rebuild: deletes 0, 5, 10 …; moves 1, 11, 21 … to another day; inserts N … N+39. */
const DELETED = Array.from({ length: N / 5 }, (_, j) => 5 * j);
const MOVED = Array.from({ length: N / 10 }, (_, j) => 10 * j + 1);
const INSERTED = Array.from({ length: 40 }, (_, j) => N + j);

const byIndex = (checks: IndexCheck[]) => Object.fromEntries(checks.map((c) => [`${c.collection}.${c.index}`, c]));

describeRedis('check-indexes after a rolling upgrade that adds an index (issue 37)', () => {
  const { open, prefix: freshPrefix, url } = useLayoutStores();

  /** Records written by the old version, the index built by the new one, then the old one's writes. */
  async function upgraded(prefix: string, shards: number): Promise<RedisStore> {
    const old = await open(prefix, shards);
    const [counted, plain] = [old.collection(DAYS_V1), old.collection(PLAIN_V1)];
    for (let i = 0; i < N; i++) {
      await counted.add(id(i), { visits: 1 }, { init: rec(i) });
      await plain.put({ ...rec(i), visits: 1 });
    }
    const store = await open(prefix, shards);
    await store.preload([DAYS, PLAIN]);
    for (const i of DELETED) await Promise.all([counted.delete(id(i)), plain.delete(id(i))]);
    for (const i of MOVED) {
      await counted.update(id(i), (d) => d && { ...d, day: '2026-12-31' });
      await plain.update(id(i), (d) => d && { ...d, day: '2026-12-31' });
    }
    for (const i of INSERTED) {
      await counted.add(id(i), { visits: 1 }, { init: rec(i) });
      await plain.put({ ...rec(i), visits: 1 });
    }
    return store;
  }

  /** What the records say: ids per day. */
  const truth = async (store: RedisStore, def: typeof DAYS) => {
    const all = await store.collection(def).query();
    const days = new Map<string, string[]>();
    for (const d of all) days.set(d.day, [...(days.get(d.day) ?? []), d.id]);
    return { all, days };
  };

  for (const shards of [1, 16]) {
    it(`finds what the old version left out of step, and a repair under live writers fixes it without losing a write (${shards === 1 ? 'one Redis' : '16 shards'})`, async () => {
      const store = await upgraded(freshPrefix(), shards);
      const remaining = N - DELETED.length + INSERTED.length;

      // Before: a count through the new index reads the old version's deletes and misses its inserts.
      const day3 = (await truth(store, PLAIN)).days.get('2026-11-03')!;
      const plainCount = await store.collection(PLAIN).count({ index: 'day', eq: '2026-11-03' });
      expect(plainCount).not.toBe(day3.length);

      const found = byIndex(await store.checkIndexes([DAYS, PLAIN], { repair: false }));
      for (const name of ['days.day', 'pdays.day']) {
        // Entries: one per record the rebuild indexed, moved records' entries included; records: what is left.
        expect(found[name]).toStrictEqual({ collection: name.split('.')[0], index: 'day', built: true, entries: N, records: remaining, stale: DELETED.length, wrong: MOVED.length, missing: INSERTED.length, repaired: 0 });
      }
      // The old version kept its own index (`code`) in step.
      for (const name of ['days.code', 'pdays.code']) expect(found[name]).toMatchObject({ entries: remaining, records: remaining, stale: 0, wrong: 0, missing: 0 });
      // A check changes nothing.
      expect(await store.collection(PLAIN).count({ index: 'day', eq: '2026-11-03' })).toBe(plainCount);

      // Repair while writers of the new version count, move, delete and insert.
      const counted = store.collection(DAYS);
      const plain = store.collection(PLAIN);
      let repairing = true;
      let adds = 0;
      const gone = new Set<string>();
      const writer = async (w: number) => {
        for (let k = 0; repairing || k < 10; k++) {
          const i = (w * 7919 + k * 104_729) % (N + INSERTED.length);
          if (DELETED.includes(i)) continue;
          if (k % 17 === 5) {
            await Promise.all([counted.delete(id(i)), plain.delete(id(i))]);
            gone.add(id(i));
          } else if (k % 5 === 0) {
            await plain.update(id(i), (d) => d && { ...d, day: `2026-10-${String((k % 28) + 1).padStart(2, '0')}` });
          } else if (!gone.has(id(i))) {
            await counted.add(id(i), { visits: 1 }, { init: rec(i) });
            adds++;
          }
        }
      };
      const visitsBefore = (await counted.query()).reduce((s, d) => s + (d.visits ?? 0), 0);
      const repair = store.checkIndexes([DAYS, PLAIN], { repair: true }).finally(() => (repairing = false));
      const [repaired] = await Promise.all([repair, ...Array.from({ length: 6 }, (_, w) => writer(w))]);
      expect(adds).toBeGreaterThan(0);
      const r = byIndex(repaired);
      for (const name of ['days.day', 'pdays.day']) {
        // Each finding is fixed once, and what a writer fixed meanwhile is not counted.
        expect(r[name]!.repaired).toBe(r[name]!.stale + r[name]!.wrong + r[name]!.missing);
        expect(r[name]!.stale + r[name]!.wrong + r[name]!.missing).toBeGreaterThan(0);
      }

      // After: every index agrees with the records, count and query alike; no add was lost.
      for (const def of [DAYS, PLAIN]) {
        const { all, days } = await truth(store, def);
        for (const [day, ids] of days) {
          expect(await store.collection(def).count({ index: 'day', eq: day })).toBe(ids.length);
          expect((await store.collection(def).query({ index: 'day', eq: day })).map((d) => d.id)).toStrictEqual(ids);
        }
        expect(await store.collection(def).count({ index: 'day' })).toBe(all.length);
        expect(await store.collection(def).count({ index: 'code' })).toBe(all.length);
      }
      // Visits of deleted records went with them; every other add is there.
      const visitsAfter = (await counted.query()).reduce((s, d) => s + (d.visits ?? 0), 0);
      expect(visitsAfter).toBeGreaterThan(visitsBefore);
      const again = await store.checkIndexes([DAYS, PLAIN], { repair: false });
      for (const c of again) expect({ name: `${c.collection}.${c.index}`, off: c.stale + c.wrong + c.missing }).toStrictEqual({ name: `${c.collection}.${c.index}`, off: 0 });
    });
  }

  it('a record deleted between the check reading it and fixing its entry is not indexed again (the script checks its version)', async () => {
    const store = await upgraded(freshPrefix(), 1);
    const plain = store.collection(PLAIN);
    // The first fix of a record without an entry: a writer of the new version deletes that record just before it.
    let raced: string | undefined;
    const racing = (r: ScriptedRedis): ScriptedRedis =>
      new Proxy(r, {
        get: (target, name) => {
          const v: unknown = Reflect.get(target, name);
          if (name !== 'dtbIxFix') return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
          // args: key count, data, zset, hash, repair, counter prefix, then (entry, id, text, new entry) per finding.
          return async (...args: string[]) => {
            if (raced === undefined && args[6] === '') {
              raced = args[7]!;
              expect(await plain.delete(raced)).toBe(true);
            }
            return target.dtbIxFix(...(args as [never, ...string[]]));
          };
        },
      });
    const run = store.run.bind(store);
    store.run = ((what: string, fn: (r: ScriptedRedis) => Promise<unknown>) => run(what, (r) => fn(what === 'check index' ? racing(r) : r))) as typeof store.run;
    const repaired = byIndex(await store.checkIndexes([PLAIN], { repair: true }));
    expect(raced).toBe(id(INSERTED[0]!));
    // The raced record is neither counted as fixed nor back in the index.
    expect(repaired['pdays.day']).toMatchObject({ stale: DELETED.length, wrong: MOVED.length, missing: INSERTED.length - 1, repaired: DELETED.length + MOVED.length + INSERTED.length - 1 });
    const { all, days } = await truth(store, PLAIN);
    expect(all.map((d) => d.id)).not.toContain(raced);
    for (const [day, ids] of days) expect(await plain.count({ index: 'day', eq: day })).toBe(ids.length);
    expect(await plain.count({ index: 'day' })).toBe(all.length);
  });

  it('a repair keeps every count: the records are not rewritten', async () => {
    const store = await upgraded(freshPrefix(), 16);
    const counted = store.collection(DAYS);
    const before = new Map((await counted.query()).map((d) => [d.id, d.visits]));
    // The records counted after the rebuild keep their counts in counter hashes; a rewrite would fold them into the JSON and drop the hash.
    const hashes = () => store.conn.redis.keys(`${store.prefix}{days:*}:cnt:*`);
    const hashesBefore = (await hashes()).sort();
    expect(hashesBefore.length).toBe(INSERTED.length);
    const repaired = byIndex(await store.checkIndexes([DAYS], { repair: true }));
    expect(repaired['days.day']).toMatchObject({ stale: DELETED.length, wrong: MOVED.length, missing: INSERTED.length, repaired: DELETED.length + MOVED.length + INSERTED.length });
    expect(new Map((await counted.query()).map((d) => [d.id, d.visits]))).toStrictEqual(before);
    expect((await hashes()).sort()).toStrictEqual(hashesBefore);
  });

  it('the command: exit 1 and a line per index while something is out of step, 0 after --repair; usage errors are 2', async () => {
    const prefix = freshPrefix();
    await upgraded(prefix, 1);
    const env = { REDIS_URL: url(), REDIS_PREFIX: prefix, LOG_LEVEL: 'silent' };
    const config = testConfig(env);
    let out = '';
    const io = { out: (s: string) => void (out += s), err: (s: string) => void (out += s) };
    expect(await checkIndexesCommand([], config, [DAYS, PLAIN], io)).toBe(1);
    expect(out).toContain(`days.day: ${N} entries, ${N - DELETED.length + INSERTED.length} records: ${DELETED.length} stale, ${MOVED.length} wrong, ${INSERTED.length} missing (run with --repair)`);
    expect(out).toContain('pdays.code: ');
    out = '';
    expect(await checkIndexesCommand(['--repair'], config, [DAYS, PLAIN], io)).toBe(0);
    expect(out).toContain(`(repaired ${DELETED.length + MOVED.length + INSERTED.length})`);
    out = '';
    expect(await checkIndexesCommand([], config, [DAYS, PLAIN], io)).toBe(0);
    expect(out).not.toMatch(/[1-9]\d* (stale|wrong|missing)/);
    expect(await checkIndexesCommand(['--fix'], config, [DAYS], io)).toBe(2);
    // An index no server of this version has built yet: said, and exit 1.
    const newer = defineCollection<Day>({ name: 'pdays', key: 'id', indexes: ['code', 'day', 'visits'] });
    out = '';
    expect(await checkIndexesCommand([], config, [newer], io)).toBe(1);
    expect(out).toContain('pdays.visits: not built yet');
    // The file store keeps no index between starts.
    out = '';
    expect(await checkIndexesCommand([], testConfig({ LOG_LEVEL: 'silent' }), [DAYS], io)).toBe(0);
    expect(out).toContain('nothing stored to check');
  });
});
