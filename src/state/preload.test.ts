import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../test/context.js';
import { createLogger } from '../log.js';
import { defineCollection, openFileStore, type Store } from './index.js';

const log = createLogger('silent');
interface Item {
  id: string;
  owner: string;
  n: number;
}
const ITEMS = defineCollection<Item>({ name: 'items', key: 'id', indexes: ['owner', 'n'], segmentSize: 1000 });

const open: Store[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});
async function openDir(dir: string): Promise<Store> {
  const s = await openFileStore(dir, { log, fsync: false });
  open.push(s);
  return s;
}

/** A data dir holding `n` items, written through the store. */
async function filled(n: number): Promise<string> {
  const dir = tempDir();
  const store = await openFileStore(dir, { log, fsync: false });
  for (let i = 0; i < n; i += 5000) {
    const batch = Array.from({ length: Math.min(5000, n - i) }, (_, k) => {
      const j = i + k;
      return { id: `item-${(j * 7919) % n}`, owner: `owner-${j % 97}`, n: j % 1000 };
    });
    await store.putMany(ITEMS, batch);
  }
  await store.close();
  return dir;
}

describe('preload and readiness', () => {
  it('loads a big collection in slices: the event loop keeps turning, the store is ready only at the end', async () => {
    const dir = await filled(60_000);
    const store = await openDir(dir);
    expect(store.ready).toBe(true); // nothing asked for yet
    const loading = store.preload([ITEMS]);
    expect(store.ready).toBe(false);
    let ticks = 0;
    let timerFired = false;
    let done = false;
    setTimeout(() => (timerFired = !done), 0);
    const spin = () => {
      if (done) return;
      ticks++;
      setImmediate(spin);
    };
    setImmediate(spin);
    // A reader that arrives during the load waits for it and gets the right answer.
    const early = store.collection(ITEMS).get('item-123');
    await loading;
    done = true;
    expect(store.ready).toBe(true);
    expect(timerFired).toBe(true);
    // One blocking load would have let the loop turn once or twice; slices let it turn many times.
    expect(ticks).toBeGreaterThan(20);
    expect(await early).toStrictEqual({ id: 'item-123', owner: expect.stringMatching(/^owner-/), n: expect.any(Number) });
    const items = store.collection(ITEMS);
    expect(await items.count()).toBe(60_000);
    expect(await items.count({ index: 'owner', eq: 'owner-5' })).toBe(Math.ceil((60_000 - 5) / 97));
    const low = await items.query({ index: 'n', lt: 2, order: 'desc' });
    expect(low).toHaveLength(120);
    expect(low.map((r) => r.n)).toStrictEqual([...Array<number>(60).fill(1), ...Array<number>(60).fill(0)]);
  }, 60_000);

  it('a record that does not parse, found while loading, keeps the file aside and the store never ready', async () => {
    const dir = await filled(3000);
    const file = path.join(dir, 'items.2.json');
    const text = fs.readFileSync(file, 'utf8').split('\n');
    text[5] = '{"id":"broken",';
    fs.writeFileSync(file, text.join('\n'));
    const store = await openDir(dir);
    await expect(store.preload([ITEMS])).rejects.toMatchObject({ code: 'CORRUPT', message: expect.stringMatching(/items\.2\.json does not parse .*kept aside as items\.2\.json\.corrupt-/) });
    expect(store.ready).toBe(false);
    await expect(store.collection(ITEMS).get('item-1')).rejects.toMatchObject({ code: 'CORRUPT' });
    expect(fs.readdirSync(dir).some((f) => f.startsWith('items.2.json.corrupt-'))).toBe(true);
  });

  it('a file laid out by hand (records over several lines) still loads', async () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'items.json'), JSON.stringify({ collection: 'items', records: [{ id: 'a', owner: 'x', n: 1 }, { id: 'b', owner: 'y', n: 2 }] }, null, 2));
    const store = await openDir(dir);
    await store.preload([ITEMS]);
    expect(await store.collection(ITEMS).query({ index: 'owner', eq: 'y' })).toStrictEqual([{ id: 'b', owner: 'y', n: 2 }]);
  });
});

describe('storeReadiness', () => {
  it('starting while loading, storage_unavailable while the disk fails, ready otherwise', async () => {
    const { storeReadiness } = await import('./index.js');
    const dir = await filled(2000);
    const store = await openDir(dir);
    const loading = store.preload([ITEMS]);
    expect(storeReadiness(store)).toStrictEqual({ ready: false, status: 'starting' });
    await loading;
    expect(storeReadiness(store)).toStrictEqual({ ready: true });
    for (const f of ['.items.json.tmp', '.items.2.json.tmp', '.items.3.json.tmp']) fs.mkdirSync(path.join(dir, f));
    await expect(store.collection(ITEMS).put({ id: 'item-1', owner: 'x', n: 1 })).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(storeReadiness(store)).toMatchObject({ ready: false, status: 'storage_unavailable', reason: expect.stringMatching(/EISDIR/) });
  });
});
