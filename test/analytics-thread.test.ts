// The analytics thread (ANALYTICS_THREAD=worker, file store): its own store in DATA_DIR/analytics,
// the first start's move of the link-day records there, the same records read back with the
// counting in the main thread again and by the export, a close that writes what was counted,
// and a thread that fails. The analytics themselves run on it in test/links-analytics.test.ts.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { manualClock } from '../src/core/clock.js';
import { transferCommand } from '../src/state/transfer-cli.js';
import { openFileStore } from '../src/state/index.js';
import { createLogger } from '../src/log.js';
import { families } from '../src/tools/index.js';
import { dayId, LINK_DAYS } from '../src/tools/shortener/analytics-counters.js';
import { visitAnalytics } from '../src/tools/shortener/analytics.js';
import { analyticsThreadOf, MAX_NUMBERED, SLOTS } from '../src/tools/shortener/analytics-thread.js';
import { UaCache } from '../src/tools/shortener/analytics-ua.js';
import { COUNTER_CAPS } from '../src/tools/shortener/analytics-counters.js';
import { closeAfterEach, listenTestApp, tempDir, testConfig, type ListeningApp } from './harness.js';
import { killServerProcesses, startServerProcess } from './server-process.js';

const closing = closeAfterEach();
const T0 = Date.parse('2026-11-22T09:00:00.000Z');
const DAY1 = '2026-11-22';
const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0';

type Json = Record<string, unknown>;

async function start(dir: string, thread: 'main' | 'worker'): Promise<ListeningApp> {
  return listenTestApp({ env: { DATA_DIR: dir, ANALYTICS_THREAD: thread }, overrides: { clock: manualClock(T0) } });
}

async function call(n: ListeningApp, method: string, p: string, body?: unknown, key?: string): Promise<Response> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (key) headers.authorization = `Bearer ${key}`;
  return fetch(n.url + p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), redirect: 'manual' });
}

async function visit(n: ListeningApp, code: string, ua: string, referer?: string): Promise<void> {
  const r = await fetch(`${n.url}/s/${code}`, { headers: { 'user-agent': ua, ...(referer ? { referer } : {}) }, redirect: 'manual' });
  await r.arrayBuffer();
  expect(r.status).toBe(302);
}

async function stats(n: ListeningApp, code: string, key: string): Promise<Json> {
  const r = await call(n, 'GET', `/api/shorten?code=${code}`, undefined, key);
  expect(r.status).toBe(200);
  return (await r.json()) as Json;
}

/** A link with three visits (two browsers, one referrer), written; resolves with its owner's key. */
async function seed(n: ListeningApp, code: string): Promise<string> {
  const r = await call(n, 'POST', '/api/auth/register', { email: `${code}@example.com` });
  const key = ((await r.json()) as { api_key: string }).api_key;
  expect((await call(n, 'POST', '/api/shorten', { url: `https://example.com/${code}`, code }, key)).status).toBe(201);
  await visit(n, code, CHROME, 'https://news.example.com/a');
  await visit(n, code, CHROME);
  await visit(n, code, FIREFOX);
  return key;
}

/** The link-day records a file store in `dir` holds (opened after the server closed). */
async function daysIn(dir: string): Promise<string[]> {
  const store = await openFileStore(dir, { log: createLogger('silent') });
  try {
    return (await store.collection(LINK_DAYS).query()).map((r) => r.id);
  } finally {
    await store.close();
  }
}

describe('the analytics thread (ANALYTICS_THREAD=worker)', () => {
  it('starts at the first visit, writes the link-day records to DATA_DIR/analytics, and the stats read them back', async () => {
    const dir = tempDir();
    const n = closing(await start(dir, 'worker'));
    // Started at the first visit, not before (a server that serves no redirect runs no thread).
    const r = await call(n, 'POST', '/api/auth/register', { email: 'idle@example.com' });
    expect(r.status).toBe(201);
    expect([analyticsThreadOf(n.services)!.running, fs.existsSync(path.join(dir, 'analytics'))]).toStrictEqual([false, false]);
    // Reads, a delete and a flush of its (empty) store answer without starting it.
    const idle = (await call(n, 'POST', '/api/shorten', { url: 'https://example.com/idle', code: 'thr-idle' }, ((await r.json()) as { api_key: string }).api_key)).status;
    expect(idle).toBe(201);
    const days = n.services.store.collection(LINK_DAYS);
    expect([await days.get(dayId(DAY1, 'thr-idle')), await days.getMany(['a', 'b']), await days.count(), await days.delete('x')]).toStrictEqual([undefined, [undefined, undefined], 0, false]);
    await n.services.store.flush();
    expect(analyticsThreadOf(n.services)!.running).toBe(false);
    const key = await seed(n, 'thr-one');
    expect(analyticsThreadOf(n.services)!.running).toBe(true);
    await visitAnalytics(n.services).flush();
    const s = await stats(n, 'thr-one', key);
    expect([s.clicks, s.browsers]).toStrictEqual([3, [{ name: 'Chrome', visits: 2 }, { name: 'Firefox', visits: 1 }]]);
    await n.close();
    expect(await daysIn(path.join(dir, 'analytics'))).toStrictEqual([dayId(DAY1, 'thr-one')]);
    expect(await daysIn(dir)).toStrictEqual([]);
  });

  it('a close writes what was counted and not written yet (the ring drained first)', async () => {
    const dir = tempDir();
    const n = await start(dir, 'worker');
    const key = await seed(n, 'thr-close');
    await n.close();
    const again = closing(await start(dir, 'worker'));
    expect((await stats(again, 'thr-close', key)).clicks).toBe(3);
  });

  it('the first start moves the records counted in the main thread there; counted in the main thread again, they are read there', async () => {
    const dir = tempDir();
    const before = await start(dir, 'main');
    const key = await seed(before, 'thr-move');
    await before.close();
    expect(await daysIn(dir)).toStrictEqual([dayId(DAY1, 'thr-move')]);
    expect(fs.existsSync(path.join(dir, 'analytics'))).toBe(false);

    const worker = await start(dir, 'worker');
    const moved = await stats(worker, 'thr-move', key);
    expect(moved.clicks).toBe(3);
    await visit(worker, 'thr-move', FIREFOX);
    await worker.close();
    expect(await daysIn(dir)).toStrictEqual([]);
    expect(await daysIn(path.join(dir, 'analytics'))).toStrictEqual([dayId(DAY1, 'thr-move')]);

    // Back in the main thread: the records stay in DATA_DIR/analytics, read and added to there.
    const main = await start(dir, 'main');
    await visit(main, 'thr-move', CHROME);
    await visitAnalytics(main.services).flush();
    const s = await stats(main, 'thr-move', key);
    expect([s.clicks, s.browsers]).toStrictEqual([5, [{ name: 'Chrome', visits: 3 }, { name: 'Firefox', visits: 2 }]]);
    await main.close();
    expect(await daysIn(dir)).toStrictEqual([]);

    // The export (a command-line tool on the stopped server's dir) holds them.
    const file = path.join(tempDir(), 'all.jsonl');
    const known = families.flatMap((f) => f.collections ?? []);
    expect(await transferCommand('export', [file], testConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent' }), { known })).toBe(0);
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Json);
    const day = lines.find((l) => l.collection === 'link_days' && 'record' in l)?.record as Json | undefined;
    expect(day).toMatchObject({ id: dayId(DAY1, 'thr-move'), clicks: 5, 'br:Chrome': 3, 'br:Firefox': 2 });
    // …and an import into a fresh dir with the thread reads the same.
    const fresh = tempDir();
    expect(await transferCommand('import', [file], testConfig({ DATA_DIR: fresh, LOG_LEVEL: 'silent' }), { known })).toBe(0);
    const imported = closing(await start(fresh, 'worker'));
    expect((await stats(imported, 'thr-move', key)).clicks).toBe(5);
  });

  it('a move into DATA_DIR/analytics cut short is finished by a server counting in its main thread, and by an export', async () => {
    /** A data dir as a first start with the thread leaves it when stopped midway: cut-a moved (in both stores), cut-b not yet. */
    const cutShort = async (): Promise<string> => {
      const dir = tempDir();
      const log = createLogger('silent');
      const main = await openFileStore(dir, { log });
      const moved = await openFileStore(path.join(dir, 'analytics'), { log });
      for (const [code, clicks] of [['cut-a', 2], ['cut-b', 3]] as const) await main.collection(LINK_DAYS).add(dayId(DAY1, code), { clicks }, { init: { id: dayId(DAY1, code) } });
      await moved.collection(LINK_DAYS).add(dayId(DAY1, 'cut-a'), { clicks: 2 }, { init: { id: dayId(DAY1, 'cut-a') } });
      await main.close();
      await moved.close();
      return dir;
    };
    const both = [dayId(DAY1, 'cut-a'), dayId(DAY1, 'cut-b')];

    const dir = await cutShort();
    const n = await start(dir, 'main');
    expect((await n.services.store.collection(LINK_DAYS).getMany(both)).map((r) => r?.clicks)).toStrictEqual([2, 3]);
    await n.close();
    expect([await daysIn(dir), await daysIn(path.join(dir, 'analytics'))]).toStrictEqual([[], both]);

    const other = await cutShort();
    const file = path.join(tempDir(), 'all.jsonl');
    const known = families.flatMap((f) => f.collections ?? []);
    expect(await transferCommand('export', [file], testConfig({ DATA_DIR: other, LOG_LEVEL: 'silent' }), { known })).toBe(0);
    const days = fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Json).filter((l) => l.collection === 'link_days' && 'record' in l);
    expect(days.map((l) => [(l.record as Json).id, (l.record as Json).clicks])).toStrictEqual([[both[0], 2], [both[1], 3]]);
    expect([await daysIn(other), await daysIn(path.join(other, 'analytics'))]).toStrictEqual([[], both]);
  });

  it.each(['worker', 'main'] as const)('a stats read while the counts are written never misses or doubles a chunk landing (readBetweenWrites; counted in the %s thread)', async (thread) => {
    const n = closing(await start(tempDir(), thread));
    const key = await seed(n, 'thr-race');
    await visitAnalytics(n.services).flush();
    // Visits go on (8 at a time) while the clicks are read again and again: each read lies between
    // the visits answered before it began and those sent before it ended (3 seeded).
    let sent = 3;
    let answered = 3;
    let visiting = true;
    const visitor = async () => {
      while (visiting) {
        sent++;
        await visit(n, 'thr-race', CHROME);
        answered++;
      }
    };
    const visitors = Array.from({ length: 8 }, visitor);
    const outside: string[] = [];
    let reads = 0;
    for (const until = Date.now() + 3_000; Date.now() < until; reads++) {
      const lo = answered;
      const clicks = (await stats(n, 'thr-race', key)).clicks as number;
      const hi = sent;
      if (clicks < lo || clicks > hi) outside.push(`${clicks} not in [${lo}, ${hi}]`);
    }
    visiting = false;
    await Promise.all(visitors);
    expect([reads > 20, outside]).toStrictEqual([true, []]);
    await visitAnalytics(n.services).flush();
    expect((await stats(n, 'thr-race', key)).clicks).toBe(sent);
  });

  it('a thread that fails: /healthz says so (503), redirects still answer', async () => {
    const n = closing(await start(tempDir(), 'worker'));
    await seed(n, 'thr-fail');
    await analyticsThreadOf(n.services)!.call('test.exit').catch(() => {});
    await expect.poll(async () => (await fetch(`${n.url}/healthz`)).status).toBe(503);
    const h = (await (await fetch(`${n.url}/healthz`)).json()) as Json;
    expect(JSON.stringify(h)).toContain('analytics thread');
    await visit(n, 'thr-fail', CHROME);
  });

  it('a hostile spread of profiles: more than the ring and the numbering hold at once, every visit counted, in its own profile', async () => {
    // The thread of a server (attached to its services: a write asks them for the roll-up's position).
    const n = closing(await start(tempDir(), 'worker'));
    const thread = analyticsThreadOf(n.services)!;
    const ua = new UaCache();
    const chrome = ua.info(CHROME);
    const firefox = ua.info(FIREFOX);
    // Distinct referrer hosts: a new profile nearly every visit, put faster than the thread drains
    // (the full ring's visits go as messages), numbered anew past MAX_NUMBERED.
    const visits = 2 * MAX_NUMBERED + 10_000;
    expect(visits).toBeGreaterThan(SLOTS);
    for (let i = 0; i < visits; i++) thread.put('thr-many', i % 3 === 0 ? firefox : chrome, `h${i}.example`, T0);
    const [day] = await thread.call<{ day: string; delta: { visits: number; referrers: Map<string, number>; browsers: Map<string, number> } }[]>('unwritten', 'thr-many');
    expect(day!.day).toBe(DAY1);
    expect(day!.delta.visits).toBe(visits);
    expect(day!.delta.browsers).toStrictEqual(new Map([['Chrome', visits - Math.ceil(visits / 3)], ['Firefox', Math.ceil(visits / 3)]]));
    expect([day!.delta.referrers.size, day!.delta.referrers.get('other')]).toStrictEqual([COUNTER_CAPS.referrers + 1, visits - COUNTER_CAPS.referrers]);
    // Both threads forgot the two rounds of profiles numbered before the last (every visit naming them counted).
    expect(await thread.call<number>('test.profiles')).toBe(visits - 2 * MAX_NUMBERED);
  });

  it('`devtoolbox serve` runs it too: a stop (SIGTERM) writes every visit there, read after a restart; ANALYTICS_THREAD_PROF profiles it', async () => {
    const dir = tempDir();
    const prof = tempDir();
    const env = { DATA_DIR: dir, ANALYTICS_THREAD: 'worker', RATE_LIMITS: 'off' };
    const first = await startServerProcess({ ...env, ANALYTICS_THREAD_PROF: prof });
    const r = await fetch(`${first.base}/api/shorten`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url: 'https://example.com/p', code: 'thr-proc' }) });
    expect(r.status).toBe(201);
    for (let i = 0; i < 20; i++) {
      const v = await fetch(`${first.base}/s/thr-proc`, { headers: { 'user-agent': i % 2 ? CHROME : FIREFOX }, redirect: 'manual' });
      await v.arrayBuffer();
      expect(v.status).toBe(302);
    }
    expect(await first.stop('SIGTERM')).toBe(null);
    // The benches' profile of the thread (bench/links-steady.ts), written as it closed.
    const profiles = fs.readdirSync(prof);
    expect(profiles).toHaveLength(1);
    expect(profiles[0]).toMatch(/^analytics-thread-\d+-\d+\.cpuprofile$/);
    const profile = JSON.parse(fs.readFileSync(path.join(prof, profiles[0]!), 'utf8')) as { nodes: unknown[]; startTime: number; endTime: number };
    expect(profile.nodes.length).toBeGreaterThan(0);
    expect(profile.endTime).toBeGreaterThan(profile.startTime);
    // The day's record (two, should the visits straddle midnight UTC).
    expect([...new Set((await daysIn(path.join(dir, 'analytics'))).map((id) => id.slice(11)))]).toStrictEqual(['thr-proc']);
    const second = await startServerProcess(env);
    const s = (await (await fetch(`${second.base}/api/shorten?code=thr-proc`)).json()) as Json;
    expect(s.clicks).toBe(20);
    await second.stop('SIGTERM');
  });
});

afterAll(() => killServerProcesses());
