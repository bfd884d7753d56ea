import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/harness.js';
import { createLogger } from '../../log.js';
import { openFileStore, type Store } from '../index.js';
import { mergeInSlices, Slicer } from './bulk.js';
import { indexKey, indexValue } from '../index-key.js';
import { loadTable, type SegmentSource } from './loader.js';
import { KeyGroups, parseSegment, type ParsedSegment } from './parse-segment.js';
import { LOAD_WORKERS, LoadPoolUnavailable, SegmentLoadPool } from './segment-load-pool.js';
import { idHash } from './id-directory.js';
import { Table } from './table.js';
import { StoreError, type AnyCollectionDef, type IndexValue } from '../types.js';
import { ITEMS, THINGS } from '../../../test/store-fixtures.js';

const log = createLogger('silent');

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

describe.each<Mode>(['main thread', 'load worker'])('a record in two files, with flushes during the load (%s)', (mode) => {
  it('the later file is rewritten with all its records, not as far as the load had got', async () => {
    const dir = tempDir();
    const rec = (id: string, owner: string, n: number) => JSON.stringify({ id, owner, n });
    fs.writeFileSync(path.join(dir, 'items.json'), `{"collection":"items","segment":1,"format":1,"key":"id","records":[\n${rec('a', 'old', 1)},\n${rec('b', 'x', 1)}\n]}\n`);
    // 'a' again first in a big later file: the file is known to need a rewrite long before its last record is in.
    const many = Array.from({ length: 60_000 }, (_, i) => rec(`item-${i}`, `owner-${i % 97}`, i % 1000));
    fs.writeFileSync(path.join(dir, 'items.2.json'), `{"collection":"items","segment":2,"format":1,"key":"id","records":[\n${[rec('a', 'new', 2), ...many].join(',\n')}\n]}\n`);
    const store = await openInMode(dir, mode);
    const other = store.collection(THINGS);
    const loading = store.preload([ITEMS]);
    let done = false;
    loading.then(
      () => (done = true),
      () => (done = true),
    );
    // Durable writes elsewhere all through the load: each starts a flush of every dirty segment.
    let puts = 0;
    while (!done) {
      await other.put({ id: `t${puts++}`, tag: 'x', n: 1 });
      await new Promise((r) => setImmediate(r));
    }
    await loading;
    expect(puts).toBeGreaterThan(1);
    expect(await store.collection(ITEMS).count()).toBe(60_002);
    await store.close();
    const again = await openInMode(dir, mode);
    const items = again.collection(ITEMS);
    expect(await items.count()).toBe(60_002);
    expect(await items.get('a')).toStrictEqual({ id: 'a', owner: 'new', n: 2 });
    expect(await items.get('item-59999')).toStrictEqual({ id: 'item-59999', owner: `owner-${59_999 % 97}`, n: 999 });
  });
});

describe.each<Mode>(['main thread', 'load worker'])('an id twice in one file (%s)', (mode) => {
  it('keeps the later copy, indexes only it, and the file is rewritten without the earlier one', async () => {
    const dir = tempDir();
    const rec = (id: string, owner: string, n: number) => JSON.stringify({ id, owner, n });
    const lines = [rec('a', 'old', 1), rec('b', 'x', 2), rec('a', 'new', 3)];
    fs.writeFileSync(path.join(dir, 'items.json'), `{"collection":"items","segment":1,"format":1,"key":"id","records":[\n${lines.join(',\n')}\n]}\n`);
    const store = await openInMode(dir, mode);
    await store.preload([ITEMS]);
    const items = store.collection(ITEMS);
    expect(await items.get('a')).toStrictEqual({ id: 'a', owner: 'new', n: 3 });
    expect(await items.count()).toBe(2);
    expect(await items.count({ index: 'owner', eq: 'old' })).toBe(0);
    expect(await items.query({ index: 'n', gte: 0 })).toStrictEqual([
      { id: 'b', owner: 'x', n: 2 },
      { id: 'a', owner: 'new', n: 3 },
    ]);
    await store.close();
    const text = fs.readFileSync(path.join(dir, 'items.json'), 'utf8');
    expect(text.match(/"id":"a"/g)).toHaveLength(1);
    expect(text).toContain('"owner":"new"');
  });
});

describe.each<Mode>(['main thread', 'load worker'])('two ids of equal hash (%s)', (mode) => {
  it('in one file and across files, both load as the records they are', async () => {
    // Two ids with the same 32-bit idHash (a birthday search: ≈ 2^16 tries).
    const seen = new Map<number, string>();
    const pairs: Array<[string, string]> = [];
    for (let i = 0; pairs.length < 2; i++) {
      const id = `c${i}`;
      const other = seen.get(idHash(id));
      if (other) pairs.push([other, id]);
      else seen.set(idHash(id), id);
    }
    const [[x, y], [u, v]] = pairs as [[string, string], [string, string]];
    const dir = tempDir();
    const file = (seg: number, recs: object[]) =>
      `{"collection":"items","segment":${seg},"format":1,"key":"id","records":[\n${recs.map((r) => JSON.stringify(r)).join(',\n')}\n]}\n`;
    // x then y in one file; u in it and v in a later file, with a newer copy of z.
    fs.writeFileSync(path.join(dir, 'items.json'), file(1, [{ id: x, owner: 'p', n: 1 }, { id: 'z', owner: 'q', n: 2 }, { id: y, owner: 'p', n: 3 }, { id: u, owner: 's', n: 5 }]));
    fs.writeFileSync(path.join(dir, 'items.2.json'), file(2, [{ id: 'z', owner: 'r', n: 4 }, { id: v, owner: 's', n: 6 }]));
    const store = await openInMode(dir, mode);
    await store.preload([ITEMS]);
    const items = store.collection(ITEMS);
    expect(await items.get(x)).toStrictEqual({ id: x, owner: 'p', n: 1 });
    expect(await items.get(y)).toStrictEqual({ id: y, owner: 'p', n: 3 });
    expect(await items.get('z')).toStrictEqual({ id: 'z', owner: 'r', n: 4 });
    expect(await items.get(u)).toStrictEqual({ id: u, owner: 's', n: 5 });
    expect(await items.get(v)).toStrictEqual({ id: v, owner: 's', n: 6 });
    expect(await items.count()).toBe(5);
    expect((await items.query({ index: 'owner', eq: 'p' })).map((r) => r.id).sort()).toStrictEqual([x, y].sort());
    // Every id, in id order (the id-ordered tree is built from each segment's ids).
    expect((await items.query()).map((r) => r.id)).toStrictEqual([x, y, u, v, 'z'].sort());
    await items.delete(x);
    expect(await items.get(x)).toBeUndefined();
    expect(await items.get(y)).toStrictEqual({ id: y, owner: 'p', n: 3 });
    expect(await items.count()).toBe(4);
  });
});

describe('the load worker', () => {
  it('is used for a collection over offThreadLoadBytes, and not under it', async () => {
    const dir = await filled(3000);
    const before = SegmentLoadPool.started;
    const small = await openInMode(dir, 'main thread');
    await small.preload([ITEMS]);
    expect(SegmentLoadPool.started).toBe(before);
    await small.close();
    const large = await openInMode(dir, 'load worker');
    await large.preload([ITEMS]);
    expect(SegmentLoadPool.started).toBe(before + LOAD_WORKERS);
    expect(await large.collection(ITEMS).count()).toBe(3000);
  });

  it('parses as the main thread does and sends every file\'s index keys sorted at the end', async () => {
    const dir = await filled(2500);
    const files = [1, 2, 3].map((no) => path.join(dir, no === 1 ? 'items.json' : `items.${no}.json`));
    const parser = new SegmentLoadPool();
    try {
      const session = parser.load(files, ITEMS, ['owner', 'n']);
      const allKeys: string[][] = [[], []];
      for (let i = 0; i < files.length; i++) {
        const off = (await session.file(i)) as ParsedSegment;
        const here = parseSegment(fs.readFileSync(files[i]!), ITEMS, ['owner', 'n']);
        // The ids stay in the bytes (read from there when needed), the keys come sorted at the end.
        expect(off.ids).toBeUndefined();
        expect(off.values).toBeUndefined();
        expect(texts(off)).toStrictEqual(texts(here));
        expect(texts(off).map((t) => (JSON.parse(t) as { id: string }).id)).toStrictEqual(here.ids);
        expect([...off.hashes]).toStrictEqual([...here.hashes]);
        here.values!.forEach((v, f) => allKeys[f]!.push(...v.map((value, r) => indexKey(value, here.ids![r]!))));
      }
      const runs = (await session.keys)!;
      expect(runs).toHaveLength(2);
      for (const perWorker of runs) for (const run of perWorker) expect(run).toStrictEqual([...run].sort());
      expect(await Promise.all(runs.map((r) => mergeInSlices(r, new Slicer())))).toStrictEqual(allKeys.map((k) => k.sort()));
    } finally {
      await parser.close();
    }
  });

  it('a file it cannot read is LoadPoolUnavailable from there on (for its worker), a corrupt one is reported, and nothing after either is read', async () => {
    const dir = await filled(2500);
    const files = [1, 2, 3].map((no) => path.join(dir, no === 1 ? 'items.json' : `items.${no}.json`));
    // One worker: with two, each stops at its own files only (the other's keep coming).
    const parser = new SegmentLoadPool(1);
    try {
      const missing = parser.load([files[0]!, path.join(dir, 'nope.json'), files[2]!], ITEMS, ['owner']);
      expect((await missing.file(0)) as ParsedSegment).toMatchObject({ hashes: expect.any(Uint32Array) });
      await expect(missing.file(1)).rejects.toBeInstanceOf(LoadPoolUnavailable);
      await expect(missing.file(2)).rejects.toBeInstanceOf(LoadPoolUnavailable);
      expect(await missing.keys).toBeUndefined();
      fs.writeFileSync(files[1]!, '{"collection":"items","records":[{"id":1}]}');
      const corrupt = parser.load(files, ITEMS, []);
      expect(await corrupt.file(1)).toStrictEqual({ corrupt: expect.stringContaining('record 0: items: field "id"') });
      await expect(corrupt.file(2)).rejects.toBeInstanceOf(LoadPoolUnavailable);
    } finally {
      await parser.close();
    }
    await expect(parser.load(files, ITEMS, []).file(0)).rejects.toBeInstanceOf(LoadPoolUnavailable);
  });
});

describe('loadTable', () => {
  it('rebuilds the indexes from the records when the worker stopped partway (some files came without keys, no sorted keys)', async () => {
    const dir = await filled(2500);
    const files = [1, 2, 3].map((no) => path.join(dir, no === 1 ? 'items.json' : `items.${no}.json`));
    const parser = new SegmentLoadPool();
    const table = new Table(ITEMS as unknown as AnyCollectionDef);
    try {
      const session = parser.load(files, ITEMS, ['owner', 'n']);
      const source: SegmentSource = {
        segments: [1, 2, 3],
        open: () => ({
          // The first file from the worker (keyless), the others read here (with keys), as after a worker failure.
          file: async (i) => (i === 0 ? ((await session.file(0)) as ParsedSegment) : parseSegment(fs.readFileSync(files[i]!), ITEMS, ['owner', 'n'])),
          sortedKeys: async () => undefined,
        }),
        corrupt: () => new StoreError('CORRUPT', 'unexpected'),
      };
      await loadTable(table, source, new Slicer(), () => {});
    } finally {
      await parser.close();
    }
    expect(table.size).toBe(2500);
    const expected = await filledStore(dir);
    for (const field of ['owner', 'n']) expect([...table.indexes.get(field)!.keys()]).toStrictEqual(expected[field]);
  });
});

/** Each record's text in a parsed segment. */
function texts(p: ParsedSegment): string[] {
  if (p.lines) return p.lines;
  const buf = Buffer.from(p.buf!.buffer, p.buf!.byteOffset, p.buf!.byteLength);
  return Array.from({ length: p.offsets!.length / 2 }, (_, i) => buf.toString('utf8', p.offsets![2 * i], p.offsets![2 * i + 1]));
}

/** The index keys of every item in `dir`, per field, as the main-thread load builds them. */
async function filledStore(dir: string): Promise<Record<string, string[]>> {
  const store = await openFileStore(dir, { log, fsync: false });
  try {
    await store.preload([ITEMS]);
    const out: Record<string, string[]> = {};
    const items = await store.collection(ITEMS).query();
    for (const field of ['owner', 'n'] as const) out[field] = items.map((r) => indexKey(indexValue(r[field]), r.id)).sort();
    return out;
  } finally {
    await store.close();
  }
}

describe('storeReadiness', () => {
  it('starting while loading, storage_unavailable while the disk fails, ready otherwise', async () => {
    const { storeReadiness } = await import('../index.js');
    const dir = await filled(2000);
    const store = await openDir(dir);
    const loading = store.preload([ITEMS]);
    expect(storeReadiness(store)).toStrictEqual({ ready: false, status: 'starting' });
    await loading;
    expect(storeReadiness(store)).toStrictEqual({ ready: true });
    // Every file the write could go to (a segment's temporary file, the journal) is a directory.
    for (const f of ['.items.json.tmp', '.items.2.json.tmp', '.items.3.json.tmp', 'items.journal.1.log']) fs.mkdirSync(path.join(dir, f));
    await expect(store.collection(ITEMS).put({ id: 'item-1', owner: 'x', n: 1 })).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(storeReadiness(store)).toMatchObject({ ready: false, status: 'storage_unavailable', reason: expect.stringMatching(/EISDIR/) });
  });
});

describe('KeyGroups', () => {
  it('gives the keys in the order one sort of them all gives, whatever the batches', () => {
    const all: string[] = [];
    const groups = new KeyGroups();
    let seed = 7;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n);
    // Values that are prefixes of others, with NULs (encoded), numbers, booleans, null; ids too.
    const values: IndexValue[] = ['', 'a', 'a\0', 'a\0b', 'ab', '\0', '\uffff', '1', 1, 0, -0, -1, 2.5, true, 'true', false, null, 'null'];
    for (let b = 0; b < 37; b++) {
      const n = rand(300);
      const vals: IndexValue[] = [];
      const ids: string[] = [];
      for (let i = 0; i < n; i++) {
        const v = rand(3) === 0 ? values[rand(values.length)]! : `k${rand(50)}|${String.fromCharCode(rand(0xffff))}`;
        const id = `${String.fromCharCode(rand(0xffff))}${rand(1e6)}`;
        vals.push(v);
        ids.push(id);
        all.push(indexKey(v, id));
      }
      groups.add(vals, ids);
    }
    expect(groups.done()).toStrictEqual(all.sort());
    expect(new KeyGroups().done()).toStrictEqual([]);
  });
});

describe('mergeInSlices', () => {
  it('merges any number of sorted lists, pausing on the way', async () => {
    let seed = 3;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n);
    for (const count of [0, 1, 2, 3, 5]) {
      const lists = Array.from({ length: count }, () => Array.from({ length: rand(20_000) }, () => `k${rand(1e6)}`).sort());
      const slicer = new Slicer(0);
      expect(await mergeInSlices(lists, slicer)).toStrictEqual(lists.flat().sort());
      if (lists.flat().length > 2048 && count > 1) expect(slicer.pauses).toBeGreaterThan(0);
    }
  });
});
