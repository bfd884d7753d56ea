import fs from 'node:fs';
import path from 'node:path';
import { PassThrough, Readable, Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir, testConfig } from '../../test/harness.js';
import { createLogger } from '../log.js';
import { defineCollection, openFileStore, type Store } from './index.js';
import { transferCommand, type TransferIo } from './transfer-cli.js';
import { exportStore, importStore, type TransferProgress } from './transfer.js';

const log = createLogger('silent');
interface Link {
  code: string;
  url: string;
  day: string;
}
interface Note {
  id: string;
  text: string;
}
const LINKS = defineCollection<Link>({ name: 'links', key: 'code', indexes: ['day'], segmentSize: 100 });
const NOTES = defineCollection<Note>({ name: 'notes', key: 'id' });

const open: Store[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});
async function openDir(dir = tempDir()): Promise<Store> {
  const s = await openFileStore(dir, { log, fsync: false });
  open.push(s);
  return s;
}
async function close(s: Store) {
  open.splice(open.indexOf(s), 1);
  await s.close();
}

async function exported(store: Store, opts: Parameters<typeof exportStore>[2] = {}): Promise<string> {
  let text = '';
  const out = new Writable({
    write(chunk: Buffer, _enc, cb) {
      text += chunk.toString();
      cb();
    },
  });
  await exportStore(store, out, opts);
  return text;
}

async function filled(n: number): Promise<{ dir: string; links: Link[]; notes: Note[] }> {
  const dir = tempDir();
  const store = await openDir(dir);
  const links = Array.from({ length: n }, (_, i) => ({ code: `c${(i * 7919) % n}`, url: `https://example.com/${i}?q="x"\n`, day: `d${i % 3}` }));
  const notes = [{ id: 'n1', text: 'ünïcode ✓' }, { id: 'n2', text: '' }];
  await store.collection(LINKS).put(links[0]!);
  await store.putMany(LINKS, links.slice(1));
  for (const note of notes) await store.collection(NOTES).put(note);
  await close(store);
  return { dir, links, notes };
}

const byId = <T extends object>(key: keyof T) => (a: T, b: T) => (String(a[key]) < String(b[key]) ? -1 : 1);

describe('export and import', () => {
  it('round-trips every record, in id order, with collection shapes; indexes work after the import', async () => {
    const { dir, links, notes } = await filled(1234);
    const source = await openDir(dir);
    const progress: TransferProgress[] = [];
    const text = await exported(source, { onProgress: (p) => progress.push(p), batchSize: 100 });
    const lines = text.trimEnd().split('\n');
    expect(JSON.parse(lines[0]!)).toMatchObject({ devtoolbox: 'export', format: 1 });
    expect(JSON.parse(lines[1]!)).toStrictEqual({ collection: 'links', key: 'code', segmentSize: 100, count: 1234 });
    expect(JSON.parse(lines[2]!)).toStrictEqual({ collection: 'links', record: links.find((l) => l.code === 'c0') });
    expect(JSON.parse(lines.at(-1)!)).toStrictEqual({ end: true, records: 1236 });
    expect(lines).toHaveLength(1 + 1 + 1234 + 1 + 2 + 1);
    expect(progress.at(-1)).toMatchObject({ records: 1236, total: 1236, done: true });

    const target = await openDir();
    const result = await importStore(target, Readable.from([text]), { batchSize: 500 });
    expect(result).toStrictEqual({ records: 1236, collections: 2 });
    await target.preload([LINKS, NOTES]);
    expect((await target.collection(LINKS).query()).sort(byId('code'))).toStrictEqual([...links].sort(byId('code')));
    expect(await target.collection(NOTES).query()).toStrictEqual(notes);
    expect(await target.collection(LINKS).count({ index: 'day', eq: 'd1' })).toBe(411);
    // Exporting the import gives the same file, but for its time stamp.
    const again = await exported(target);
    expect(again.split('\n').slice(1)).toStrictEqual(text.split('\n').slice(1));
  });

  it('exports a collection whose records are all journal lines (a kill -9 before any fold), its key given or read from its lines', async () => {
    const dir = tempDir();
    const live = await openDir(dir);
    // One at a time: each a journal line, no segment file.
    for (const note of [{ id: 'n1', text: 'one' }, { id: 'n2', text: 'two' }]) await live.collection(NOTES).put(note);
    await live.collection(LINKS).put({ code: 'abc', url: 'https://example.com/', day: 'd0' });
    const journals = fs.readdirSync(dir).filter((f) => f.includes('.journal.'));
    expect(journals.sort()).toStrictEqual(['links.journal.1.log', 'notes.journal.1.log']);
    for (const known of [[LINKS, NOTES], []]) {
      // What a kill -9 leaves: the journal files, no segment file.
      const crashed = tempDir();
      for (const f of journals) fs.copyFileSync(path.join(dir, f), path.join(crashed, f));
      const store = await openDir(crashed);
      const lines = (await exported(store, { known })).trimEnd().split('\n').slice(1).map((l) => JSON.parse(l) as object);
      expect(lines).toStrictEqual([
        { collection: 'links', key: 'code', segmentSize: known.length > 0 ? 100 : 5000, count: 1 },
        { collection: 'links', record: { code: 'abc', url: 'https://example.com/', day: 'd0' } },
        { collection: 'notes', key: 'id', segmentSize: 5000, count: 2 },
        { collection: 'notes', record: { id: 'n1', text: 'one' } },
        { collection: 'notes', record: { id: 'n2', text: 'two' } },
        { end: true, records: 3 },
      ]);
      await close(store);
    }
  });

  it('refuses a store that holds records unless merging; merging the same file twice changes nothing', async () => {
    const { dir } = await filled(300);
    const text = await exported(await openDir(dir));
    const target = await openDir();
    await target.collection(NOTES).put({ id: 'n1', text: 'older' });
    await expect(importStore(target, Readable.from([text]))).rejects.toThrow(/not empty \(notes: 1\).*merge/);
    await importStore(target, Readable.from([text]), { merge: true });
    const once = await exported(target);
    await importStore(target, Readable.from([text]), { merge: true });
    expect((await exported(target)).split('\n').slice(1)).toStrictEqual(once.split('\n').slice(1));
    expect(await target.collection(NOTES).get('n1')).toStrictEqual({ id: 'n1', text: 'ünïcode ✓' });
  });

  it('says what is wrong with a bad or cut-short file, with the line', async () => {
    const { dir } = await filled(50);
    const text = await exported(await openDir(dir));
    const cut = text.split('\n').slice(0, 20).join('\n');
    const target = await openDir();
    await expect(importStore(target, Readable.from([cut]))).rejects.toThrow(/cut short .* the 18 records read were imported/);
    const bad = [text.split('\n')[0], '{"collection":"links","record":{"code":"x"}}'].join('\n');
    await expect(importStore(await openDir(), Readable.from([bad]))).rejects.toThrow(/line 2: a record of "links" before its collection line/);
    await expect(importStore(await openDir(), Readable.from(['{"a":1}\n']))).rejects.toThrow(/line 1: not a devtoolbox export/);
    const noKey = [text.split('\n')[0], '{"collection":"links","key":"code"}', '{"collection":"links","record":{"url":"u"}}'].join('\n');
    await expect(importStore(await openDir(), Readable.from([noKey]))).rejects.toThrow(/line 3: the record has no "code"/);
  });

  it('a collection written by name (an import) gets its indexes once its definition is known', async () => {
    const store = await openDir();
    await store.putMany(LINKS, [
      { code: 'a', url: 'u', day: 'd1' },
      { code: 'b', url: 'u', day: 'd2' },
    ]);
    expect(() => store.collection(defineCollection<Link>({ name: 'links', key: 'url' }))).toThrow(/keyed by "code"/);
    const links = store.collection(LINKS);
    expect(await links.query({ index: 'day', eq: 'd2' })).toStrictEqual([{ code: 'b', url: 'u', day: 'd2' }]);
    await links.put({ code: 'c', url: 'u', day: 'd2' });
    expect(await links.count({ index: 'day', eq: 'd2' })).toBe(2);
    expect((await store.scan('links', { after: 'a', limit: 5 })).map((r) => r.id)).toStrictEqual(['b', 'c']);
  });

  it('devtoolbox export FILE | import FILE through the CLI command; refused while the dir is in use', async () => {
    const { dir, links } = await filled(200);
    const errors: string[] = [];
    const io: TransferIo = { stdin: new PassThrough(), stdout: new PassThrough(), err: (t) => errors.push(t) };
    const file = path.join(tempDir(), 'all.jsonl');
    expect(await transferCommand('export', [file], testConfig({ DATA_DIR: dir }), { io })).toBe(0);
    expect(fs.existsSync(`${file}.partial`)).toBe(false);
    expect(errors.at(-1)).toMatch(/^devtoolbox export: 202 of 202 records \(.*\/s\), done\n$/);
    const target = tempDir();
    expect(await transferCommand('import', [file], testConfig({ DATA_DIR: target }), { io })).toBe(0);
    expect(await transferCommand('import', [file], testConfig({ DATA_DIR: target }), { io })).toBe(1);
    expect(errors.at(-1)).toMatch(/not empty/);
    expect(await transferCommand('import', ['--merge', file], testConfig({ DATA_DIR: target }), { io })).toBe(0);
    const store = await openDir(target);
    expect(await store.collection(LINKS).count()).toBe(links.length);
    expect(await transferCommand('export', [], testConfig({ DATA_DIR: target }), { io })).toBe(1);
    expect(errors.at(-1)).toMatch(/another devtoolbox process .* owns DATA_DIR[\s\S]*Stop the server/);
    expect(await transferCommand('export', ['--merge'], testConfig({ DATA_DIR: target }), { io })).toBe(2);
  });
});
