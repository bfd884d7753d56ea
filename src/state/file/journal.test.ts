/**
 * The file store's record journal (./journal.ts): lazy adds are appended as lines, not
 * segment rewrites; a clean close folds them into the segments; a kill -9 loses at most the
 * window not yet flushed, and a delete is never undone by a replay.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { closeAfterEach, tempDir } from '../../../test/harness.js';
import { ROOT } from '../../../test/server-process.js';
import { createLogger } from '../../log.js';
import { defineCollection, openFileStore, type Store } from '../index.js';
import { JOURNAL_FILE, JournalFiles, journalLine, parseJournalLine, readJournal } from './journal.js';

const log = createLogger('silent');
interface Day {
  id: string;
  code: string;
  visits?: number;
}
const DAYS = defineCollection<Day>({ name: 'days', key: 'id', indexes: ['code'], segmentSize: 50, counters: true });
/** Counters without indexes (what link_days is): addMany's one-loop path on the file store. */
interface Flat {
  id: string;
  visits?: number;
  'h:0'?: number;
  'h:1'?: number;
  'h:2'?: number;
}
const FLAT = defineCollection<Flat>({ name: 'flat', key: 'id', segmentSize: 50, counters: true });
const init = (id: string): Day => ({ id, code: id.split('|')[0]! });

const open: Store[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});
const closing = closeAfterEach();
async function store(dir: string): Promise<Store> {
  const s = await openFileStore(dir, { log });
  open.push(s);
  return s;
}
const journals = (dir: string) => fs.readdirSync(dir).filter((f) => JOURNAL_FILE.test(f));
const segments = (dir: string) => fs.readdirSync(dir).filter((f) => f.startsWith('days') && f.endsWith('.json'));

/**
 * Runs `body` (statements after `store` is open on the data dir, with `log` and
 * `defineCollection` in scope) in a child process until it prints DONE, then kills it -9: what
 * it flushed is on disk, nothing was folded at a close.
 */
async function killedAfter(dir: string, name: string, body: string): Promise<void> {
  const script = path.join(dir, '..', `${path.basename(dir)}-${name}.mts`);
  fs.writeFileSync(
    script,
    `import { openFileStore, defineCollection } from ${JSON.stringify(path.join(ROOT, 'src/state/index.ts'))};
     const log = { debug() {}, info() {}, warn() {}, error() {} };
     const store = await openFileStore(process.argv[2], { log });
     ${body}
     console.log('DONE');
     setInterval(() => {}, 1000);`,
  );
  const child = spawn(process.execPath, ['--import', 'tsx', script, dir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  closing({ close: () => child.kill('SIGKILL') });
  let out = '';
  await new Promise<void>((resolve) =>
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('DONE')) resolve();
    }),
  );
  child.kill('SIGKILL');
  await new Promise((r) => child.on('exit', r));
  fs.rmSync(script, { force: true });
}

describe('record journal (file store)', () => {
  it('lazy adds are journal lines, not segment rewrites; a clean close folds them into the segments', async () => {
    const dir = tempDir();
    // Durable adds, folded into the segments by a clean close.
    const seed = await store(dir);
    await seed.putMany(DAYS, Array.from({ length: 200 }, (_, i) => ({ ...init(`c${i}|d`), visits: 1 })));
    await seed.close();
    const a = await store(dir);
    const days = a.collection(DAYS);
    const before = new Map(segments(dir).map((f) => [f, fs.readFileSync(path.join(dir, f), 'utf8')]));
    expect(before.size).toBe(4);
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 200; i++) await days.add(`c${i}|d`, { visits: 1, [`h:${round}`]: 1 }, { init: init(`c${i}|d`), durability: 'lazy' });
      await a.flush();
    }
    // Flushed: on disk in the journal, no segment file rewritten.
    expect(journals(dir)).toStrictEqual(['days.journal.1.log']);
    for (const [f, text] of before) expect(fs.readFileSync(path.join(dir, f), 'utf8')).toBe(text);
    expect(await days.get('c7|d')).toStrictEqual({ id: 'c7|d', code: 'c7', visits: 4, 'h:0': 1, 'h:1': 1, 'h:2': 1 });
    await a.close();
    expect(journals(dir)).toStrictEqual([]);
    const b = await store(dir);
    expect((await b.collection(DAYS).query()).map((r) => r.visits)).toStrictEqual(new Array(200).fill(4));
  });

  it('a line is the id, a tab and the record as it is; lines of the layout before (session 17) replay too; broken lines are skipped', async () => {
    const rec = { id: 'a\t"b"|d', code: 'a', visits: 2, 'r:x.example': 1 };
    const line = journalLine(rec.id, JSON.stringify(rec));
    expect(line).toBe(`"a\\t\\"b\\"|d"\t${JSON.stringify(rec)}\n`);
    expect(parseJournalLine(line.slice(0, -1))).toStrictEqual([rec.id, JSON.stringify(rec)]);
    expect(parseJournalLine(journalLine('x|d', undefined).slice(0, -1))).toStrictEqual(['x|d', undefined]);
    // Not a change: cut short, not JSON, an array or a number for a record, no id string, an old
    // line whose record text is not an object's JSON.
    for (const bad of ['"x|d"\t{"id":"x|d","visi', '"x|d"\t[1]', '"x|d"\t7', '7\t{"id":"7"}', '"x|d"', 'x|d\t{}', '["x|d","{}"', '["x|d",{"id":"x|d"}]', '["x|d","7"]', '["x|d","{\\"id"]', '["x|d"]', ''])
      expect(parseJournalLine(bad), bad).toBeUndefined();
    // A data dir whose journal holds both layouts (an upgrade after a kill -9), then a torn last line.
    const dir = tempDir();
    const a = await store(dir);
    const days = a.collection(DAYS);
    for (let i = 0; i < 120; i++) await days.add(`c${i}|d`, { visits: 1 }, { init: init(`c${i}|d`) });
    await a.close();
    const old = (id: string, json: string | null) => `${JSON.stringify([id, json])}\n`;
    fs.writeFileSync(
      path.join(dir, 'days.journal.1.log'),
      old('c1|d', JSON.stringify({ id: 'c1|d', code: 'c1', visits: 7 })) +
        old('c2|d', null) +
        journalLine('c3|d', JSON.stringify({ id: 'c3|d', code: 'c3', visits: 9 })) +
        journalLine('c1|d', JSON.stringify({ id: 'c1|d', code: 'c1', visits: 8 })) +
        journalLine('c4|d', undefined) +
        '"c5|d"\t{"id":"c5|d","code":"c5","visits":50',
    );
    const b = await store(dir);
    const got = b.collection(DAYS);
    expect(await got.get('c1|d')).toStrictEqual({ id: 'c1|d', code: 'c1', visits: 8 });
    expect(await got.get('c2|d')).toBeUndefined();
    expect(await got.get('c3|d')).toStrictEqual({ id: 'c3|d', code: 'c3', visits: 9 });
    expect(await got.get('c4|d')).toBeUndefined();
    expect(await got.get('c5|d')).toStrictEqual({ id: 'c5|d', code: 'c5', visits: 1 });
    expect(await got.count()).toBe(118);
    expect((await got.query({ index: 'code', eq: 'c3' })).map((r) => r.visits)).toStrictEqual([9]);
  });

  it('a change other than add to a journaled record is journaled too: a delete stays deleted after a replay', async () => {
    const dir = tempDir();
    await killedAfter(
      dir,
      'journal',
      `const days = store.collection(defineCollection({ name: 'days', key: 'id', indexes: ['code'], segmentSize: 50, counters: true }));
       for (let i = 0; i < 20; i++) await days.add('k' + i + '|d', { visits: 5 }, { init: { id: 'k' + i + '|d', code: 'k' + i }, durability: 'lazy' });
       await store.flush();
       for (let i = 0; i < 10; i++) await days.delete('k' + i + '|d');
       await days.update('k10|d', (cur) => ({ ...cur, visits: 100 }));
       await store.flush();`,
    );
    expect(journals(dir).length).toBeGreaterThan(0);
    const b = await store(dir);
    const recs = await b.collection(DAYS).query();
    expect(recs.map((r) => [r.id, r.visits])).toStrictEqual([['k10|d', 100], ...Array.from({ length: 9 }, (_, i) => [`k${i + 11}|d`, 5])]);
  }, 60_000);

  it('a lazy line not yet appended is followed by a later delete or durable rewrite of its record: a replay undoes neither', async () => {
    const dir = tempDir();
    // No flush between the lazy adds and the durable writes: the adds' lines are still queued
    // when the deletes and the putMany (40 % of the segment: a rewrite, not lines) go.
    await killedAfter(
      dir,
      'queued',
      `const DAYS = defineCollection({ name: 'days', key: 'id', indexes: ['code'], segmentSize: 50, counters: true });
       const days = store.collection(DAYS);
       for (let i = 0; i < 40; i++) await days.add('k' + i + '|d', { visits: 5 }, { init: { id: 'k' + i + '|d', code: 'k' + i }, durability: 'lazy' });
       await Promise.all([
         ...Array.from({ length: 10 }, (_, i) => days.delete('k' + i + '|d')),
         store.putMany(DAYS, Array.from({ length: 20 }, (_, i) => ({ id: 'k' + (i + 20) + '|d', code: 'k' + (i + 20), visits: 100 }))),
       ]);`,
    );
    const b = await store(dir);
    const recs = new Map((await b.collection(DAYS).query()).map((r) => [r.id, r.visits]));
    expect(recs.size).toBe(30);
    for (let i = 0; i < 10; i++) expect(recs.has(`k${i}|d`)).toBe(false);
    for (let i = 10; i < 20; i++) expect(recs.get(`k${i}|d`)).toBe(5);
    for (let i = 20; i < 40; i++) expect(recs.get(`k${i}|d`)).toBe(100);
  }, 60_000);

  it('a fold whose journal files cannot be removed: the close still ends and says so; the next start has every record', async () => {
    const dir = tempDir();
    const warnings: string[] = [];
    const a = await openFileStore(dir, { log: { debug() {}, info() {}, error() {}, warn: (m: string) => warnings.push(m) } });
    const days = a.collection(DAYS);
    for (let i = 0; i < 20; i++) await days.add(`k${i}|d`, { visits: 5 }, { init: init(`k${i}|d`), durability: 'lazy' });
    await a.flush();
    await days.update('k3|d', (cur) => ({ ...cur!, visits: 7 }));
    expect(journals(dir)).toHaveLength(1);
    const drop = vi.spyOn(JournalFiles.prototype, 'drop').mockRejectedValue(Object.assign(new Error('EIO: i/o error, rm'), { code: 'EIO' }));
    let drops: number;
    try {
      // Before: the close folded again and again, and never ended.
      await a.close();
      drops = drop.mock.calls.length;
    } finally {
      drop.mockRestore();
    }
    expect(drops).toBe(1);
    expect(warnings).toStrictEqual([expect.stringMatching(/^store: the journal files of days could not be removed after their fold/)]);
    expect(journals(dir)).toHaveLength(1);
    const b = await store(dir);
    const recs = await b.collection(DAYS).query();
    expect(recs.map((r) => [r.id, r.visits])).toStrictEqual(
      Array.from({ length: 20 }, (_, i) => `k${i}|d`)
        .sort()
        .map((id) => [id, id === 'k3|d' ? 7 : 5]),
    );
  });

  it('kill -9 after lazy addMany batches were flushed: the journal replays every item once', async () => {
    const dir = tempDir();
    await killedAfter(
      dir,
      'batches',
      `const days = store.collection(defineCollection({ name: 'flat', key: 'id', segmentSize: 50, counters: true }));
       for (let b = 0; b < 20; b++) {
         const items = Array.from({ length: 32 }, (_, i) => { const id = 'j' + ((b * 32 + i) % 70); return { id, deltas: { visits: 1, ['h:' + (i % 3)]: 2 }, init: { id } }; });
         const out = await days.addMany(items, { durability: 'lazy', once: 'b' + b });
         if (out.some((r) => r.status !== 'fulfilled')) throw new Error('refused');
         if (b % 5 === 4) await store.flush();
       }
       await store.flush();`,
    );
    expect(journals(dir).length).toBeGreaterThan(0);
    const b = await store(dir);
    const recs = await b.collection(FLAT).query();
    // 640 visits over 70 ids: ids j0..j9 got 10 visits, the others 9.
    expect(recs).toHaveLength(70);
    expect(recs.reduce((n, r) => n + (r.visits ?? 0), 0)).toBe(640);
    for (const r of recs) expect(r.visits, String(r.id)).toBe(Number(String(r.id).slice(1)) < 10 ? 10 : 9);
    expect(recs.reduce((n, r) => n + (r['h:0'] ?? 0) + (r['h:1'] ?? 0) + (r['h:2'] ?? 0), 0)).toBe(1280);
  }, 60_000);

  it('kill -9 while adding: every count flushed before survives, none counts more than was added', async () => {
    const dir = tempDir();
    const script = path.join(dir, '..', `${path.basename(dir)}-adder.mts`);
    fs.writeFileSync(
      script,
      `import { openFileStore, defineCollection } from ${JSON.stringify(path.join(ROOT, 'src/state/index.ts'))};
       const log = { debug() {}, info() {}, warn() {}, error() {} };
       const store = await openFileStore(process.argv[2], { log });
       const days = store.collection(defineCollection({ name: 'days', key: 'id', indexes: ['code'], segmentSize: 50, counters: true }));
       const added = new Array(300).fill(0);
       for (let round = 0; ; round++) {
         for (let i = 0; i < 300; i++) {
           if ((i * 7 + round) % 3 === 0) continue;
           added[i]++;
           void days.add('k' + i + '|d', { visits: 1 }, { init: { id: 'k' + i + '|d', code: 'k' + i }, durability: 'lazy' });
         }
         if (round % 4 === 3) { await store.flush(); console.log('FLUSHED ' + JSON.stringify(added)); }
         else await new Promise((r) => setImmediate(r));
       }`,
    );
    const child = spawn(process.execPath, ['--import', 'tsx', script, dir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    closing({ close: () => child.kill('SIGKILL') });
    let buf = '';
    let flushed: number[] = [];
    let untilKill = 5 + Math.floor(Math.random() * 20);
    // Every FLUSHED line the child printed, those read after the kill too: the last one bounds both ways.
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split('\n');
      buf = lines.pop()!;
      for (const l of lines) {
        if (!l.startsWith('FLUSHED ')) continue;
        flushed = JSON.parse(l.slice(8)) as number[];
        if (--untilKill === 0) child.kill('SIGKILL');
      }
    });
    await new Promise((r) => child.stdout!.on('close', r));
    // Reaped too: until then its pid still answers, and the data dir's lock is still its.
    if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.once('exit', r));
    expect(flushed.length).toBe(300);
    fs.rmSync(script, { force: true });
    const replayed = journals(dir);
    expect(replayed.length).toBeGreaterThan(0);
    const b = await store(dir);
    const days = b.collection(DAYS);
    for (let i = 0; i < 300; i++) {
      const v = (await days.get(`k${i}|d`))?.visits ?? 0;
      expect(v, `k${i}`).toBeGreaterThanOrEqual(flushed[i]!);
      // At most the adds of the rounds after the last FLUSHED line (the next would have printed one).
      expect(v, `k${i}`).toBeLessThanOrEqual(flushed[i]! + 4);
    }
    // The replayed files are folded by the next flush: they go (the add's own line may start a new one).
    await days.add('k0|d', { visits: 1 }, { init: init('k0|d') });
    await b.flush();
    expect(journals(dir).filter((f) => replayed.includes(f))).toStrictEqual([]);
    await b.close();
    expect(journals(dir)).toStrictEqual([]);
  }, 60_000);

  it('lazy increments and updates of a table past one segment are journal lines too, and survive a kill -9 once flushed', async () => {
    const dir = tempDir();
    const script = path.join(dir, '..', `${path.basename(dir)}-clicks.mts`);
    fs.writeFileSync(
      script,
      `import { openFileStore, defineCollection } from ${JSON.stringify(path.join(ROOT, 'src/state/index.ts'))};
       const log = { debug() {}, info() {}, warn() {}, error() {} };
       const store = await openFileStore(process.argv[2], { log });
       const def = defineCollection({ name: 'clicks', key: 'code', segmentSize: 50 });
       const clicks = store.collection(def);
       // One write of 200 records: whole segments, not journal lines.
       await store.putMany(def, Array.from({ length: 200 }, (_, i) => ({ code: 'c' + i, n: 0 })));
       console.log('SEEDED');
       await new Promise((r) => process.stdin.once('data', r));
       for (let round = 1; round <= 3; round++) {
         for (let i = 0; i < 200; i += round) await clicks.increment('c' + i, 'n', 1, { init: { code: 'c' + i, n: 0 }, durability: 'lazy' });
         await store.flush();
       }
       for (let i = 0; i < 200; i += 5) await clicks.update('c' + i, (cur) => ({ ...cur, n: cur.n + 10 }), { durability: 'lazy' });
       await store.flush();
       console.log('DONE');
       setInterval(() => {}, 1000);`,
    );
    const child = spawn(process.execPath, ['--import', 'tsx', script, dir], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
    closing({ close: () => child.kill('SIGKILL') });
    let out = '';
    const printed = (what: string) =>
      new Promise<void>((resolve) => {
        const check = () => out.includes(what) && resolve();
        child.stdout!.on('data', (d: Buffer) => {
          out += d.toString();
          check();
        });
        check();
      });
    await printed('SEEDED');
    const files = () => fs.readdirSync(dir).filter((f) => f.startsWith('clicks') && f.endsWith('.json'));
    const before = new Map(files().map((f) => [f, fs.readFileSync(path.join(dir, f), 'utf8')]));
    expect(before.size).toBe(4);
    child.stdin!.write('go\n');
    await printed('DONE');
    child.kill('SIGKILL');
    await new Promise((r) => child.on('exit', r));
    fs.rmSync(script, { force: true });
    // Flushed as lines: no segment file was rewritten by the increments and updates.
    for (const [f, text] of before) expect(fs.readFileSync(path.join(dir, f), 'utf8')).toBe(text);
    expect(journals(dir)).toStrictEqual(['clicks.journal.1.log']);
    const b = await store(dir);
    const clicks = b.collection(defineCollection<{ code: string; n: number }>({ name: 'clicks', key: 'code', segmentSize: 50 }));
    // c0 counted in rounds 1, 2 and 3; c2 in 1 and 2; c3 in 1 and 3; c1 in round 1 only.
    // Every fifth updated once more (+10).
    const n = (i: number) => [1, 2, 3].filter((r) => i % r === 0).length + (i % 5 === 0 ? 10 : 0);
    for (let i = 0; i < 200; i++) expect((await clicks.get(`c${i}`))?.n, `c${i}`).toBe(n(i));
  }, 60_000);

  it('an add that leaves the indexed fields alone keeps the index right; one that adds to an indexed counter moves it', async () => {
    const dir = tempDir();
    const a = await store(dir);
    const Scored = defineCollection<{ id: string; code: string; score?: number }>({ name: 'scored', key: 'id', indexes: ['code', 'score'], segmentSize: 50, counters: true });
    const scored = a.collection(Scored);
    for (let i = 0; i < 120; i++) await scored.add(`k${i}`, { other: 1 }, { init: { id: `k${i}`, code: `c${i % 3}` }, durability: 'lazy' });
    for (let i = 0; i < 120; i++) await scored.add(`k${i}`, { other: 1 }, { init: { id: `k${i}`, code: `c${i % 3}` }, durability: 'lazy' });
    expect((await scored.query({ index: 'code', eq: 'c1' })).map((r) => r.id)).toStrictEqual(Array.from({ length: 40 }, (_, j) => `k${3 * j + 1}`).sort());
    expect(await scored.count({ index: 'score', gte: 0 })).toBe(0);
    await scored.add('k5', { score: 7 }, { init: { id: 'k5', code: 'c2' }, durability: 'lazy' });
    await scored.add('k5', { score: 2 }, { init: { id: 'k5', code: 'c2' }, durability: 'lazy' });
    expect((await scored.query({ index: 'score', gte: 0 })).map((r) => [r.id, r.score])).toStrictEqual([['k5', 9]]);
    expect(await scored.count({ index: 'score', eq: 7 })).toBe(0);
    await a.close();
    const b = await store(dir);
    expect((await b.collection(Scored).query({ index: 'score', eq: 9 })).map((r) => r.id)).toStrictEqual(['k5']);
    expect(await b.collection(Scored).count({ index: 'code', eq: 'c1' })).toBe(40);
  });
});

/** The state a start-up would replay from a collection's journal files: id → JSON (undefined: deleted). */
function replayed(dir: string, collection: string): Map<string, string | undefined> {
  const out = new Map<string, string | undefined>();
  for (const f of journals(dir).filter((n) => n.startsWith(`${collection}.journal.`)).sort((a, b) => Number(a.split('.')[2]) - Number(b.split('.')[2])))
    for (const [id, json] of readJournal(path.join(dir, f))) out.set(id, json);
  return out;
}

interface Link {
  id: string;
  url: string;
  owner?: string;
}
const LINKS = defineCollection<Link>({ name: 'links', key: 'id', indexes: ['owner'], segmentSize: 100 });

describe('durable writes as journal lines (file store)', () => {
  it('inserts and updates of a few records are journal lines, not segment rewrites; every acknowledged one survives a kill -9', async () => {
    const dir = tempDir();
    await killedAfter(
      dir,
      'durable',
      `const links = store.collection(defineCollection({ name: 'links', key: 'id', indexes: ['owner'], segmentSize: 100 }));
       // One at a time: each its own flush, of one record.
       for (let i = 0; i < 60; i++) await links.put({ id: 'l' + i, url: 'https://a.example/' + i, owner: 'o' + (i % 3) });
       for (let i = 0; i < 60; i += 4) await links.update('l' + i, (cur) => ({ ...cur, url: cur.url + '?v2' }));
       // Eight at once: still far below a quarter of a segment per flush.
       await Promise.all(Array.from({ length: 8 }, (_, i) => links.insert({ id: 'm' + i, url: 'https://m.example/' + i })));`,
    );
    // No segment file was ever written: every change is a line of the journal.
    expect(fs.readdirSync(dir).filter((f) => f.startsWith('links') && f.endsWith('.json'))).toStrictEqual([]);
    expect(journals(dir)).toStrictEqual(['links.journal.1.log']);
    expect(replayed(dir, 'links').size).toBe(68);
    const b = await store(dir);
    const links = b.collection(LINKS);
    expect(await links.count()).toBe(68);
    for (let i = 0; i < 60; i++) expect((await links.get(`l${i}`))?.url, `l${i}`).toBe(`https://a.example/${i}${i % 4 === 0 ? '?v2' : ''}`);
    expect((await links.query({ index: 'owner', eq: 'o1' })).map((r) => r.id)).toHaveLength(20);
    // The replayed journal is folded by the next flush: the records are in a segment file from then on.
    await links.put({ id: 'after', url: 'https://after.example/' });
    await b.flush();
    await b.close();
    expect(journals(dir)).toStrictEqual([]);
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'links.json'), 'utf8')).records).toHaveLength(69);
  }, 60_000);

  it('a write of a quarter of a segment or more, and a delete, rewrite their segments; a delete of a journaled record also gets its line', async () => {
    const dir = tempDir();
    const a = await store(dir);
    const links = a.collection(LINKS);
    await a.putMany(LINKS, Array.from({ length: 25 }, (_, i) => ({ id: `b${i}`, url: `https://b.example/${i}` })));
    expect(journals(dir)).toStrictEqual([]);
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'links.json'), 'utf8')).records).toHaveLength(25);
    await links.put({ id: 'j', url: 'https://j.example/' });
    expect(journals(dir)).toStrictEqual(['links.journal.1.log']);
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'links.json'), 'utf8')).records).toHaveLength(25);
    await links.delete('b3');
    await links.delete('j');
    const segment = (JSON.parse(fs.readFileSync(path.join(dir, 'links.json'), 'utf8')) as { records: Link[] }).records.map((r) => r.id);
    expect(segment).toHaveLength(24);
    expect(segment).not.toContain('b3');
    expect(replayed(dir, 'links')).toStrictEqual(new Map([['j', undefined]]));
  });

  it('a delete of a record whose insert went to the journal (in its flush, during it, after it) stays deleted after a kill -9', async () => {
    const dir = tempDir();
    // Each delete waits a different number of turns after its put: some land in the put's own
    // flush (nothing journaled), others while that flush appends the put's line or after it.
    await killedAfter(
      dir,
      'race',
      `const links = store.collection(defineCollection({ name: 'links', key: 'id', indexes: ['owner'], segmentSize: 100 }));
       const turns = (n) => n === 0 ? Promise.resolve() : new Promise((r) => setImmediate(r)).then(() => turns(n - 1));
       for (let i = 0; i < 40; i++) {
         const put = links.put({ id: 'r' + i, url: 'https://r.example/' + i });
         await turns(i % 8);
         const del = links.delete('r' + i);
         await Promise.all([put, del]);
       }
       await links.put({ id: 'kept', url: 'https://kept.example/' });`,
    );
    const b = await store(dir);
    expect((await b.collection(LINKS).query()).map((r) => r.id)).toStrictEqual(['kept']);
  }, 60_000);

  it('a flush that fails after appending its lines puts the committed state back in the journal by itself: no refused write comes back after a kill -9', async () => {
    const dir = tempDir();
    await killedAfter(
      dir,
      'refused',
      `const fs = await import('node:fs');
       const links = store.collection(defineCollection({ name: 'links', key: 'id', indexes: ['owner'], segmentSize: 100 }));
       const tiny = store.collection(defineCollection({ name: 'tiny', key: 'id', segmentSize: 1 }));
       await links.put({ id: 'before', url: 'https://before.example/' });
       // tiny's next segment file cannot be written: the flush fails after the links' line is appended.
       fs.mkdirSync(process.argv[2] + '/.tiny.json.tmp');
       const out = await Promise.allSettled([links.put({ id: 'refused', url: 'https://refused.example/' }), tiny.put({ id: 't' })]);
       if (out.some((r) => r.status !== 'rejected')) throw new Error('not refused: ' + JSON.stringify(out));
       fs.rmdirSync(process.argv[2] + '/.tiny.json.tmp');
       // No other write: the retry alone appends the line that undoes it.
       while (store.health().ok === false) await new Promise((r) => setTimeout(r, 50));`,
    );
    expect(replayed(dir, 'links').get('refused')).toBeUndefined();
    expect([...replayed(dir, 'links').keys()]).toContain('refused');
    const b = await store(dir);
    expect((await b.collection(LINKS).query()).map((r) => r.id)).toStrictEqual(['before']);
  }, 60_000);
});

describe('JournalFiles', () => {
  it('a new file makes the directory entry durable once; an append cut short is cut back off the file, or else ended by the next one', async () => {
    const dir = tempDir();
    let syncs = 0;
    const files = new JournalFiles(dir, true, async () => {
      syncs++;
    });
    await files.append('links', 1, journalLine('a', '{"id":"a"}'));
    await files.append('links', 1, journalLine('b', '{"id":"b"}'));
    expect(syncs).toBe(1);
    await files.append('links', 2, journalLine('c', '{"id":"c"}'));
    expect(syncs).toBe(2);
    const file = path.join(dir, 'links.journal.1.log');
    const whole = fs.readFileSync(file, 'utf8');
    // The disk fills up halfway through a write: half a line is in the file.
    const fh = await fsp.open(path.join(dir, 'probe'), 'w');
    const proto = Object.getPrototypeOf(fh) as { write: (...args: unknown[]) => Promise<unknown>; truncate: (...args: unknown[]) => Promise<unknown> };
    await fh.close();
    const real = proto.write;
    /** An append the disk cuts short after 10 bytes (ENOSPC); with `cutFails`, the truncate after it fails too (EIO). */
    const appendCutShort = async (id: string, cutFails = false) => {
      const write = vi.spyOn(proto, 'write').mockImplementationOnce(async function (this: unknown, buf: unknown) {
        await real.call(this, (buf as Buffer).subarray(0, 10));
        throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
      });
      const truncate = cutFails ? vi.spyOn(proto, 'truncate').mockRejectedValueOnce(Object.assign(new Error('EIO: i/o error'), { code: 'EIO' })) : undefined;
      try {
        await expect(files.append('links', 1, journalLine(id, `{"id":"${id}","url":"https://${id}.example/"}`))).rejects.toThrow(/ENOSPC/);
      } finally {
        write.mockRestore();
        truncate?.mockRestore();
      }
    };
    await appendCutShort('d');
    // Cut back: the file is as it was before the failed append.
    expect(fs.readFileSync(file, 'utf8')).toBe(whole);
    await files.append('links', 1, journalLine('e', '{"id":"e"}'));
    // The same, and the cut fails too: the part stays, and the next append starts a line of its own.
    await appendCutShort('f', true);
    await files.append('links', 1, journalLine('g', '{"id":"g"}'));
    // Its length learnt again after that append: the next failure is cut back once more.
    const afterG = fs.readFileSync(file, 'utf8');
    await appendCutShort('h');
    expect(fs.readFileSync(file, 'utf8')).toBe(afterG);
    await files.close();
    let skipped = 0;
    expect([...readJournal(file, () => skipped++)].map(([id]) => id)).toStrictEqual(['a', 'b', 'e', 'g']);
    expect(skipped).toBe(1);
  });

  it('a replay skips a whole line that is not a change and says so in the log', async () => {
    const dir = tempDir();
    const a = await store(dir);
    await a.collection(LINKS).put({ id: 'x', url: 'https://x.example/' });
    await a.close();
    fs.writeFileSync(
      path.join(dir, 'links.journal.1.log'),
      journalLine('y', JSON.stringify({ id: 'y', url: 'https://y.example/' })) + '"z"\t{"id":"z","ur\n' + journalLine('w', JSON.stringify({ id: 'w', url: 'https://w.example/' })),
    );
    const warnings: string[] = [];
    const b = await openFileStore(dir, { log: { debug() {}, info() {}, error() {}, warn: (m: string) => warnings.push(m) } });
    open.push(b);
    expect((await b.collection(LINKS).query()).map((r) => r.id)).toStrictEqual(['w', 'x', 'y']);
    expect(warnings).toStrictEqual([expect.stringMatching(/^store: 1 line\(s\) of .*links\.journal\.1\.log are not changes/)]);
  });
});
