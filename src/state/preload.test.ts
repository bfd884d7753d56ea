import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../test/context.js';
import { createLogger } from '../log.js';
import { defineCollection, openFileStore, type Store } from './index.js';
import { parseSegment, segmentLines, type ParsedSegment } from './segment-parse.js';
import { ParserUnavailable, SegmentParser } from './segment-parser.js';

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
/** The load runs on the main thread, or in the load worker (every collection counts as large). */
type Mode = 'main thread' | 'load worker';
async function openDir(dir: string, mode: Mode = 'main thread'): Promise<Store> {
  const s = await openFileStore(dir, { log, fsync: false, ...(mode === 'load worker' ? { offThreadLoadBytes: 0 } : {}) });
  open.push(s);
  return s;
}

async function openInMode(dir: string, mode: Mode): Promise<Store> {
  return openDir(dir, mode);
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

describe.each<Mode>(['main thread', 'load worker'])('preload and readiness (%s)', (mode) => {
  const openDir = (dir: string) => openInMode(dir, mode);

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

  it('a record without its id keeps the file aside with the record number', async () => {
    const dir = await filled(1500);
    const file = path.join(dir, 'items.2.json');
    const text = fs.readFileSync(file, 'utf8').split('\n');
    text[3] = '{"owner":"x","n":1},';
    fs.writeFileSync(file, text.join('\n'));
    const store = await openDir(dir);
    await expect(store.preload([ITEMS])).rejects.toMatchObject({ code: 'CORRUPT', message: expect.stringContaining('record 2: items: field "id" must be a non-empty string') });
  });

  it('a record found in two files is kept once, from the later file, and its index entries follow', async () => {
    const dir = tempDir();
    const file = (seg: number, records: object[]) => JSON.stringify({ collection: 'items', segment: seg, format: 1, key: 'id', records });
    fs.writeFileSync(path.join(dir, 'items.json'), file(1, [{ id: 'a', owner: 'old', n: 1 }, { id: 'b', owner: 'old', n: 1 }]));
    fs.writeFileSync(path.join(dir, 'items.2.json'), file(2, [{ id: 'a', owner: 'new', n: 2 }]));
    const store = await openDir(dir);
    await store.preload([ITEMS]);
    const items = store.collection(ITEMS);
    expect(await items.query()).toStrictEqual([
      { id: 'a', owner: 'new', n: 2 },
      { id: 'b', owner: 'old', n: 1 },
    ]);
    expect(await items.query({ index: 'owner', eq: 'old' })).toStrictEqual([{ id: 'b', owner: 'old', n: 1 }]);
    expect(await items.count({ index: 'owner', eq: 'new' })).toBe(1);
  });
});

describe('the load worker', () => {
  it('is used for a collection over offThreadLoadBytes, and not under it', async () => {
    const dir = await filled(3000);
    const before = SegmentParser.started;
    const small = await openInMode(dir, 'main thread');
    await small.preload([ITEMS]);
    expect(SegmentParser.started).toBe(before);
    await small.close();
    const large = await openInMode(dir, 'load worker');
    await large.preload([ITEMS]);
    expect(SegmentParser.started).toBe(before + 1);
    expect(await large.collection(ITEMS).count()).toBe(3000);
  });

  it('parses as the main thread does; a file it cannot read, or a parser closed, is ParserUnavailable (the store then reads it itself)', async () => {
    const dir = await filled(1200);
    const file = path.join(dir, 'items.2.json');
    const parser = new SegmentParser();
    try {
      const off = await parser.parse(file, ITEMS, ['owner']);
      const here = parseSegment(fs.readFileSync(file), ITEMS, ['owner']);
      expect('corrupt' in off).toBe(false);
      const p = off as ParsedSegment;
      expect(p.ids).toStrictEqual(here.ids);
      expect(p.keys).toStrictEqual(here.keys);
      expect(segmentLines(p)).toStrictEqual(segmentLines(here));
      await expect(parser.parse(path.join(dir, 'nope.json'), ITEMS, [])).rejects.toBeInstanceOf(ParserUnavailable);
      fs.writeFileSync(file, '{"collection":"items","records":[{"id":1}]}');
      expect(await parser.parse(file, ITEMS, [])).toStrictEqual({ corrupt: expect.stringContaining('record 0: items: field "id"') });
    } finally {
      await parser.close();
    }
    await expect(parser.parse(file, ITEMS, [])).rejects.toBeInstanceOf(ParserUnavailable);
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
