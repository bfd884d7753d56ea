import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/harness.js';
import { createLogger } from '../../log.js';
import { checkpointFile, checkpointStats } from './checkpoint.js';
import { defineCollection, openFileStore, type Store } from '../index.js';
import { SegmentLoadPool } from './segment-load-pool.js';
import { ITEMS, type Item } from '../../../test/store-fixtures.js';

const log = createLogger('silent');
/** The same records, indexed differently. */
const ITEMS_BY_N = defineCollection<Item>({ name: 'items', key: 'id', indexes: ['n'], segmentSize: 1000 });
// Latin-1 and wider characters: the keys of `owner` are stored as UTF-16, those of `n` as Latin-1.
const OWNERS = ['ann', 'björn', 'Ωmega', 'zoë', '😀'];

const open: Store[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});

/** Every collection is large enough for a checkpoint and for the load workers. */
async function openDir(dir: string): Promise<Store> {
  const s = await openFileStore(dir, { log, fsync: false, checkpointBytes: 0, offThreadLoadBytes: 0 });
  open.push(s);
  return s;
}

async function filled(n: number): Promise<{ dir: string; items: Map<string, Item> }> {
  const dir = tempDir();
  const items = new Map<string, Item>();
  const store = await openDir(dir);
  store.collection(ITEMS); // defined (with its indexes), as the server and `devtoolbox import` do
  const batch: Item[] = [];
  for (let i = 0; i < n; i++) {
    const it = { id: `item-${(i * 7919) % n}`, owner: OWNERS[i % OWNERS.length]!, n: i % 17 };
    batch.push(it);
    items.set(it.id, it);
  }
  await store.putMany(ITEMS, batch);
  await store.close();
  return { dir, items };
}

/** What the store answers, compared with what was written: records, counts and index ranges. */
async function expectState(store: Store, items: Map<string, Item>, def = ITEMS): Promise<void> {
  const coll = store.collection(def);
  const all = [...items.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
  expect(await coll.count()).toBe(items.size);
  expect(await coll.query()).toStrictEqual(all);
  for (let n = 0; n < 17; n++) {
    expect((await coll.query({ index: 'n', eq: n })).map((r) => r.id).sort()).toStrictEqual(all.filter((r) => r.n === n).map((r) => r.id));
  }
  expect((await coll.query({ index: 'n', gte: 15, order: 'desc', limit: 5 })).map((r) => r.n)).toStrictEqual(
    all.filter((r) => r.n >= 15).map((r) => r.n).sort((a, b) => b - a).slice(0, 5),
  );
  if (def === ITEMS) {
    for (const owner of OWNERS) expect(await coll.count({ index: 'owner', eq: owner })).toBe(all.filter((r) => r.owner === owner).length);
  }
}

/** Opens `dir` and loads ITEMS; tells whether the load came from the checkpoint. */
async function load(dir: string, def = ITEMS): Promise<{ store: Store; fromCheckpoint: boolean; workers: number }> {
  const used = checkpointStats.used;
  const workers = SegmentLoadPool.started;
  const store = await openDir(dir);
  await store.preload([def]);
  return { store, fromCheckpoint: checkpointStats.used > used, workers: SegmentLoadPool.started - workers };
}

describe('the load checkpoint', () => {
  it('is written at a clean close and read at the next start-up instead of every record, with the same state', async () => {
    const { dir, items } = await filled(3000);
    expect(fs.existsSync(checkpointFile(dir, 'items'))).toBe(true);
    const { store, fromCheckpoint, workers } = await load(dir);
    expect(fromCheckpoint).toBe(true);
    expect(workers).toBe(0); // nothing parsed
    await expectState(store, items);
    // Writes after such a start: the files written are described anew at the next close.
    const coll = store.collection(ITEMS);
    await coll.put({ id: 'item-new', owner: 'Ωmega', n: 3 });
    await coll.put({ id: 'item-5', owner: 'ann', n: 16 });
    await coll.delete('item-7');
    items.set('item-new', { id: 'item-new', owner: 'Ωmega', n: 3 });
    items.set('item-5', { id: 'item-5', owner: 'ann', n: 16 });
    items.delete('item-7');
    await store.close();
    const again = await load(dir);
    expect(again.fromCheckpoint).toBe(true);
    await expectState(again.store, items);
  });

  it('is not used when a data file changed after it was written (a crash after writes): every record is read', async () => {
    const { dir, items } = await filled(2500);
    const old = fs.readFileSync(checkpointFile(dir, 'items'));
    const { store } = await load(dir);
    await store.collection(ITEMS).put({ id: 'late', owner: 'zoë', n: 1 });
    items.set('late', { id: 'late', owner: 'zoë', n: 1 });
    await store.close();
    // As if the process had died after the write: the checkpoint still describes the files before it.
    fs.writeFileSync(checkpointFile(dir, 'items'), old);
    const refused = checkpointStats.refused;
    const again = await load(dir);
    expect(again.fromCheckpoint).toBe(false);
    expect(checkpointStats.refused).toBeGreaterThan(refused);
    await expectState(again.store, items);
  });

  it('is not used when its body does not match its checksum, nor when its header is not one', async () => {
    const { dir, items } = await filled(2500);
    const file = checkpointFile(dir, 'items');
    const good = fs.readFileSync(file);
    const bad = Buffer.from(good);
    bad.writeUInt8(bad.readUInt8(bad.length - 10) ^ 0x20, bad.length - 10); // a key's character
    fs.writeFileSync(file, bad);
    let l = await load(dir);
    expect(l.fromCheckpoint).toBe(false);
    await expectState(l.store, items);
    await l.store.close();
    for (const junk of ['', 'not json\n', '{"format":1}\n', good.subarray(0, 200)]) {
      fs.writeFileSync(file, junk);
      l = await load(dir);
      expect(l.fromCheckpoint).toBe(false);
      await expectState(l.store, items);
      await l.store.close();
    }
  });

  it('a file that changed between the open and the load is read from its records, and the indexes built from them', async () => {
    const { dir, items } = await filled(3000);
    const store = await openDir(dir); // the checkpoint describes the files now
    fs.appendFileSync(path.join(dir, 'items.2.json'), '\n'); // same file, one byte longer
    await store.preload([ITEMS]);
    await expectState(store, items);
  });

  it('is not used for a definition with other index fields, whose indexes are built from the records', async () => {
    const { dir, items } = await filled(2500);
    const l = await load(dir, ITEMS_BY_N);
    expect(l.fromCheckpoint).toBe(false);
    await expectState(l.store, items, ITEMS_BY_N);
    await l.store.close();
    // That close described the collection as it is now defined.
    const again = await load(dir, ITEMS_BY_N);
    expect(again.fromCheckpoint).toBe(true);
    await expectState(again.store, items, ITEMS_BY_N);
  });

  it('is removed, not written, for a collection under the size that needs one; a temp file left by a crash is dropped', async () => {
    const { dir } = await filled(2500);
    fs.writeFileSync(path.join(dir, '.items.checkpoint.tmp'), 'half');
    const store = await openFileStore(dir, { log, fsync: false }); // default threshold: 8 MB
    open.push(store);
    expect(fs.existsSync(path.join(dir, '.items.checkpoint.tmp'))).toBe(false);
    await store.preload([ITEMS]);
    await store.close();
    expect(fs.existsSync(checkpointFile(dir, 'items'))).toBe(false);
    expect(fs.readdirSync(dir).filter((n) => !n.startsWith('.devtoolbox')).sort()).toStrictEqual(['items.2.json', 'items.3.json', 'items.json']);
  });
});
