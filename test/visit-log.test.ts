// The analytics thread's visit log (src/tools/shortener/visit-log.ts; docs/shortener.md, "The
// visit log"): its lines read back as written by hand, and kill -9 of a process counting
// visits, in the middle of a batch of link-day writes and after one, then a restart that counts
// every visit once; the same through `devtoolbox serve` processes, replayed by the analytics
// thread, by a server counting in its main thread and by an export.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../src/log.js';
import { openFileStore } from '../src/state/index.js';
import { transferCommand } from '../src/state/transfer-cli.js';
import { loadConfig } from '../src/config.js';
import { manifests, settleForCli } from '../src/tools/manifests.js';
import { LINK_DAYS, type LinkDay } from '../src/tools/shortener/analytics-counters.js';
import { collectUnreplayed, listVisitLogs, readVisitLogs, VisitLog, visitLogName } from '../src/tools/shortener/visit-log.js';
import { VisitAnalytics } from '../src/tools/shortener/analytics.js';
import { UaCache } from '../src/tools/shortener/analytics-ua.js';
import { systemClock } from '../src/core/clock.js';
import { NO_METRICS } from '../src/metrics.js';
import { closeAfterEach, listenTestApp, tempDir } from './harness.js';
import { analyticsThreadOf } from '../src/tools/shortener/analytics-thread.js';
import { killServerProcesses, ROOT, startServerProcess } from './server-process.js';

const closing = closeAfterEach();
afterAll(() => killServerProcesses());
const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';

/** The link-day records of a file store in `dir` (opened after its process ended). */
async function records(dir: string): Promise<LinkDay[]> {
  const store = await openFileStore(dir, { log: createLogger('silent') });
  try {
    return await store.collection(LINK_DAYS).query();
  } finally {
    await store.close();
  }
}

/** Sums a field of the records by code (the id's part after the day). */
function byCode(recs: readonly LinkDay[], field: 'clicks' | 'bots'): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of recs) out.set(r.id.slice(11), (out.get(r.id.slice(11)) ?? 0) + (r[field] ?? 0));
  return out;
}

describe('the visit log read back', () => {
  it('profiles, visits, a deletion that hides what came before it (in older files too), a last line cut short, lines that do not parse', () => {
    const dir = tempDir();
    const t = Date.parse('2026-11-29T10:15:00.000Z');
    const write = (gen: number, text: string) => fs.writeFileSync(path.join(dir, visitLogName(gen)), text);
    write(
      5,
      [
        '#1\t[false,"Chrome","Windows","desktop","news.example.com"]',
        '#2\t[true,"Googlebot","other","bot",""]',
        `abc\t1\t${t}`,
        `abc\t1\t${t + 1}`,
        `abc\t2\t${t + 2}`,
        `gone\t1\t${t}`,
        `xyz\t1\t${t + 86_400_000}`,
        // Not lines of the log: a profile never defined, a bad code, a bad time, a bad profile.
        `abc\t9\t${t}`,
        `a b\t1\t${t}`,
        `abc\t1\tsoon`,
        '#3\t[false,"Chrome","Windows","spaceship",""]',
        '',
      ].join('\n'),
    );
    write(7, ['#1\t[false,"Firefox","Linux","desktop","direct"]', `gone\t1\t${t + 5}`, '!gone', `gone\t1\t${t + 9}`, `abc\t1\t${t + 3}`, `abc\t1\t${t + 4}`].join('\n'));
    // The files come back oldest first, whatever the directory's order.
    expect(listVisitLogs(dir).map((f) => f.gen)).toStrictEqual([5, 7]);
    const read = readVisitLogs(listVisitLogs(dir));
    expect(read.skipped).toBe(4);
    const [f5, f7] = read.files;
    expect([...f5!.days.keys()].sort()).toStrictEqual(['2026-11-29|abc', '2026-11-30|xyz']);
    const abc5 = f5!.days.get('2026-11-29|abc')!.counts;
    expect(abc5.fields).toMatchObject({ clicks: 2, bots: 1, 'h:10': 2, 'ref:news.example.com': 2, 'br:Chrome': 2, 'os:Windows': 2, 'dev:desktop': 2, 'bot:Googlebot': 1 });
    expect(abc5.last).toBe(t + 1);
    // After `!gone`: only the visit that followed it; `abc`'s last line has no newline (a write cut short).
    expect([...f7!.days.keys()].sort()).toStrictEqual(['2026-11-29|abc', '2026-11-29|gone']);
    expect(f7!.days.get('2026-11-29|gone')!.counts).toMatchObject({ n: 1, last: t + 9 });
    expect(f7!.days.get('2026-11-29|abc')!.counts).toMatchObject({ n: 1, last: t + 3 });
    expect(read.visits).toBe(8);
  });
});

/** Clicks and bots of code cc<i> in round r of the child (test/fixtures/visit-log-child.ts): (i % 7) + r visits, every third by Googlebot. */
function visitsOf(i: number, r: number): { clicks: number; bots: number } {
  const n = (i % 7) + r;
  const bots = Math.floor(n / 3);
  return { clicks: n - bots, bots };
}

/** Runs the child for a round; resolves with what it printed once `until` says so (then it is killed with SIGKILL) or it exits. */
function runChild(dir: string, round: string, holdAfter: number, until: (lines: string[]) => boolean): Promise<string[]> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test/fixtures/visit-log-child.ts'), dir, round, String(holdAfter)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  closing({ close: () => void child.kill('SIGKILL') });
  const lines: string[] = [];
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    const parts = buf.split('\n');
    buf = parts.pop()!;
    lines.push(...parts);
    if (until(lines)) child.kill('SIGKILL');
  });
  return new Promise((resolve) => child.on('exit', () => resolve(lines)));
}

describe('a visit log that cannot be written', () => {
  it('ends for the process (an ERROR line), the records are written every 250 ms again, tagged past the lines already logged, which a replay then leaves out', async () => {
    const dir = tempDir();
    const errors: string[] = [];
    const log = { ...createLogger('silent'), error: (msg: string) => void errors.push(msg) };
    const store = await openFileStore(dir, { log: createLogger('silent') });
    closing({ close: () => store.close() });
    const visitLog = new VisitLog(dir, log);
    const analytics = new VisitAnalytics({ store, clock: systemClock, log, metrics: NO_METRICS }, { sweep: false, rollUp: { through: async () => '2000-01-01', late: async () => {} }, visitLog: { log: visitLog, batchMs: 600_000 } });
    closing({ close: () => analytics.close() });
    const ua = new UaCache().info(CHROME);
    for (let i = 0; i < 5; i++) analytics.count('vlog-full', ua, 'direct', Date.now());
    visitLog.sync();
    const gen = visitLog.gen;
    const full = vi.spyOn(fs, 'writeSync').mockImplementation(() => {
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    });
    for (let i = 0; i < 3; i++) analytics.count('vlog-full', ua, 'direct', Date.now());
    visitLog.sync();
    full.mockRestore();
    expect(visitLog.broken).toBe(true);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/writing the visit log failed/);
    // Written without being asked (every 250 ms now), with the last file's generation.
    await vi.waitFor(async () => expect(await store.collection(LINK_DAYS).query()).toMatchObject([{ clicks: 8, logGen: gen }]), { timeout: 5000 });
    // A crash now: the file's five lines are in the record, which says so: nothing is due again.
    expect(await collectUnreplayed(listVisitLogs(dir), store, createLogger('silent'))).toStrictEqual([]);
    expect(readVisitLogs(listVisitLogs(dir)).visits).toBe(5);
  });
});

describe('a stop with the visit log', () => {
  it('while the store refuses the link-day writes: the counts stay in the log, counted once at the next start, written at its stop', async () => {
    const dir = tempDir();
    const env = { DATA_DIR: dir, ANALYTICS_THREAD: 'worker' };
    const first = await listenTestApp({ env });
    closing(first);
    expect((await fetch(`${first.url}/api/shorten`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url: 'https://example.com/s', code: 'vlog-stop' }) })).status).toBe(201);
    for (let i = 0; i < 6; i++) expect((await fetch(`${first.url}/s/vlog-stop`, { headers: { 'user-agent': CHROME }, redirect: 'manual' })).status).toBe(302);
    const thread = analyticsThreadOf(first.services)!;
    await thread.call('test.refuseDayWrites', -1);
    await first.close();
    const analytics = path.join(dir, 'analytics');
    expect(byCode(await records(analytics), 'clicks').get('vlog-stop') ?? 0).toBe(0);
    expect(readVisitLogs(listVisitLogs(analytics)).visits).toBe(6);

    const second = await listenTestApp({ env });
    closing(second);
    expect(((await (await fetch(`${second.url}/api/shorten?code=vlog-stop`)).json()) as { clicks: number }).clicks).toBe(6);
    await second.close();
    expect(byCode(await records(analytics), 'clicks').get('vlog-stop')).toBe(6);
    expect(listVisitLogs(analytics).map((f) => fs.statSync(f.file).size)).toStrictEqual([0]);
  });
});

describe('kill -9 with the visit log', () => {
  it('in the middle of a batch of link-day writes, or after it, round after round: a restart counts every visit once (a deleted code’s earlier visits not at all)', async () => {
    const dir = tempDir('dtb-visit-log-crash-');
    const rounds = 5;
    let held = 0;
    for (let r = 1; r <= rounds; r++) {
      // The store stops answering after k of the batch's addMany calls (about 10 chunks of 32 link-days; the first rounds' restored counts add some): k = 0 cuts the batch before its first chunk, k ≥ 12 lets it finish.
      const k = r === 1 ? 3 : Math.floor(Math.random() * 14);
      const lines = await runChild(dir, String(r), k, (l) => l.includes('HELD') || l.includes('WRITTEN'));
      expect(lines[0]).toBe('COUNTED');
      if (lines.includes('HELD')) held++;
      // The first round's batch was cut short after three chunks on disk: some records written (with their log generation), not all.
      if (r === 1) expect((await records(dir)).length).toSatisfy((n: number) => n > 0 && n < 300);
    }
    // At least one batch was cut short (the first round's, at its fourth chunk).
    expect(held).toBeGreaterThan(0);
    // A stop after a crash: the records are whole, the log is down to the empty file that keeps the generations growing.
    expect(await runChild(dir, 'final', -1, (l) => l.includes('CLOSED'))).toStrictEqual(['COUNTED', 'CLOSED']);
    const recs = await records(dir);
    const clicks = byCode(recs, 'clicks');
    const bots = byCode(recs, 'bots');
    for (let i = 0; i < 300; i++) {
      let want = { clicks: 0, bots: 0 };
      for (let r = 1; r <= rounds; r++) {
        const v = visitsOf(i, r);
        // cc5 was deleted in round 2 after its visits there were counted, then visited once by Chrome.
        if (i === 5 && r <= 2) want = r === 2 ? { clicks: 1, bots: 0 } : want;
        else want = { clicks: want.clicks + v.clicks, bots: want.bots + v.bots };
      }
      expect([`cc${i}`, clicks.get(`cc${i}`) ?? 0, bots.get(`cc${i}`) ?? 0]).toStrictEqual([`cc${i}`, want.clicks, want.bots]);
    }
    const logs = listVisitLogs(dir);
    expect(logs).toHaveLength(1);
    expect(fs.statSync(logs[0]!.file).size).toBe(0);
  });

  it('`devtoolbox serve`: visits in the log and not in the records survive a kill -9, counted again by the analytics thread, by a server counting in its main thread, and by an export', async () => {
    const dir = tempDir();
    const analytics = path.join(dir, 'analytics');
    // No batch before the kills: the visits are only in the log.
    const env = { DATA_DIR: dir, ANALYTICS_THREAD: 'worker', ANALYTICS_BATCH_MS: '600000', RATE_LIMITS: 'off' };
    const visit = async (base: string, n: number) => {
      for (let i = 0; i < n; i++) {
        const v = await fetch(`${base}/s/vlog-1`, { headers: { 'user-agent': CHROME }, redirect: 'manual' });
        await v.arrayBuffer();
        expect(v.status).toBe(302);
      }
    };
    /** The visit lines of the log files on disk. */
    const logged = () => readVisitLogs(listVisitLogs(analytics)).visits;
    const untilLogged = async (n: number) => {
      while (logged() < n) await new Promise((r) => setTimeout(r, 20));
    };
    const clicks = async (base: string) => ((await (await fetch(`${base}/api/shorten?code=vlog-1`)).json()) as { clicks: number }).clicks;

    const first = await startServerProcess(env);
    const r = await fetch(`${first.base}/api/shorten`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url: 'https://example.com/v', code: 'vlog-1' }) });
    expect(r.status).toBe(201);
    await visit(first.base, 20);
    await untilLogged(20);
    expect(await first.stop('SIGKILL')).toBe('SIGKILL');
    expect(byCode(await records(analytics), 'clicks').get('vlog-1') ?? 0).toBe(0);

    // The analytics thread counts them again at its start: read at once, written with its next batch.
    const second = await startServerProcess(env);
    expect(await clicks(second.base)).toBe(20);
    await visit(second.base, 5);
    await untilLogged(25);
    expect(await second.stop('SIGKILL')).toBe('SIGKILL');

    // Counted in the main thread: the log is replayed into the records as the server starts.
    const third = await startServerProcess({ ...env, ANALYTICS_THREAD: 'main' });
    expect(await clicks(third.base)).toBe(25);
    expect(await third.stop('SIGTERM')).toBe(null);
    expect(byCode(await records(analytics), 'clicks').get('vlog-1')).toBe(25);

    const fourth = await startServerProcess(env);
    await visit(fourth.base, 4);
    await untilLogged(4);
    expect(await fourth.stop('SIGKILL')).toBe('SIGKILL');
    // An export replays the log before it reads: 29 clicks in the link-day records it writes.
    const out = path.join(tempDir(), 'export.jsonl');
    const err: string[] = [];
    const config = loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent' });
    const code = await transferCommand('export', [out], config, { known: manifests.flatMap((f) => f.collections ?? []), settle: (store, log) => settleForCli(manifests, store, config, log), io: { stdout: process.stdout, stdin: process.stdin, err: (t) => void err.push(t) } });
    expect(code).toBe(0);
    const days = fs
      .readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { collection?: string; record?: LinkDay })
      .filter((l) => l.collection === 'link_days' && l.record !== undefined);
    expect(byCode(days.map((l) => l.record!), 'clicks').get('vlog-1')).toBe(29);
    // Every log file replayed: one left, empty.
    expect(listVisitLogs(analytics).map((f) => fs.statSync(f.file).size)).toStrictEqual([0]);
  });
});
