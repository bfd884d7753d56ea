import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { tempDir } from '../../test/harness.js';
import { describeRedis, startRedis, type TestRedis } from '../../test/redis.js';
import { openRedisStore } from './redis/index.js';
import { createLogger } from '../log.js';
import { DurableJsonFile } from './segment-file.js';
import { createMemoryStore, defineCollection, openLowdbStore, REMOVE, StoreError, type Store } from './index.js';

const log = createLogger('silent');
const INDEX_TS = fileURLToPath(new URL('./index.ts', import.meta.url));

interface Thing {
  id: string;
  n: number;
  tag?: string | null;
  list?: string[];
}
const THINGS = defineCollection<Thing>({ name: 'things', key: 'id', indexes: ['tag', 'n'], segmentSize: 3 });

const open: Store[] = [];
async function lowdb(dir = tempDir()): Promise<{ store: Store; dir: string }> {
  const store = await openLowdbStore(dir, { log });
  open.push(store);
  return { store, dir };
}
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});

function readJson(file: string): { records: unknown[] } {
  return JSON.parse(fs.readFileSync(file, 'utf8')) as { records: unknown[] };
}

/** Runs a script in a child `node --import tsx` process; resolves with its exit code and output. */
function runChild(dir: string, body: string, onStdout?: (chunk: string, kill: () => void) => void) {
  const file = path.join(dir, '..', `child-${path.basename(dir)}-${Math.random().toString(36).slice(2)}.mts`);
  fs.writeFileSync(
    file,
    `import { openLowdbStore, defineCollection } from ${JSON.stringify(INDEX_TS)};\n` +
      `const log = { debug() {}, info() {}, warn() {}, error() {} };\n` +
      `const dir = ${JSON.stringify(dir)};\n${body}\n`,
  );
  return new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      onStdout?.(stdout, () => child.kill('SIGKILL'));
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code, signal) => {
      fs.rmSync(file, { force: true });
      resolve({ code, signal, stdout, stderr });
    });
  });
}

let redisServer: Promise<TestRedis> | undefined;
afterAll(async () => {
  if (redisServer) await (await redisServer).stop();
});
async function redis(): Promise<Store> {
  const server = await (redisServer ??= startRedis());
  const store = await openRedisStore({ url: server.url, prefix: server.prefix(), log, quiet: true });
  open.push(store);
  return store;
}

for (const kind of ['memory', 'lowdb', 'redis'] as const) {
  (kind === 'redis' ? describeRedis : describe)(`store contract (${kind})`, () => {
    const make = async () => (kind === 'memory' ? createMemoryStore() : kind === 'redis' ? redis() : (await lowdb()).store);

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

describe('lowdb adapter', () => {
  it('persists across reopen, one file per segment of at most segmentSize records', async () => {
    const { store, dir } = await lowdb();
    const things = store.collection(THINGS);
    for (let i = 0; i < 7; i++) await things.put({ id: `t${i}`, n: i });
    await things.delete('t1');
    await things.increment('t0', 'n', 5, { init: { id: 't0', n: 0 }, durability: 'lazy' });
    await store.close();
    expect(fs.readdirSync(dir).sort()).toStrictEqual(['things.2.json', 'things.3.json', 'things.json']);
    expect(readJson(path.join(dir, 'things.json')).records).toStrictEqual([
      { id: 't0', n: 5 },
      { id: 't2', n: 2 },
    ]);
    const again = (await lowdb(dir)).store.collection(THINGS);
    expect((await again.query()).map((r) => [r.id, r.n])).toStrictEqual([
      ['t0', 5],
      ['t2', 2],
      ['t3', 3],
      ['t4', 4],
      ['t5', 5],
      ['t6', 6],
    ]);
    // The hole left by t1 is filled before a new segment is opened.
    await again.put({ id: 'new', n: 0 });
    expect(readJson(path.join(dir, 'things.json')).records).toHaveLength(3);
  });

  it('group commit: many concurrent durable writes share few file writes', async () => {
    const spy = vi.spyOn(DurableJsonFile.prototype, 'write');
    try {
      const { store, dir } = await lowdb();
      const things = store.collection(defineCollection<Thing>({ name: 'things', key: 'id' }));
      await Promise.all(Array.from({ length: 500 }, (_, i) => things.put({ id: `t${i}`, n: i })));
      expect(spy.mock.calls.length).toBeLessThan(20);
      expect(readJson(path.join(dir, 'things.json')).records).toHaveLength(500);
    } finally {
      spy.mockRestore();
    }
  });

  it('an acknowledged write is on disk at once; a lazy one within LAZY_FLUSH_MS or on flush()', async () => {
    const { store, dir } = await lowdb();
    const things = store.collection(THINGS);
    await things.put({ id: 'a', n: 1 });
    expect(readJson(path.join(dir, 'things.json')).records).toStrictEqual([{ id: 'a', n: 1 }]);
    await things.increment('a', 'n', 1, { init: { id: 'a', n: 0 }, durability: 'lazy' });
    expect(readJson(path.join(dir, 'things.json')).records).toStrictEqual([{ id: 'a', n: 1 }]);
    await store.flush();
    expect(readJson(path.join(dir, 'things.json')).records).toStrictEqual([{ id: 'a', n: 2 }]);
    await things.increment('a', 'n', 1, { init: { id: 'a', n: 0 }, durability: 'lazy' });
    await vi.waitFor(() => expect(readJson(path.join(dir, 'things.json')).records).toStrictEqual([{ id: 'a', n: 3 }]), { timeout: 1500, interval: 50 });
  });

  // Issue 16: writes that failed still took effect (visible at once, written by a later flush).
  it('a write whose flush fails is refused with UNAVAILABLE, never visible and never written later; writes work again once the disk does', async () => {
    const { store, dir } = await lowdb();
    const things = store.collection(THINGS);
    await things.put({ id: 'first', n: 0 });
    expect(store.health()).toStrictEqual({ ok: true });
    // The temp file's name taken by a directory: open(…, 'w') fails with EISDIR. (Tests run as
    // root, so a read-only mode would not stop the write; this fails in the real write path.)
    const tmp = path.join(dir, '.things.json.tmp');
    fs.mkdirSync(tmp);
    const results = await Promise.allSettled([things.put({ id: 'a', n: 1 }), things.put({ id: 'b', n: 2 }), things.insert({ id: 'c', n: 3 })]);
    expect(results.map((r) => r.status)).toStrictEqual(['rejected', 'rejected', 'rejected']);
    const reason = (results[0] as PromiseRejectedResult).reason as StoreError;
    expect(reason).toBeInstanceOf(StoreError);
    expect(reason.code).toBe('UNAVAILABLE');
    expect(reason.message).toMatch(/EISDIR/);
    expect(store.health()).toMatchObject({ ok: false, reason: expect.stringMatching(/EISDIR/) });
    // Nobody sees the failed writes; the code they took is free again.
    expect(await things.get('a')).toBe(undefined);
    expect((await things.query()).map((t) => t.id)).toStrictEqual(['first']);
    expect(readJson(path.join(dir, 'things.json')).records).toStrictEqual([{ id: 'first', n: 0 }]);
    await expect(things.put({ id: 'b', n: 2 })).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    fs.rmdirSync(tmp);
    // The store notices by itself (it probes every second), without a write.
    await vi.waitFor(() => expect(store.health()).toStrictEqual({ ok: true }), { timeout: 5000, interval: 100 });
    expect(await things.insert({ id: 'c', n: 30 })).toBe(true);
    await things.put({ id: 'd', n: 4 });
    expect(readJson(path.join(dir, 'things.json')).records).toStrictEqual([
      { id: 'first', n: 0 },
      { id: 'c', n: 30 },
      { id: 'd', n: 4 },
    ]);
    await store.close();
    const again = (await lowdb(dir)).store.collection(THINGS);
    expect((await again.query()).map((t) => t.id)).toStrictEqual(['c', 'd', 'first']);
  });

  it('a flush that renamed some files before failing is repaired from the committed state', async () => {
    const { store, dir } = await lowdb();
    const things = store.collection(THINGS);
    for (const id of ['t1', 't2', 't3']) await things.put({ id, n: 1 });
    // Segment 2's file name taken by a directory: its rename fails (EISDIR) after segment 1's
    // rename already replaced things.json with the change that is then rolled back.
    fs.mkdirSync(path.join(dir, 'things.2.json'));
    const results = await Promise.allSettled([things.put({ id: 't1', n: 99 }), things.put({ id: 't4', n: 4 })]);
    expect(results.map((r) => r.status)).toStrictEqual(['rejected', 'rejected']);
    expect(await things.get('t1')).toStrictEqual({ id: 't1', n: 1 });
    expect(await things.get('t4')).toBe(undefined);
    fs.rmdirSync(path.join(dir, 'things.2.json'));
    await vi.waitFor(() => expect(store.health()).toStrictEqual({ ok: true }), { timeout: 5000, interval: 100 });
    expect(readJson(path.join(dir, 'things.json')).records).toStrictEqual([
      { id: 't1', n: 1 },
      { id: 't2', n: 1 },
      { id: 't3', n: 1 },
    ]);
    const files = fs.readdirSync(dir).filter((f) => f.startsWith('things.2.json'));
    for (const f of files) expect(readJson(path.join(dir, f)).records).toStrictEqual([]);
  });

  it('lazy changes are kept through a failed flush and written once the disk recovers', async () => {
    const { store, dir } = await lowdb();
    const things = store.collection(THINGS);
    await things.put({ id: 'k', n: 0 });
    fs.mkdirSync(path.join(dir, '.things.json.tmp'));
    await things.increment('k', 'n', 5, { init: { id: 'k', n: 0 }, durability: 'lazy' });
    expect(await things.get('k')).toStrictEqual({ id: 'k', n: 5 });
    await expect(store.flush()).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(await things.get('k')).toStrictEqual({ id: 'k', n: 5 });
    fs.rmdirSync(path.join(dir, '.things.json.tmp'));
    // The file shows the change once renamed; health turns once the flush is done.
    await vi.waitFor(() => expect(store.health()).toStrictEqual({ ok: true }), { timeout: 5000, interval: 100 });
    expect(readJson(path.join(dir, 'things.json')).records).toStrictEqual([{ id: 'k', n: 5 }]);
  });

  it('a data file that does not parse is kept aside and the open fails until someone acts', async () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'things.json'), '{"collection":"things","records":[{"id":"a","n":1},');
    const err = (await openLowdbStore(dir, { log }).catch((e: unknown) => e)) as StoreError;
    expect(err).toBeInstanceOf(StoreError);
    expect(err.code).toBe('CORRUPT');
    expect(err.message).toMatch(/things\.json does not parse .* kept aside as things\.json\.corrupt-/);
    const files = fs.readdirSync(dir);
    const aside = files.find((f) => f.startsWith('things.json.corrupt-'))!;
    expect(files.filter((f) => !f.startsWith('.'))).toStrictEqual([aside]);
    expect(fs.readFileSync(path.join(dir, aside), 'utf8')).toBe('{"collection":"things","records":[{"id":"a","n":1},');
    // Not silently replaced by an empty collection on the next start either.
    const again = (await openLowdbStore(dir, { log }).catch((e: unknown) => e)) as StoreError;
    expect(again.code).toBe('CORRUPT');
    expect(again.message).toContain(aside);
    // A valid JSON document of the wrong shape is corrupt too.
    fs.renameSync(path.join(dir, aside), path.join(tempDir(), aside));
    fs.writeFileSync(path.join(dir, 'things.json'), '[1,2]');
    expect(((await openLowdbStore(dir, { log }).catch((e: unknown) => e)) as StoreError).code).toBe('CORRUPT');
    for (const f of fs.readdirSync(dir)) if (f.includes('corrupt')) fs.rmSync(path.join(dir, f));
    // Once the operator moved it out, the dir opens (the failed opens released the lock).
    const store = (await lowdb(dir)).store;
    expect(await store.collection(THINGS).count()).toBe(0);
  });

  it('drops a temp file left by a flush that never reached its rename', async () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'things.json'), '{"collection":"things","segment":1,"format":1,"records":[{"id":"a","n":1}]}');
    fs.writeFileSync(path.join(dir, '.things.json.tmp'), '{"collection":"thi');
    const things = (await lowdb(dir)).store.collection(THINGS);
    expect(await things.query()).toStrictEqual([{ id: 'a', n: 1 }]);
    expect(fs.existsSync(path.join(dir, '.things.json.tmp'))).toBe(false);
  });

  it('a record found in two files (crash between two renames) is kept once, from the later file', async () => {
    const dir = tempDir();
    const file = (seg: number, records: object[]) => JSON.stringify({ collection: 'things', segment: seg, format: 1, records });
    fs.writeFileSync(path.join(dir, 'things.json'), file(1, [{ id: 'a', n: 1 }, { id: 'b', n: 1 }]));
    fs.writeFileSync(path.join(dir, 'things.2.json'), file(2, [{ id: 'a', n: 2 }]));
    const { store } = await lowdb(dir);
    const things = store.collection(THINGS);
    expect(await things.query()).toStrictEqual([
      { id: 'a', n: 2 },
      { id: 'b', n: 1 },
    ]);
    await store.flush();
    expect(readJson(path.join(dir, 'things.json')).records).toStrictEqual([{ id: 'b', n: 1 }]);
  });

  it('a second open of the same dir in this process is refused', async () => {
    const { dir } = await lowdb();
    await expect(openLowdbStore(dir, { log })).rejects.toThrow(/another devtoolbox process \(pid \d+ on .*server.*\) owns DATA_DIR/);
  });

  it('another process is refused with a clear message while this one holds the dir', async () => {
    const { dir } = await lowdb();
    const r = await runChild(
      dir,
      `try { await openLowdbStore(dir, { log }); console.log('OPENED'); process.exit(0); }
       catch (e) { console.log(e.code + ': ' + e.message); process.exit(1); }`,
    );
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`LOCKED: another devtoolbox process (pid ${process.pid} on`);
    expect(r.stdout).toContain(`owns DATA_DIR ${dir}`);
  }, 20_000);

  it('a lock left by a process killed with SIGKILL is taken over; its acknowledged writes are there', async () => {
    const dir = tempDir();
    const r = await runChild(
      dir,
      `const s = await openLowdbStore(dir, { log });
       const c = s.collection(defineCollection({ name: 'things', key: 'id', segmentSize: 50 }));
       let i = 0;
       for (;;) { const batch = []; for (let k = 0; k < 20; k++) { const id = 't' + i++; batch.push(c.put({ id, n: 1 }).then(() => console.log('ACK ' + id))); } await Promise.all(batch); }`,
      (out, kill) => {
        if (out.split('\n').filter((l) => l.startsWith('ACK')).length >= 300) kill();
      },
    );
    expect(r.signal).toBe('SIGKILL');
    const acked = r.stdout.split('\n').filter((l) => l.startsWith('ACK ')).map((l) => l.slice(4));
    expect(fs.existsSync(path.join(dir, '.devtoolbox.lock'))).toBe(true);
    const things = (await lowdb(dir)).store.collection(THINGS);
    const have = new Set((await things.query()).map((t) => t.id));
    expect(acked.filter((id) => !have.has(id))).toStrictEqual([]);
    for (const f of fs.readdirSync(dir)) if (f.endsWith('.json') && !f.startsWith('.')) readJson(path.join(dir, f));
  }, 20_000);
});
