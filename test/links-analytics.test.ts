/**
 * Issue 32: visit analytics of short links, over real HTTP (the redirect ahead of the router
 * and through it) and MCP, on the file store and a real Redis: a scripted mix of browsers,
 * bots and referrers with exact counters, bots apart from clicks, nothing personal stored,
 * bounded counters under hostile input, from/to, ownership, delete and export/import.
 */
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { Redis } from 'ioredis';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { manualClock, type ManualClock } from '../src/core/clock.js';
import { transferCommand } from '../src/state/transfer-cli.js';
import { families } from '../src/tools/index.js';
import { COUNTER_CAPS, dayId, LINK_DAY_STATS, LINK_DAYS } from '../src/tools/shortener/analytics-counters.js';
import { referrerHost, UaCache } from '../src/tools/shortener/analytics-ua.js';
import { sweepAnalytics, VisitAnalytics, visitAnalytics } from '../src/tools/shortener/analytics.js';
import { analyticsThreadOf } from '../src/tools/shortener/analytics-thread.js';
import { ROLLUP_ID, ROLLUP_LEASE_MS, rollUpClicks, rollUpDue, startRollUp } from '../src/tools/shortener/clicks.js';
import { clicksOf } from '../src/tools/shortener/clicks-read.js';
import { LINK_CLICK_ROLLUP, LINK_CLICKS, LINKS } from '../src/tools/shortener/links.js';
import { linkTraffic } from '../src/tools/shortener/traffic.js';
import { closeAfterEach, listenTestApp, mcpError, tempDir, testConfig, type ListeningApp } from './harness.js';
import { describeRedis, startRedis, type TestRedis } from './redis.js';

const closing = closeAfterEach();
const T0 = Date.parse('2026-11-22T09:00:00.000Z');
const HOUR = 3_600_000;

type Json = Record<string, unknown>;

/** Real User-Agent strings (browsers of late 2026 and the crawlers' published ones). */
const UA = {
  chromeWin: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  firefoxLinux: 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
  safariIphone: 'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1',
  safariIpad: 'Mozilla/5.0 (iPad; CPU OS 17_7 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.7 Mobile/15E148 Safari/604.1',
  edgeWin: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.2903.86',
  chromeAndroid: 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.104 Mobile Safari/537.36',
  curl: 'curl/8.5.0',
  googlebot: 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  slackbot: 'Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)',
  facebook: 'facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)',
  twitterbot: 'Twitterbot/1.0',
} as const;

async function call(node: ListeningApp, method: string, p: string, body?: unknown, key?: string): Promise<Response> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (key) headers.authorization = `Bearer ${key}`;
  return fetch(node.url + p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), redirect: 'manual' });
}

async function json(r: Response | Promise<Response>): Promise<Json> {
  return (await (await r).json()) as Json;
}

async function register(node: ListeningApp, email: string): Promise<string> {
  const r = await call(node, 'POST', '/api/auth/register', { email });
  expect(r.status).toBe(201);
  return ((await r.json()) as { api_key: string }).api_key;
}

/** One visit with this User-Agent and Referer (none: not sent); resolves with the status. */
async function visit(node: ListeningApp, code: string, ua: string, referer?: string, method = 'GET'): Promise<number> {
  const headers: Record<string, string> = { 'user-agent': ua };
  if (referer !== undefined) headers.referer = referer;
  const r = await fetch(`${node.url}/s/${code}`, { method, headers, redirect: 'manual' });
  await r.arrayBuffer();
  return r.status;
}

/** The scripted mix of day one: 10 people, 5 bots, one HEAD. */
async function dayOne(n: ListeningApp, code: string): Promise<void> {
  const people: [string, string | undefined][] = [
    [UA.chromeWin, 'https://News.Example.com/path/secret-page?token=s3cr3t'],
    [UA.chromeWin, 'https://news.example.com/other'],
    [UA.chromeWin, 'http://user:pw@news.example.com:8080/x#frag'],
    [UA.firefoxLinux, 'https://news.example.com/'],
    [UA.safariIphone, undefined],
    [UA.safariIphone, undefined],
    [UA.edgeWin, 'https://www.google.com/search?q=short+links'],
    [UA.chromeAndroid, 'https://t.co/AbCdEf'],
    [UA.safariIpad, undefined],
    [UA.curl, undefined],
  ];
  const bots: [string, string | undefined][] = [
    [UA.googlebot, undefined],
    [UA.googlebot, 'https://crawler.example/'],
    [UA.slackbot, undefined],
    [UA.facebook, undefined],
    [UA.twitterbot, 'https://twitter.com/x'],
  ];
  for (const [ua, ref] of [...people, ...bots]) expect(await visit(n, code, ua, ref)).toBe(302);
  expect(await visit(n, code, UA.chromeWin, 'https://head.example/', 'HEAD')).toBe(302); // counts nothing
}

const DAY1 = '2026-11-22';
const DAY2 = '2026-11-23';

/**
 * Makes the store refuse the link-day writes of the thread that counts: the next `times`
 * addMany calls reject (-1: all). In this thread a spy on the store's collection; in the
 * analytics thread its own test hook. `calls`: addMany calls made since.
 */
async function refuseDayWrites(n: ListeningApp, times: number): Promise<{ calls(): Promise<number>; restore(): Promise<void> }> {
  const thread = analyticsThreadOf(n.services);
  if (thread) {
    await thread.call('test.refuseDayWrites', times);
    let calls = 0;
    return {
      calls: async () => (calls += await thread.call<number>('test.refuseDayWrites', times)),
      restore: async () => void (await thread.call('test.refuseDayWrites', 0)),
    };
  }
  const spy = vi.spyOn(n.services.store.collection(LINK_DAYS), 'addMany');
  if (times < 0) spy.mockRejectedValue(new Error('storage failing'));
  else for (let i = 0; i < times; i++) spy.mockRejectedValueOnce(new Error('storage failing'));
  return { calls: async () => spy.mock.calls.length, restore: async () => spy.mockRestore() };
}

/** The suite on the store `env()` names. */
function analyticsSuite(env: () => Record<string, string>): void {
  async function node(clock: ManualClock): Promise<ListeningApp> {
    return closing(await listenTestApp({ env: env(), overrides: { clock } }));
  }

  it('a scripted mix of browsers, bots and referrers: exact counters over REST; bots apart, not in clicks; HEAD counts nothing', async () => {
    const clock = manualClock(T0);
    const n = await node(clock);
    const key = await register(n, 'owner@example.com');
    expect((await call(n, 'POST', '/api/shorten', { url: 'https://example.com/a', code: 'ana-1' }, key)).status).toBe(201);
    await dayOne(n, 'ana-1');
    clock.t = T0 + 26 * HOUR; // the next day, 11:00 UTC
    for (let i = 0; i < 2; i++) expect(await visit(n, 'ana-1', UA.chromeWin)).toBe(302);

    const stats = await json(call(n, 'GET', '/api/shorten?code=ana-1', undefined, key));
    expect(stats.clicks).toBe(12);
    const visits = stats.visits as { byDay: { day: string; visits: number }[]; byHour: { hour: string; visits: number }[] };
    expect(visits.byDay.length).toBe(90);
    expect(visits.byDay[0]!.day).toBe('2026-08-26');
    expect(visits.byDay.filter((d) => d.visits > 0)).toStrictEqual([
      { day: DAY1, visits: 10 },
      { day: DAY2, visits: 2 },
    ]);
    expect(visits.byHour.length).toBe(48);
    expect(visits.byHour[0]!.hour).toBe('2026-11-21T12:00:00Z');
    expect(visits.byHour[47]!.hour).toBe('2026-11-23T11:00:00Z');
    expect(visits.byHour.filter((h) => h.visits > 0)).toStrictEqual([
      { hour: '2026-11-22T09:00:00Z', visits: 10 },
      { hour: '2026-11-23T11:00:00Z', visits: 2 },
    ]);
    expect(stats.referrers).toStrictEqual([
      { host: 'direct', visits: 6 },
      { host: 'news.example.com', visits: 4 },
      { host: 't.co', visits: 1 },
      { host: 'www.google.com', visits: 1 },
    ]);
    expect(stats.browsers).toStrictEqual([
      { name: 'Chrome', visits: 6 },
      { name: 'Safari', visits: 3 },
      { name: 'Firefox', visits: 1 },
      { name: 'Microsoft Edge', visits: 1 },
      { name: 'other', visits: 1 },
    ]);
    expect(stats.os).toStrictEqual([
      { name: 'Windows', visits: 6 },
      { name: 'iOS', visits: 3 },
      { name: 'Android', visits: 1 },
      { name: 'Linux', visits: 1 },
      { name: 'other', visits: 1 },
    ]);
    expect(stats.devices).toStrictEqual([
      { type: 'desktop', visits: 7 },
      { type: 'mobile', visits: 3 },
      { type: 'tablet', visits: 1 },
      { type: 'other', visits: 1 },
    ]);
    expect(stats.bots).toStrictEqual({
      visits: 5,
      names: [
        { name: 'Googlebot', visits: 2 },
        { name: 'FacebookExternalHit', visits: 1 },
        { name: 'SlackBot', visits: 1 },
        { name: 'other', visits: 1 },
      ],
    });

    // from/to: day two only.
    const d2 = await json(call(n, 'GET', `/api/shorten?code=ana-1&from=${DAY2}&to=${DAY2}`, undefined, key));
    expect([d2.from, d2.to, (d2.visits as Json).byDay, d2.referrers, d2.browsers, d2.bots]).toStrictEqual([
      DAY2,
      DAY2,
      [{ day: DAY2, visits: 2 }],
      [{ host: 'direct', visits: 2 }],
      [{ name: 'Chrome', visits: 2 }],
      { visits: 0, names: [] },
    ]);
    expect(d2.clicks).toBe(12); // clicks are all-time
  });

  it('the same analytics once written to the store (another instance’s view), and over MCP with the SDK client', async () => {
    const clock = manualClock(T0);
    const n = await node(clock);
    const key = await register(n, 'mcp-owner@example.com');
    await call(n, 'POST', '/api/shorten', { url: 'https://example.com/m', code: 'ana-mcp' }, key);
    await dayOne(n, 'ana-mcp');
    await visitAnalytics(n.services).flush();
    expect(await visitAnalytics(n.services).unwritten('ana-mcp')).toStrictEqual([]);
    const rec = await n.services.store.collection(LINK_DAYS).get(dayId(DAY1, 'ana-mcp'));
    expect(rec).toMatchObject({ id: `${DAY1}|ana-mcp`, clicks: 10, bots: 5 });
    // Written in the day-first layout only (the one before is read, never written).
    expect(await n.services.store.collection(LINK_DAY_STATS).query()).toStrictEqual([]);
    // Flat counter fields (Collection.add): the 10 visits in hour 9, nothing in any other hour.
    expect(Object.entries(rec!).filter(([f]) => f.startsWith('h:'))).toStrictEqual([['h:9', 10]]);

    const client = await n.httpClient({ authorization: `Bearer ${key}` });
    const r = await client.callTool({ name: 'url_stats', arguments: { code: 'ana-mcp', from: DAY1, to: DAY1 } });
    expect(r.isError).toBeFalsy();
    const s = r.structuredContent as Json;
    expect([s.clicks, (s.visits as Json).byDay, (s.bots as Json).visits]).toStrictEqual([10, [{ day: DAY1, visits: 10 }], 5]);
    expect(s.referrers).toStrictEqual([
      { host: 'direct', visits: 4 },
      { host: 'news.example.com', visits: 4 },
      { host: 't.co', visits: 1 },
      { host: 'www.google.com', visits: 1 },
    ]);
    const bad = await client.callTool({ name: 'url_stats', arguments: { code: 'ana-mcp', from: DAY1, to: '2026-11-21' } });
    expect([bad.isError, mcpError(bad).code]).toStrictEqual([true, 'INVALID_INPUT']);

    // The SDK v2 client, pinned to 2026-07-28: the same answer; another key's client gets 404.
    const other = await register(n, 'mcp-other@example.com');
    const v2 = async (k: string) => {
      const c = new ClientV2({ name: 'devtoolbox-tests', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
      await c.connect(new HttpV2(new URL(`${n.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${k}` } } }));
      return c;
    };
    const [c, o] = [await v2(key), await v2(other)];
    try {
      const r2 = await c.callTool({ name: 'url_stats', arguments: { code: 'ana-mcp', from: DAY1, to: DAY1 } });
      expect(r2.structuredContent).toStrictEqual(s);
      const stolen = await o.callTool({ name: 'url_stats', arguments: { code: 'ana-mcp' } });
      expect([stolen.isError, mcpError(stolen).code]).toStrictEqual([true, 'NOT_FOUND']);
    } finally {
      await c.close();
      await o.close();
    }
  });

  it('visits around midnight count in their own days; a past day’s pending counts go once written (ten days hold one day’s)', async () => {
    const clock = manualClock(T0);
    const n = await node(clock);
    const key = await register(n, 'midnight@example.com');
    await call(n, 'POST', '/api/shorten', { url: 'https://example.com/mid', code: 'ana-mid' }, key);
    const analytics = visitAnalytics(n.services);
    // One millisecond apart, not written in between: two days' counts, each kept apart.
    clock.t = Date.parse(`${DAY1}T23:59:59.999Z`);
    expect(await visit(n, 'ana-mid', UA.chromeWin)).toBe(302);
    clock.t = Date.parse(`${DAY2}T00:00:00.000Z`);
    for (let i = 0; i < 2; i++) expect(await visit(n, 'ana-mid', UA.firefoxLinux)).toBe(302);
    expect((await analytics.unwritten('ana-mid')).map((u) => [u.day, u.delta.visits])).toStrictEqual([
      [DAY1, 1],
      [DAY2, 2],
    ]);
    expect(await analytics.unwrittenClicksOf([{ code: 'ana-mid', days: [DAY1, DAY2] }])).toStrictEqual([{ clicks: 3, last: Date.parse(`${DAY2}T00:00:00.000Z`) }]);
    await analytics.flush();
    const days = n.services.store.collection(LINK_DAYS);
    expect([(await days.get(dayId(DAY1, 'ana-mid')))?.clicks, (await days.get(dayId(DAY2, 'ana-mid')))?.clicks]).toStrictEqual([1, 2]);
    // Eight more days, a visit each, written: each day's writer goes once the next day's first visit comes.
    for (let d = 2; d < 10; d++) {
      clock.t = T0 + d * 24 * HOUR;
      expect(await visit(n, 'ana-mid', UA.chromeWin)).toBe(302);
      // In this thread or the analytics thread: the writers of the thread that counts.
      expect(analytics instanceof VisitAnalytics ? analytics.dayWriters : await (analyticsThreadOf(n.services)!.call<number>('dayWriters'))).toBe(1);
      await analytics.flush();
    }
    const stats = await json(call(n, 'GET', '/api/shorten?code=ana-mid', undefined, key));
    expect(stats.clicks).toBe(11);
    const byDay = (stats.visits as { byDay: { day: string; visits: number }[] }).byDay.filter((d) => d.visits > 0);
    expect(byDay.map((d) => d.visits)).toStrictEqual([1, 2, 1, 1, 1, 1, 1, 1, 1, 1]);
    expect(byDay[9]!.day).toBe('2026-12-01');
  });

  it('ownership: an owned link’s stats are the owner’s only (others 404); a keyless link’s stay public with clicks only', async () => {
    const clock = manualClock(T0);
    const n = await node(clock);
    const [alice, bob] = [await register(n, 'alice@example.com'), await register(n, 'bob@example.com')];
    await call(n, 'POST', '/api/shorten', { url: 'https://example.com/o', code: 'ana-own' }, alice);
    await call(n, 'POST', '/api/shorten', { url: 'https://example.com/p', code: 'ana-pub' });
    expect(await visit(n, 'ana-own', UA.chromeWin)).toBe(302);
    expect(await visit(n, 'ana-pub', UA.chromeWin, 'https://news.example.com/')).toBe(302);
    expect(await visit(n, 'ana-pub', UA.googlebot)).toBe(302);
    for (const k of [bob, undefined]) {
      const r = await call(n, 'GET', '/api/shorten?code=ana-own', undefined, k);
      expect([r.status, ((await r.json()) as { error: { code: string } }).error.code]).toStrictEqual([404, 'NOT_FOUND']);
    }
    for (const k of [alice, bob, undefined]) {
      const pub = await json(call(n, 'GET', '/api/shorten?code=ana-pub', undefined, k));
      expect(Object.keys(pub).sort()).toStrictEqual(['clicks', 'code', 'createdAt', 'lastClickedAt', 'shortUrl', 'success', 'url']);
      expect(pub.clicks).toBe(1); // the bot is not a click
    }
    const own = await json(call(n, 'GET', '/api/shorten?code=ana-own', undefined, alice));
    expect([own.clicks, own.browsers]).toStrictEqual([1, [{ name: 'Chrome', visits: 1 }]]);
  });

  it('from/to: real UTC days, from ≤ to, within the last 90 days; anything else is a 400 (before any lookup)', async () => {
    const clock = manualClock(T0);
    const n = await node(clock);
    const key = await register(n, 'range@example.com');
    await call(n, 'POST', '/api/shorten', { url: 'https://example.com/r', code: 'ana-rng' }, key);
    const ok = await json(call(n, 'GET', `/api/shorten?code=ana-rng&from=2026-08-25&to=${DAY1}`, undefined, key));
    expect(((ok.visits as Json).byDay as unknown[]).length).toBe(90);
    for (const q of [
      `from=${DAY1}&to=2026-11-21`, // from after to
      'from=2026-08-24', // 91 days back
      'to=2026-11-23', // the future
      'from=2026-02-30',
      'from=2026-13-01',
      'from=yesterday',
      'to=2026-11-22T00:00:00Z',
    ]) {
      for (const code of ['ana-rng', 'no-such-code']) {
        const r = await call(n, 'GET', `/api/shorten?code=${code}&${q}`, undefined, key);
        expect([q, r.status, ((await r.json()) as { error: { code: string } }).error.code]).toStrictEqual([q, 400, 'INVALID_INPUT']);
      }
    }
  });

  it('privacy: no User-Agent, referrer path or query, or client address is stored; url_delete removes the analytics', async () => {
    const clock = manualClock(T0);
    const n = await node(clock);
    const key = await register(n, 'private@example.com');
    await call(n, 'POST', '/api/shorten', { url: 'https://example.com/priv', code: 'ana-priv' }, key);
    await dayOne(n, 'ana-priv');
    await visitAnalytics(n.services).flush();
    await n.services.store.flush();
    const stored = await everything(n);
    expect(stored).toContain('news.example.com'); // the dump does hold the analytics
    for (const secret of [...Object.values(UA), 'secret-page', 's3cr3t', '/path', 'AbCdEf', 'short+links', 'user:pw', '127.0.0.1']) {
      expect(stored.includes(secret), secret).toBe(false);
    }
    expect((await call(n, 'DELETE', '/api/links/ana-priv', undefined, key)).status).toBe(200);
    expect((await n.services.store.collection(LINK_DAYS).query()).filter((r) => r.id.endsWith('|ana-priv'))).toStrictEqual([]);
    await n.services.store.flush();
    expect((await everything(n)).includes('news.example.com')).toBe(false);
  });

  it('90 days kept: older days are left out of the stats and swept; records from before the link was created are not its own (both layouts)', async () => {
    const clock = manualClock(T0);
    const n = await node(clock);
    const key = await register(n, 'window@example.com');
    await call(n, 'POST', '/api/shorten', { url: 'https://example.com/w', code: 'ana-win' }, key);
    const days = n.services.store.collection(LINK_DAYS);
    const before = n.services.store.collection(LINK_DAY_STATS);
    // A deleted namesake's records, written late by instances that had counted them, in each layout.
    await before.put({ id: 'ana-win|2026-11-20', code: 'ana-win', day: '2026-11-20', visits: 7, hours: new Array<number>(24).fill(0), bots: 0, referrers: [['direct', 7]], browsers: [], os: [], devices: [], botNames: [] });
    await days.add(dayId('2026-11-21', 'ana-win'), { visits: 5, 'ref:direct': 5 }, { init: { id: dayId('2026-11-21', 'ana-win') } });
    expect(await visit(n, 'ana-win', UA.chromeWin)).toBe(302);
    const first = await json(call(n, 'GET', '/api/shorten?code=ana-win', undefined, key));
    expect([(first.visits as { byDay: { visits: number }[] }).byDay.reduce((t, d) => t + d.visits, 0), first.referrers]).toStrictEqual([1, [{ host: 'direct', visits: 1 }]]);
    await visitAnalytics(n.services).flush();

    clock.t = T0 + 90 * 86_400_000; // 2027-02-20: DAY1 is now 91 days back
    expect(await visit(n, 'ana-win', UA.chromeWin)).toBe(302);
    await visitAnalytics(n.services).flush();
    const ids = async () => (await days.query()).map((r) => r.id).filter((id) => id.endsWith('|ana-win'));
    expect(await ids()).toStrictEqual(['2026-11-21|ana-win', `${DAY1}|ana-win`, '2027-02-20|ana-win']); // nothing pruned on the redirect path
    const later = await json(call(n, 'GET', '/api/shorten?code=ana-win', undefined, key));
    expect([later.clicks, (later.visits as { byDay: { day: string; visits: number }[] }).byDay.filter((d) => d.visits > 0), later.referrers]).toStrictEqual([2, [{ day: '2027-02-20', visits: 1 }], [{ host: 'direct', visits: 1 }]]);
    // The old layout's record past the window goes when the stats are read; the rest with the sweep.
    await expect.poll(async () => (await before.query()).length).toBe(0);
    expect(await sweepAnalytics(n.services)).toBe(2);
    expect(await ids()).toStrictEqual(['2027-02-20|ana-win']);
  });

  it('a day record in the first layout (hours and [key, count] pairs) still reads, and new visits add to it', async () => {
    const clock = manualClock(T0);
    const n = await node(clock);
    const key = await register(n, 'legacy@example.com');
    await call(n, 'POST', '/api/shorten', { url: 'https://example.com/l', code: 'ana-old' }, key);
    const days = n.services.store.collection(LINK_DAY_STATS);
    const DAY = new Date(T0).toISOString().slice(0, 10);
    // As the server wrote it before the counter layout.
    const hours = new Array<number>(24).fill(0);
    hours[9] = 3;
    await days.put({ id: `ana-old|${DAY}`, code: 'ana-old', day: DAY, visits: 3, hours, bots: 1, referrers: [['news.example.com', 2], ['direct', 1]], browsers: [['Chrome', 3]], os: [['Windows', 3]], devices: [['desktop', 3]], botNames: [['Googlebot', 1]] });
    expect(await visit(n, 'ana-old', UA.chromeWin, 'https://news.example.com/x')).toBe(302);
    expect(await visit(n, 'ana-old', UA.firefoxLinux)).toBe(302);
    expect(await visit(n, 'ana-old', UA.googlebot)).toBe(302);
    for (const flushed of [false, true]) {
      if (flushed) await visitAnalytics(n.services).flush();
      const s = await json(call(n, 'GET', `/api/shorten?code=ana-old&from=${DAY}&to=${DAY}`, undefined, key));
      expect([s.visits, s.referrers, s.browsers, s.os, s.devices, s.bots]).toStrictEqual([
        { byDay: [{ day: DAY, visits: 5 }], byHour: expect.arrayContaining([{ hour: `${DAY}T09:00:00Z`, visits: 5 }]) as unknown },
        [
          { host: 'news.example.com', visits: 3 },
          { host: 'direct', visits: 2 },
        ],
        [
          { name: 'Chrome', visits: 4 },
          { name: 'Firefox', visits: 1 },
        ],
        [
          { name: 'Windows', visits: 4 },
          { name: 'Linux', visits: 1 },
        ],
        [{ type: 'desktop', visits: 5 }],
        { visits: 2, names: [{ name: 'Googlebot', visits: 2 }] },
      ]);
    }
    // The old record untouched; the new visits in the day-first layout, as flat fields.
    expect(await days.get(`ana-old|${DAY}`)).toMatchObject({ visits: 3, bots: 1, hours, referrers: [['news.example.com', 2], ['direct', 1]] });
    const { logGen, ...rec } = (await n.services.store.collection(LINK_DAYS).get(dayId(DAY, 'ana-old')))!;
    // The analytics thread on the file store writes the visit log's generation beside the counts (src/tools/shortener/visit-log.ts).
    if (analyticsThreadOf(n.services) && n.services.config.redis === null) expect(logGen).toBeGreaterThan(T0);
    else expect(logGen).toBeUndefined();
    expect(rec).toStrictEqual({ id: dayId(DAY, 'ana-old'), clicks: 2, last: T0, bots: 1, 'h:9': 2, 'ref:news.example.com': 1, 'ref:direct': 1, 'br:Chrome': 1, 'br:Firefox': 1, 'os:Windows': 1, 'os:Linux': 1, 'dev:desktop': 2, 'bot:Googlebot': 1 });
  });

  it('clicks are counted in the day records and rolled up into the link’s clicks record once the day is 3 days old, once; the totals read the same before and after', async () => {
    const clock = manualClock(T0);
    const n = await node(clock);
    const key = await register(n, 'rollup@example.com');
    for (const code of ['ana-roll', 'ana-roll2']) expect((await call(n, 'POST', '/api/shorten', { url: `https://example.com/${code}`, code }, key)).status).toBe(201);
    for (let i = 0; i < 3; i++) expect(await visit(n, 'ana-roll', UA.chromeWin)).toBe(302);
    expect(await visit(n, 'ana-roll', UA.googlebot)).toBe(302); // not a click
    for (let i = 0; i < 2; i++) expect(await visit(n, 'ana-roll2', UA.safariIphone)).toBe(302);
    await visitAnalytics(n.services).flush();
    const rollUps = n.services.store.collection(LINK_CLICK_ROLLUP);
    // The first write started the roll-up two days back: no day record before holds a click.
    expect(await rollUps.get(ROLLUP_ID)).toStrictEqual({ id: ROLLUP_ID, through: '2026-11-20' });
    clock.t = T0 + 24 * HOUR;
    expect(await visit(n, 'ana-roll', UA.firefoxLinux)).toBe(302);
    await visitAnalytics(n.services).flush();
    const clicks = n.services.store.collection(LINK_CLICKS);
    const read = async (code: string) => {
      const s = await json(call(n, 'GET', `/api/shorten?code=${code}&from=${DAY1}&to=${DAY1}`, undefined, key));
      return [s.clicks, s.lastClickedAt, (s.visits as { byDay: unknown[] }).byDay];
    };
    const expected = {
      'ana-roll': [4, '2026-11-23T09:00:00.000Z', [{ day: DAY1, visits: 3 }]],
      'ana-roll2': [2, '2026-11-22T09:00:00.000Z', [{ day: DAY1, visits: 2 }]],
    };
    // A deleted namesake's clicks, written late for the day before ana-roll was created: not its own.
    await n.services.store.collection(LINK_DAYS).add(dayId('2026-11-21', 'ana-roll'), { clicks: 5 }, { init: { id: dayId('2026-11-21', 'ana-roll') } });
    for (const [code, want] of Object.entries(expected)) expect(await read(code)).toStrictEqual(want);
    expect(await clicks.count()).toBe(0); // no clicks record written per visit

    // Two days on, DAY1 is not old enough yet; three days on it is rolled up, and only it.
    clock.t = T0 + 2 * 24 * HOUR;
    expect(await rollUpClicks(n.services)).toBe(1); // the namesake's day: read, left out
    expect(await clicks.count()).toBe(0);
    clock.t = T0 + 3 * 24 * HOUR + HOUR;
    expect(await rollUpClicks(n.services)).toBe(2);
    expect(await rollUps.get(ROLLUP_ID)).toStrictEqual({ id: ROLLUP_ID, through: DAY1 });
    expect(await clicks.get('ana-roll')).toStrictEqual({ code: 'ana-roll', clicks: 3, through: DAY1, lastClickedMs: T0 });
    expect(await clicks.get('ana-roll2')).toStrictEqual({ code: 'ana-roll2', clicks: 2, through: DAY1, lastClickedMs: T0 });
    for (const [code, want] of Object.entries(expected)) expect(await read(code)).toStrictEqual(want);
    // Again, or an instance that read the roll-up's record before it moved: nothing is added twice.
    expect(await rollUpClicks(n.services)).toBe(0);
    await rollUps.put({ id: ROLLUP_ID, through: '2026-11-21' });
    expect(await rollUpClicks(n.services)).toBe(2);
    expect(await clicks.get('ana-roll')).toMatchObject({ clicks: 3, through: DAY1 });
    for (const [code, want] of Object.entries(expected)) expect(await read(code)).toStrictEqual(want);
    // The next day: ana-roll's second day goes in too.
    clock.t = T0 + 4 * 24 * HOUR;
    expect(await rollUpClicks(n.services)).toBe(1);
    expect(await clicks.get('ana-roll')).toStrictEqual({ code: 'ana-roll', clicks: 4, through: '2026-11-23', lastClickedMs: T0 + 24 * HOUR });
    expect(await read('ana-roll')).toStrictEqual(expected['ana-roll']);
  });

  /** An instance on a clock at T0 with one owned link `code`, visited once and written. */
  async function visitedOnce(code: string): Promise<{ clock: ManualClock; n: ListeningApp; key: string }> {
    const clock = manualClock(T0);
    const n = await node(clock);
    const key = await register(n, `${code}@example.com`);
    expect((await call(n, 'POST', '/api/shorten', { url: `https://example.com/${code}`, code }, key)).status).toBe(201);
    expect(await visit(n, code, UA.chromeWin)).toBe(302);
    await visitAnalytics(n.services).flush();
    return { clock, n, key };
  }

  it('one sweep rolls up at a time: another instance’s lease is left alone until it runs out; a pass that fails gives it up', async () => {
    const { clock, n, key } = await visitedOnce('ana-lease');
    const rollUps = n.services.store.collection(LINK_CLICK_ROLLUP);
    const clicks = n.services.store.collection(LINK_CLICKS);
    clock.t = T0 + 3 * 24 * HOUR + HOUR; // DAY1 is due
    await rollUps.put({ id: ROLLUP_ID, through: '2026-11-20', holder: 'another', until: clock.t + 60_000 });
    expect(await rollUpDue(n.services)).toStrictEqual({ read: 0, through: '2026-11-20', behindDays: 2, held: false });
    expect(await clicks.get('ana-lease')).toBeUndefined();
    expect((await rollUps.get(ROLLUP_ID))!.holder).toBe('another');
    clock.t += 60_001;
    expect(await rollUpDue(n.services)).toStrictEqual({ read: 1, through: DAY1, behindDays: 0, held: true });
    const mine = await rollUps.get(ROLLUP_ID);
    expect(mine).toStrictEqual({ id: ROLLUP_ID, through: DAY1, holder: expect.any(String), until: clock.t + ROLLUP_LEASE_MS });
    expect(await clicks.get('ana-lease')).toMatchObject({ clicks: 1, through: DAY1 });
    // Held, renewed by the next sweep; another instance's name is not taken over meanwhile.
    clock.t += 60_000;
    expect(await rollUpDue(n.services)).toMatchObject({ read: 0, held: true });
    expect(await rollUps.get(ROLLUP_ID)).toStrictEqual({ ...mine, until: clock.t + ROLLUP_LEASE_MS });
    // A day later its pass fails: the lease is given up at once, the roll-up where it was.
    clock.t += 24 * HOUR;
    const scan = vi.spyOn(n.services.store, 'scan').mockRejectedValue(new Error('store failing'));
    await expect(rollUpDue(n.services)).rejects.toThrow('store failing');
    scan.mockRestore();
    expect(await rollUps.get(ROLLUP_ID)).toStrictEqual({ ...mine, until: 0 });
    expect((await json(call(n, 'GET', '/api/shorten?code=ana-lease', undefined, key))).clicks).toBe(1);
  });

  it('behind by more than a pass: a sweep runs passes until the roll-up is up to date, at most its cap; each day’s clicks once', async () => {
    const clock = manualClock(T0);
    const n = await node(clock);
    await startRollUp(n.services); // as the first write of the counts does
    const links = n.services.store.collection(LINKS);
    const days = n.services.store.collection(LINK_DAYS);
    // 600 links with clicks on DAY1 (more than two pages of the roll-up), link i i % 3 + 1 clicks.
    const codes = Array.from({ length: 600 }, (_, i) => `cu-${i}`);
    for (const [i, code] of codes.entries()) {
      await links.put({ code, url: `https://example.com/${code}`, createdAt: new Date(T0).toISOString(), creator: 'key:k', creatorKeyId: 'k', creatorDay: 'key:k|2026-11-22' });
      await days.add(dayId(DAY1, code), { clicks: (i % 3) + 1 }, { init: { id: dayId(DAY1, code) } });
    }
    clock.t = T0 + 3 * 24 * HOUR + HOUR;
    // Passes of 100 read a page (256) each: two passes leave DAY1 unfinished.
    expect(await rollUpDue(n.services, 100, 2)).toStrictEqual({ read: 512, through: '2026-11-21', behindDays: 1, held: true });
    expect(await rollUpDue(n.services, 100, 12)).toStrictEqual({ read: 88, through: DAY1, behindDays: 0, held: true });
    expect(await rollUpDue(n.services, 100, 12)).toStrictEqual({ read: 0, through: DAY1, behindDays: 0, held: true });
    const recs = await n.services.store.collection(LINK_CLICKS).getMany(codes);
    expect(recs.map((r) => [r?.clicks, r?.through])).toStrictEqual(codes.map((_, i) => [(i % 3) + 1, DAY1]));
  });

  it('clicks written after their day was rolled up (the store refused them for days) go to the link’s total, once; a deleted link’s do not', async () => {
    const clock = manualClock(T0);
    const n = await node(clock);
    const key = await register(n, 'late@example.com');
    for (const code of ['ana-late', 'ana-gone']) expect((await call(n, 'POST', '/api/shorten', { url: `https://example.com/${code}`, code }, key)).status).toBe(201);
    expect(await visit(n, 'ana-late', UA.chromeWin)).toBe(302);
    await visitAnalytics(n.services).flush();
    // The store refuses the analytics' writes: DAY1's next clicks stay in this instance's memory.
    const warn = vi.spyOn(n.services.log, 'warn').mockImplementation(() => {});
    const refuse = await refuseDayWrites(n, -1);
    for (let i = 0; i < 2; i++) expect(await visit(n, 'ana-late', UA.firefoxLinux)).toBe(302);
    expect(await visit(n, 'ana-gone', UA.chromeWin)).toBe(302);
    await visitAnalytics(n.services).flush();
    expect(await refuse.calls()).toBeGreaterThan(0);
    // Four days on, the roll-up passes DAY1 without them; ana-gone is deleted by another instance.
    clock.t = T0 + 4 * 24 * HOUR;
    expect(await rollUpDue(n.services)).toMatchObject({ through: '2026-11-23', behindDays: 0 });
    const clicks = n.services.store.collection(LINK_CLICKS);
    expect(await clicks.get('ana-late')).toMatchObject({ clicks: 1, through: DAY1 });
    expect(await n.services.store.collection(LINKS).delete('ana-gone')).toBe(true);
    // The store takes the writes again: the late clicks go to ana-late's total, not to a record for
    // ana-gone. The day records' write is refused once more after them: the chunk is sent again
    // under its token, and the late clicks are not added twice.
    await refuse.restore();
    const again = await refuseDayWrites(n, 1);
    await visitAnalytics(n.services).flush();
    expect(await clicks.get('ana-late')).toMatchObject({ clicks: 3 });
    await visitAnalytics(n.services).flush();
    expect(await again.calls()).toBe(2);
    await again.restore();
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('2 clicks written after their day was rolled up'));
    warn.mockRestore();
    expect(await clicks.get('ana-late')).toMatchObject({ clicks: 3, through: DAY1, lastClickedMs: T0 });
    expect(await clicks.get('ana-gone')).toBeUndefined();
    const stats = await json(call(n, 'GET', `/api/shorten?code=ana-late&from=${DAY1}&to=${DAY1}`, undefined, key));
    expect([stats.clicks, (stats.visits as { byDay: unknown[] }).byDay]).toStrictEqual([3, [{ day: DAY1, visits: 3 }]]);
    // The roll-up again, or a later day's: nothing twice.
    clock.t += 24 * HOUR;
    await rollUpDue(n.services);
    expect((await json(call(n, 'GET', '/api/shorten?code=ana-late', undefined, key))).clicks).toBe(3);
  });

  it('a day record is swept past the 90 days only once its clicks are rolled up', async () => {
    const { clock, n, key } = await visitedOnce('ana-unf');
    const days = n.services.store.collection(LINK_DAYS);
    // The roll-up is stuck before DAY1 (its instance gone); 95 days later DAY1 is past the window.
    clock.t = T0 + 95 * 24 * HOUR;
    const scan = vi.spyOn(n.services.store, 'scan').mockRejectedValue(new Error('store failing'));
    const warn = vi.spyOn(n.services.log, 'warn').mockImplementation(() => {});
    expect(await sweepAnalytics(n.services)).toBe(0);
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('rolling up the clicks'), expect.any(Error));
    expect(await days.get(dayId(DAY1, 'ana-unf'))).toMatchObject({ clicks: 1 });
    expect((await json(call(n, 'GET', '/api/shorten?code=ana-unf', undefined, key))).clicks).toBe(1);
    scan.mockRestore();
    warn.mockRestore();
    expect(await sweepAnalytics(n.services)).toBe(1);
    expect(await days.get(dayId(DAY1, 'ana-unf'))).toBeUndefined();
    expect(await n.services.store.collection(LINK_CLICKS).get('ana-unf')).toMatchObject({ clicks: 1, through: DAY1 });
    expect((await json(call(n, 'GET', '/api/shorten?code=ana-unf', undefined, key))).clicks).toBe(1);
  });

  it('a background sweep deletes day records past the 90 days of every link, a bounded batch a run, in both layouts', async () => {
    const clock = manualClock(T0);
    const n = await node(clock);
    const days = n.services.store.collection(LINK_DAYS);
    const before = n.services.store.collection(LINK_DAY_STATS);
    const put = (code: string, day: string) => days.add(dayId(day, code), { visits: 1 }, { init: { id: dayId(day, code) } });
    const putBefore = (code: string, day: string) => before.add(`${code}|${day}`, { visits: 1 }, { init: { id: `${code}|${day}`, code, day } });
    for (let i = 0; i < 7; i++) await put(`sw${i}`, '2026-08-01');
    for (let i = 0; i < 3; i++) await putBefore(`sw${i}`, '2026-08-02');
    await put('sw0', '2026-08-24'); // day 90 counted back from 2026-11-21: kept
    await put('sw0', '2026-11-22');
    await putBefore('sw1', '2026-08-24');
    clock.t = Date.parse('2026-11-21T12:00:00Z');
    expect(await sweepAnalytics(n.services, 5)).toBe(8);
    expect(await sweepAnalytics(n.services, 5)).toBe(2);
    expect(await sweepAnalytics(n.services, 5)).toBe(0);
    expect((await days.query()).map((r) => r.id)).toStrictEqual(['2026-08-24|sw0', '2026-11-22|sw0']);
    expect((await before.query()).map((r) => r.id)).toStrictEqual(['sw1|2026-08-24']);
  });

  it('hostile cardinality: 10,000 distinct referrers and User-Agents keep every counter bounded; the totals stay exact', async () => {
    const clock = manualClock(T0);
    const n = await node(clock);
    const key = await register(n, 'hostile@example.com');
    await call(n, 'POST', '/api/shorten', { url: 'https://example.com/h', code: 'ana-hot' }, key);
    const N = 10_000;
    for (let i = 0; i < N; i += 100) {
      // Every visit a new User-Agent and a new referrer host; flushed now and then (several writes of the record).
      await Promise.all(Array.from({ length: 100 }, (_, j) => visit(n, 'ana-hot', `Mozilla/5.0 (X11; Linux x86_64; rv:${i + j}.0) Gecko/20100101 Firefox/${i + j}.0`, `https://r${i + j}.example/p?${i}`)));
      if (i % 2000 === 0) await visitAnalytics(n.services).flush();
    }
    await visitAnalytics(n.services).flush();
    const rec = await n.services.store.collection(LINK_DAYS).get(dayId(DAY1, 'ana-hot'));
    const referrers = Object.entries(rec!).filter(([f]) => f.startsWith('ref:')) as [string, number][];
    expect(referrers.length).toBe(COUNTER_CAPS.referrers + 1);
    expect(referrers.reduce((t, [, v]) => t + v, 0)).toBe(N);
    expect(referrers.find(([k]) => k === 'ref:other')).toStrictEqual(['ref:other', N - COUNTER_CAPS.referrers]);
    expect(Object.entries(rec!).filter(([f]) => f.startsWith('br:'))).toStrictEqual([['br:Firefox', N]]);
    expect(JSON.stringify(rec).length).toBeLessThan(3000);
    const stats = await json(call(n, 'GET', '/api/shorten?code=ana-hot', undefined, key));
    expect([stats.clicks, (stats.referrers as unknown[]).length, (stats.referrers as Json[]).at(-1)]).toStrictEqual([N, 51, { host: 'other', visits: N - 50 }]);
  });
}

/** Every byte the store holds: the data dir's files, or every key and value under Redis. */
let everything: (n: ListeningApp) => Promise<string>;

describe('short link analytics, file store', () => {
  beforeAll(() => {
    everything = async (n) => readDir(n.services.config.dataDir);
  });
  analyticsSuite(() => ({}));
});

describe('short link analytics, file store, the analytics thread (ANALYTICS_THREAD=worker)', () => {
  beforeAll(() => {
    everything = async (n) => readDir(n.services.config.dataDir);
  });
  analyticsSuite(() => ({ ANALYTICS_THREAD: 'worker' }));
});

function readDir(dir: string): string {
  let out = '';
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out += fs.readFileSync(path.join(e.parentPath, e.name), 'latin1');
  }
  return out;
}

let redis: TestRedis | undefined;
afterAll(async () => {
  await redis?.stop();
});

describeRedis('short link analytics, Redis', () => {
  let prefix = '';
  beforeAll(async () => {
    redis = await startRedis();
    everything = async () => dumpRedis(redis!.socket, prefix);
  });
  analyticsSuite(() => {
    prefix = redis!.prefix();
    return { REDIS_URL: redis!.url, REDIS_PREFIX: prefix };
  });

  /** Three instances on one Redis prefix of their own, on `clock`. */
  async function threeNodes(clock: ManualClock): Promise<ListeningApp[]> {
    const prefix3 = redis!.prefix();
    const nodes: ListeningApp[] = [];
    // The second counts in its analytics thread (ANALYTICS_THREAD=worker): a deployment may mix both.
    for (let i = 0; i < 3; i++) nodes.push(closing(await listenTestApp({ env: { REDIS_URL: redis!.url, REDIS_PREFIX: prefix3, ANALYTICS_THREAD: i === 1 ? 'worker' : 'main' }, overrides: { clock } })));
    return nodes;
  }

  it('3 instances count into the same records: concurrent visits spread over them add up exactly (no lost update)', async () => {
    const clock = manualClock(T0);
    const nodes = await threeNodes(clock);
    const key = await register(nodes[0]!, 'three@example.com');
    await call(nodes[1]!, 'POST', '/api/shorten', { url: 'https://example.com/3', code: 'ana-3' }, key);
    const uas = [UA.chromeWin, UA.safariIphone, UA.googlebot];
    for (let round = 0; round < 5; round++) {
      // 60 visits per round, 20 per instance, while every instance flushes: writes race on one record.
      await Promise.all([
        ...Array.from({ length: 60 }, (_, i) => visit(nodes[i % 3]!, 'ana-3', uas[i % 3]!, i % 2 ? `https://h${i % 4}.example/p` : undefined)),
        ...nodes.map((n) => visitAnalytics(n.services).flush()),
      ]);
    }
    for (const n of nodes) await visitAnalytics(n.services).flush();
    const stats = await json(call(nodes[2]!, 'GET', '/api/shorten?code=ana-3', undefined, key));
    expect((stats.visits as { byDay: { visits: number }[] }).byDay.at(-1)).toStrictEqual({ day: DAY1, visits: 200 });
    expect(stats.bots).toStrictEqual({ visits: 100, names: [{ name: 'Googlebot', visits: 100 }] });
    expect(stats.browsers).toStrictEqual([
      { name: 'Chrome', visits: 100 },
      { name: 'Safari', visits: 100 },
    ]);
    // i odd → a referrer; the people (i % 3 ≠ 2) with odd i, by i % 4: h1 and h3.
    expect((stats.referrers as Json[]).reduce((t, r) => t + (r.visits as number), 0)).toBe(200);
    await expect.poll(async () => (await json(call(nodes[0]!, 'GET', '/api/shorten?code=ana-3', undefined, key))).clicks).toBe(200);
  });

  it('a link deleted on one instance: another drops its unwritten counts of it when it reads the change, so a reclaim starts from zero', async () => {
    const clock = manualClock(T0);
    const [a, b] = await threeNodes(clock);
    const key = await register(a!, 'del@example.com');
    expect((await call(a!, 'POST', '/api/shorten', { url: 'https://example.com/d', code: 'ana-del' }, key)).status).toBe(201);
    // b's writes of analytics are refused for now: its count of the visit stays unwritten.
    const held = vi.spyOn(b!.services.store.collection(LINK_DAYS), 'addMany').mockRejectedValue(new Error('held by the test'));
    try {
      expect(await visit(b!, 'ana-del', UA.chromeWin)).toBe(302);
      expect((await call(a!, 'DELETE', '/api/links/ana-del', undefined, key)).status).toBe(200);
      await linkTraffic(b!.services).sync();
    } finally {
      held.mockRestore();
    }
    await visitAnalytics(b!.services).flush();
    expect((await call(a!, 'POST', '/api/shorten', { url: 'https://example.com/d2', code: 'ana-del' }, key)).status).toBe(201);
    const stats = await json(call(a!, 'GET', '/api/shorten?code=ana-del', undefined, key));
    expect(stats.clicks).toBe(0);
    expect((stats.visits as { byDay: { visits: number }[] }).byDay.filter((d) => d.visits > 0)).toStrictEqual([]);
  });

  it('3 instances roll up the same days at once, a page at a time: every day’s clicks go in exactly once', async () => {
    const clock = manualClock(T0);
    const nodes = await threeNodes(clock);
    const key = await register(nodes[0]!, 'rollup3@example.com');
    // 600 links (more than two pages of the roll-up), visited on two days; link i i % 3 + 1 times a day.
    const codes = Array.from({ length: 600 }, (_, i) => `f3-${i}`);
    const links = nodes[0]!.services.store.collection(LINKS);
    for (const code of codes) await links.put({ code, url: `https://example.com/${code}`, createdAt: new Date(T0).toISOString(), creator: 'key:k', creatorKeyId: 'k', creatorDay: 'key:k|2026-11-22' });
    for (const day of [0, 1]) {
      clock.t = T0 + day * 24 * HOUR;
      for (let i = 0; i < codes.length; i += 50) {
        await Promise.all(codes.slice(i, i + 50).flatMap((code, j) => Array.from({ length: ((i + j) % 3) + 1 }, (_, k) => visit(nodes[(i + j + k) % 3]!, code, UA.chromeWin))));
      }
      for (const n of nodes) await visitAnalytics(n.services).flush();
    }
    const want = codes.map((_, i) => 2 * ((i % 3) + 1));
    const totals = async () => (await clicksOf(nodes[1]!.services, (await links.getMany(codes)).map((l) => l!))).map((c) => c.clicks);
    expect(await totals()).toStrictEqual(want);
    clock.t = T0 + 4 * 24 * HOUR + HOUR; // both days are now 3 days old or more
    // Small passes on all three at once until the roll-up has reached the newest day it may roll up.
    const rollUps = nodes[0]!.services.store.collection(LINK_CLICK_ROLLUP);
    for (let pass = 0; (await rollUps.get(ROLLUP_ID))?.through !== '2026-11-23'; pass++) {
      expect(pass).toBeLessThan(50);
      await Promise.all(nodes.map((n) => rollUpClicks(n.services, 100)));
    }
    expect(await totals()).toStrictEqual(want);
    const recs = await nodes[2]!.services.store.collection(LINK_CLICKS).getMany(codes);
    expect(recs.map((r) => [r?.clicks, r?.through])).toStrictEqual(want.map((w) => [w, '2026-11-23']));
  });

  it('3 instances sweep at once: one holds the roll-up and rolls up, the others read where it stands', async () => {
    const clock = manualClock(T0);
    const nodes = await threeNodes(clock);
    const key = await register(nodes[0]!, 'lease3@example.com');
    await call(nodes[0]!, 'POST', '/api/shorten', { url: 'https://example.com/l3', code: 'ana-l3' }, key);
    for (const [i, n] of nodes.entries()) expect(await visit(n, 'ana-l3', i === 2 ? UA.firefoxLinux : UA.chromeWin)).toBe(302);
    for (const n of nodes) await visitAnalytics(n.services).flush();
    clock.t = T0 + 3 * 24 * HOUR + HOUR;
    const outcomes = await Promise.all(nodes.map((n) => rollUpDue(n.services)));
    expect(outcomes.filter((o) => o.held)).toHaveLength(1);
    expect(outcomes.map((o) => o.read).sort()).toStrictEqual([0, 0, 1]);
    const holder = outcomes.findIndex((o) => o.held);
    expect(outcomes[holder]).toMatchObject({ through: DAY1, behindDays: 0 });
    // The others read the roll-up as it stood then; at their next sweep, as the holder left it.
    expect(await rollUpDue(nodes[(holder + 1) % 3]!.services)).toStrictEqual({ read: 0, through: DAY1, behindDays: 0, held: false });
    expect(await nodes[1]!.services.store.collection(LINK_CLICKS).get('ana-l3')).toMatchObject({ clicks: 3, through: DAY1 });
    expect((await json(call(nodes[2]!, 'GET', '/api/shorten?code=ana-l3', undefined, key))).clicks).toBe(3);
  });

  it('export from the file store → import into Redis keeps the analytics', async () => {
    const dir = tempDir();
    const clock = manualClock(T0);
    const src = await listenTestApp({ env: { DATA_DIR: dir }, overrides: { clock } });
    const key = await register(src, 'move@example.com');
    await call(src, 'POST', '/api/shorten', { url: 'https://example.com/mv', code: 'ana-mv' }, key);
    await dayOne(src, 'ana-mv');
    const before = await json(call(src, 'GET', '/api/shorten?code=ana-mv', undefined, key));
    await src.close();
    const known = families.flatMap((f) => f.collections ?? []);
    const file = path.join(tempDir(), 'links.jsonl');
    expect(await transferCommand('export', [file], testConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent' }), { known })).toBe(0);
    const env = { REDIS_URL: redis!.url, REDIS_PREFIX: redis!.prefix(), LOG_LEVEL: 'silent' };
    expect(await transferCommand('import', [file], testConfig(env), { known })).toBe(0);
    const n = closing(await listenTestApp({ env, overrides: { clock } }));
    const after = await json(call(n, 'GET', '/api/shorten?code=ana-mv', undefined, key));
    expect(after).toStrictEqual(before);
    expect((after.bots as Json).visits).toBe(5);
  });
});

describeRedis('short link analytics, Redis, the analytics thread (ANALYTICS_THREAD=worker)', () => {
  let prefix = '';
  beforeAll(async () => {
    redis ??= await startRedis();
    everything = async () => dumpRedis(redis!.socket, prefix);
  });
  analyticsSuite(() => {
    prefix = redis!.prefix();
    return { REDIS_URL: redis!.url, REDIS_PREFIX: prefix, ANALYTICS_THREAD: 'worker' };
  });
});

/** Every key under `prefix` with its value, whatever its type. */
async function dumpRedis(socket: string, prefix: string): Promise<string> {
  const r = new Redis({ path: socket, lazyConnect: true });
  await r.connect();
  try {
    let out = '';
    for (const k of await r.keys(`${prefix}*`)) {
      const type = await r.type(k);
      const v =
        type === 'string' ? await r.get(k) : type === 'hash' ? await r.hgetall(k) : type === 'zset' ? await r.zrange(k, 0, -1, 'WITHSCORES') : type === 'set' ? await r.smembers(k) : type === 'list' ? await r.lrange(k, 0, -1) : type;
      out += `${k} ${JSON.stringify(v)}\n`;
    }
    return out;
  } finally {
    r.disconnect();
  }
}

describe('visit classification', () => {
  it('referrer → host only, lower-cased; none → direct; not an http(s) URL or an IP address → other', () => {
    expect(
      ['https://News.Example.com/a/b?c=d#e', 'http://u:p@[::1]:8080/x', 'https://xn--bcher-kva.example/', 'http://bücher.example/', '', undefined, 'android-app://com.x', 'not a url', '/relative'].map((r) => referrerHost(r)),
    ).toStrictEqual(['news.example.com', 'other', 'xn--bcher-kva.example', 'xn--bcher-kva.example', 'direct', 'direct', 'other', 'other', 'other']);
  });

  it('the host is what WHATWG URL says it is, shortcut or not (IPv4 forms, credentials, ports, backslashes, trailing dots, IDNs)', () => {
    const tricky = ['https://0x7f.1/', 'http://1.2.3.4:80/', 'http://2130706433/', 'https://a.b.c.example./x', 'HTTPS://X.ORG', 'https://user:pw@x.org/', 'https://x.org\\y', 'https://x.org:443?q', 'https://ex-ample.com#f', 'https://münchen.example/', 'https://x.org:99999/', 'https://a_b.example/', 'http://[2001:db8::1]/'];
    for (const ref of tricky) {
      const parsed = URL.canParse(ref) ? new URL(ref).hostname.toLowerCase() : 'other';
      // An IP address (as URL normalises it) is not kept as a host.
      const oracle = parsed.startsWith('[') || /^\d+\.\d+\.\d+\.\d+$/.test(parsed) ? 'other' : parsed;
      expect(referrerHost(ref), ref).toBe(oracle);
    }
  });

  it('crawlers and link-preview fetchers are bots; browsers and HTTP libraries (curl, node) are people', () => {
    const cache = new UaCache(4);
    for (const ua of [UA.googlebot, UA.slackbot, UA.facebook, UA.twitterbot, 'LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)', 'WhatsApp/2.23.20.0 A', 'Iframely/1.3.1 (+https://iframely.com/docs/about)']) {
      expect(cache.info(ua), ua).toMatchObject({ bot: true, device: 'bot' });
    }
    const headless = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.6099.28 Safari/537.36';
    for (const ua of [UA.chromeWin, UA.safariIphone, UA.curl, 'node', 'python-requests/2.32.3', headless, '', undefined]) expect(cache.info(ua).bot, String(ua)).toBe(false);
    expect(cache.size).toBe(4); // bounded: the least recently used went
    expect(cache.info(UA.safariIpad)).toStrictEqual({ bot: false, browser: 'Safari', os: 'iOS', device: 'tablet' });
    expect(cache.info(undefined)).toStrictEqual({ bot: false, browser: 'other', os: 'other', device: 'other' });
  });

  it('a referrer that is an IP address is counted as other, in any spelling', () => {
    for (const ref of ['http://127.0.0.1/x?secret=1', 'http://0x7f.1/', 'http://2130706433/', 'https://10.0.0.7:8443/wiki', 'http://[::1]/', 'http://[fe80::1%25eth0]/']) expect(referrerHost(ref), ref).toBe('other');
    expect(referrerHost('https://News.Example.com/a?b')).toBe('news.example.com');
    expect(referrerHost('https://1example.com/')).toBe('1example.com');
  });

  it('no text of a User-Agent becomes a family or bot name: a name bowser does not know is counted as other', () => {
    const cache = new UaCache();
    // bowser names an unknown browser after the text before the first '/': the sender's words.
    expect(cache.info('MyApp user=alice token=abc123/2.0 (iPhone)')).toMatchObject({ browser: 'other' });
    expect(cache.info('MyApp user=alice@example.com token=abc123/2.0 (iPhone)')).toMatchObject({ browser: 'other' });
    expect(cache.info('secret-crawler-alice bot/1.0')).toMatchObject({ bot: true, browser: 'other' });
    // Names bowser knows stay.
    expect(cache.info(UA.googlebot)).toMatchObject({ bot: true, browser: 'Googlebot' });
    expect(cache.info(UA.chromeWin)).toMatchObject({ bot: false, browser: 'Chrome', os: 'Windows' });
  });
});
