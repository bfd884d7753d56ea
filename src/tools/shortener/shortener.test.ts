import { afterEach, describe, expect, it, vi } from 'vitest';
import { tempDir, toolHarness, type HarnessOptions, type ToolHarness } from '../../../test/harness.js';
import type { ToolError } from '../../errors.js';
import { manualClock } from '../../core/clock.js';
import type { Caller } from '../../registry.js';
import { loadFamily } from '../../core/family.js';
import { shortener } from './manifest.js';
import { countLinksCreatedToday, LINKS, linkCodes, linkOwnerKey } from './links.js';
import { linkTraffic, READ_BATCH_MAX, resolveShortLink, URL_CACHE_MAX } from './traffic.js';
import { LINK_CHANGES, LINK_CLICKS, LINK_EXTERNAL_IDS, LINK_TOMBSTONES, LINK_VISITS } from './links.js';
import { dayId, LINK_DAY_STATS, LINK_DAYS } from './analytics-counters.js';
import { ANALYTICS_FLUSH_MS, sweepAnalytics } from './analytics.js';
import { ROLLUP_ID, rollUpClicks } from './clicks.js';
import { clicksOf } from './clicks-read.js';
import { LINK_CLICK_ROLLUP } from './links.js';
import { urlShorten } from './url-shorten.js';
import { urlStats } from './url-stats.js';

const T0 = Date.parse('2026-11-22T09:00:00.000Z');
const clock = manualClock(T0);
const running: ToolHarness[] = [];

async function harness(opts: HarnessOptions = {}): Promise<ToolHarness> {
  const s = await toolHarness({ clock, ...opts });
  running.push(s);
  return s;
}
afterEach(async () => {
  clock.t = T0;
  vi.restoreAllMocks();
  for (const s of running.splice(0)) await s.close();
});

const shorten = (s: ToolHarness, input: unknown, caller: Partial<Caller> = {}) => s.call(urlShorten, input, { caller });
const stats = (s: ToolHarness, input: unknown) => s.call(urlStats, input);

describe('url_shorten', () => {
  it('generates a 7-character base62 code and stores who created it, when', async () => {
    const s = await harness();
    const out = await shorten(s, { url: 'https://example.com/a?b=c#d' }, { keyId: 'k1' });
    const code = out.code as string;
    expect(code).toMatch(/^[A-Za-z0-9]{7}$/);
    expect(out).toStrictEqual({ shortUrl: `http://short.test/s/${code}`, code, url: 'https://example.com/a?b=c#d', createdAt: '2026-11-22T09:00:00.000Z', managed: true });
    expect(await s.services.store.collection(LINKS).get(code)).toStrictEqual({
      code,
      url: 'https://example.com/a?b=c#d',
      createdAt: '2026-11-22T09:00:00.000Z',
      creator: 'key:k1',
      creatorKeyId: 'k1',
      creatorDay: 'key:k1|2026-11-22',
      ownerTime: `k1|2026-11-22T09:00:00.000Z|${code}`,
    });
  });

  it('generated codes are distinct and their characters uniform over the whole alphabet', async () => {
    // 20,000 codes draw ≈ 145 kB from the CSPRNG: many refills of the 4 KiB pool.
    const seen = new Set<string>();
    for (let i = 0; i < 20_000; i++) seen.add(linkCodes.generate());
    expect(seen.size).toBe(20_000);
    const counts = new Map<string, number>();
    for (const ch of [...seen].join('')) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    expect(counts.size).toBe(62);
    // Pearson's χ² with 61 degrees of freedom: mean 61, above 130 with p < 1e-8 when uniform.
    // Taking bytes mod 62 without rejecting 248–255 makes 8 characters 25 % likelier: χ² ≈ 1,000.
    const expected = (20_000 * 7) / 62;
    const chi2 = [...counts.values()].reduce((a, n) => a + (n - expected) ** 2 / expected, 0);
    expect(chi2).toBeLessThan(130);
  });

  it('takes a custom code; the same code again is a 409 CONFLICT, even for the same URL', async () => {
    const s = await harness();
    expect(await shorten(s, { url: 'http://example.com', code: 'My_link-1' })).toStrictEqual({
      shortUrl: 'http://short.test/s/My_link-1',
      code: 'My_link-1',
      url: 'http://example.com/',
      createdAt: '2026-11-22T09:00:00.000Z',
      managed: false,
      note: 'Created without an API key: this link belongs to nobody and cannot be listed, updated or deleted.',
    });
    expect(await s.failure(urlShorten, { url: 'http://example.com', code: 'My_link-1' })).toStrictEqual({
      status: 409,
      code: 'CONFLICT',
      message: 'The short code "My_link-1" is already taken',
      details: { code: 'My_link-1' },
    });
    // Codes are case-sensitive, like the generated ones.
    expect((await shorten(s, { url: 'http://example.com', code: 'my_link-1' })).code).toBe('my_link-1');
  });

  it('concurrent requests for one custom code: exactly one wins', async () => {
    const s = await harness();
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => shorten(s, { url: `https://example.com/${i}`, code: 'race' })));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const rejected = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(rejected.map((r) => (r.reason as ToolError).code)).toStrictEqual(Array(19).fill('CONFLICT'));
  });

  it('a generated code that is taken is drawn again', async () => {
    const s = await harness();
    await shorten(s, { url: 'https://example.com/1', code: 'AAAAAAA' });
    const gen = vi.spyOn(linkCodes, 'generate').mockReturnValueOnce('AAAAAAA').mockReturnValueOnce('AAAAAAA').mockReturnValueOnce('BBBBBBB');
    expect((await shorten(s, { url: 'https://example.com/2' })).code).toBe('BBBBBBB');
    expect(gen).toHaveBeenCalledTimes(3);
    gen.mockReturnValue('AAAAAAA');
    expect(await s.failure(urlShorten, { url: 'https://example.com/3' })).toStrictEqual({ status: 500, code: 'INTERNAL', message: 'Internal error' });
  });

  it('normalises the long URL (scheme and host case, IDN, spaces, surrounding whitespace)', async () => {
    const s = await harness();
    const url = async (u: string) => (await shorten(s, { url: u })).url;
    expect(await url('  HTTPS://Example.COM  ')).toBe('https://example.com/');
    expect(await url('https://bücher.example/a b?q=ü')).toBe('https://xn--bcher-kva.example/a%20b?q=%C3%BC');
    expect(await url('http://localhost:8080/x')).toBe('http://localhost:8080/x');
    expect(await url('https://example.com/s/abc')).toBe('https://example.com/s/abc');
  });

  it.each([
    [{}, 'url', 'Invalid input: expected string, received undefined'],
    [{ url: 42 }, 'url', 'Invalid input: expected string, received number'],
    [{ url: null }, 'url', 'Invalid input: expected string, received null'],
    [{ url: '' }, 'url', 'Too small: expected string to have >=1 characters'],
    [{ url: '   ' }, 'url', 'Too small: expected string to have >=1 characters'],
    [{ url: `https://example.com/${'a'.repeat(2030)}` }, 'url', 'Too big: expected string to have <=2048 characters'],
    [{ url: 'https://example.com', code: 'ab' }, 'code', 'must be 3-20 characters of A-Z a-z 0-9 _ -'],
    [{ url: 'https://example.com', code: 'a'.repeat(21) }, 'code', 'must be 3-20 characters of A-Z a-z 0-9 _ -'],
    [{ url: 'https://example.com', code: 'a b c' }, 'code', 'must be 3-20 characters of A-Z a-z 0-9 _ -'],
    [{ url: 'https://example.com', code: '../etc' }, 'code', 'must be 3-20 characters of A-Z a-z 0-9 _ -'],
    [{ url: 'https://example.com', code: 'ümlaut' }, 'code', 'must be 3-20 characters of A-Z a-z 0-9 _ -'],
    [{ url: 'https://example.com', code: 'abc\n' }, 'code', 'must be 3-20 characters of A-Z a-z 0-9 _ -'],
    [{ url: 'https://example.com', code: 123 }, 'code', 'Invalid input: expected string, received number'],
    [{ url: 'https://example.com', code: null }, 'code', 'Invalid input: expected string, received null'],
  ])('schema refuses %j (%s)', async (input, path, message) => {
    const s = await harness();
    expect(await s.failure(urlShorten, input)).toStrictEqual({
      status: 400,
      code: 'INVALID_INPUT',
      message: 'Invalid input for url_shorten',
      details: [{ path, message }],
    });
  });

  it.each([
    ['example.com/path', 'is not an absolute URL'],
    ['/relative', 'is not an absolute URL'],
    ['https://', 'is not an absolute URL'],
    ['http://exa mple.com', 'is not an absolute URL'],
    ['javascript:alert(1)', 'must use http or https, not javascript:'],
    ['JaVaScRiPt:alert(1)', 'must use http or https, not javascript:'],
    ['data:text/html,<script>alert(1)</script>', 'must use http or https, not data:'],
    ['ftp://example.com/file', 'must use http or https, not ftp:'],
    ['mailto:someone@example.com', 'must use http or https, not mailto:'],
    ['file:///etc/passwd', 'must use http or https, not file:'],
    ['https://bank.example@evil.example/', 'must not contain credentials (user:password@)'],
    ['https://user:secret@example.com/', 'must not contain credentials (user:password@)'],
    ['http://short.test/s/abcdefg', 'is already a short link of this service'],
    // Other spellings of the same host loop as well (session 24's review): a trailing dot, case, scheme, port.
    ['http://short.test./s/loop1', 'is already a short link of this service'],
    ['https://SHORT.test/s/loop1', 'is already a short link of this service'],
    ['http://short.test:8080/s/loop1', 'is already a short link of this service'],
    [`https://example.com/${'é'.repeat(400)}`, 'is longer than 2048 characters once normalised'],
  ])('refuses the long URL %s', async (url, message) => {
    const s = await harness();
    expect(await s.failure(urlShorten, { url })).toStrictEqual({
      status: 400,
      code: 'INVALID_INPUT',
      message: `Invalid input for url_shorten: url ${message}`,
      details: [{ path: 'url', message }],
    });
  });

  it('ignores unknown fields, including prototype keys', async () => {
    const s = await harness();
    const input = JSON.parse('{"url":"https://example.com","__proto__":{"code":"evil"},"constructor":1,"extra":true}') as unknown;
    const out = await shorten(s, input);
    expect(out.code).toMatch(/^[A-Za-z0-9]{7}$/);
  });
});

describe('url_stats and the redirect', () => {
  it('counts clicks and the last click time; unknown codes are 404, malformed ones 400', async () => {
    const s = await harness();
    const { code } = (await shorten(s, { url: 'https://example.com/x', code: 'stats1' })) as { code: string };
    expect(await stats(s, { code })).toStrictEqual({
      code: 'stats1',
      url: 'https://example.com/x',
      shortUrl: 'http://short.test/s/stats1',
      clicks: 0,
      createdAt: '2026-11-22T09:00:00.000Z',
      lastClickedAt: null,
    });
    clock.t = T0 + 60_000;
    expect(await resolveShortLink(s.services, code)).toBe('https://example.com/x');
    clock.t = T0 + 120_000;
    expect(await resolveShortLink(s.services, code)).toBe('https://example.com/x');
    expect(await stats(s, { code })).toStrictEqual({
      code: 'stats1',
      url: 'https://example.com/x',
      shortUrl: 'http://short.test/s/stats1',
      clicks: 2,
      createdAt: '2026-11-22T09:00:00.000Z',
      lastClickedAt: '2026-11-22T09:02:00.000Z',
    });
    expect(await s.failure(urlStats, { code: 'nope123' })).toStrictEqual({
      status: 404,
      code: 'NOT_FOUND',
      message: 'No short link with code "nope123"',
      details: { code: 'nope123' },
    });
    expect(await s.failure(urlStats, { code: 'x' })).toStrictEqual({
      status: 400,
      code: 'INVALID_INPUT',
      message: 'Invalid input for url_stats',
      details: [{ path: 'code', message: 'must be 3-20 characters of A-Z a-z 0-9 _ -' }],
    });
    expect(await s.failure(urlStats, {})).toMatchObject({ status: 400, code: 'INVALID_INPUT' });
  });

  it('resolveShortLink: null for unknown and malformed codes, and counts nothing for them', async () => {
    const s = await harness();
    for (const code of ['unknown1', '', 'ab', '../../etc/passwd', 'a'.repeat(5000), '__proto__', 'constructor']) {
      expect(await resolveShortLink(s.services, code)).toBe(null);
    }
    await linkTraffic(s.services).flush();
    expect(await s.services.store.collection(LINK_DAYS).count()).toBe(0);
    expect(await s.services.store.collection(LINK_CLICKS).count()).toBe(0);
  });

  it('links and clicks survive a restart (clicks are flushed on close)', async () => {
    const disk = { disk: true, env: { DATA_DIR: tempDir() } };
    let s = await toolHarness({ clock, ...disk });
    await shorten(s, { url: 'https://example.com/keep', code: 'keep1' });
    await resolveShortLink(s.services, 'keep1');
    await s.close();
    s = await harness(disk);
    expect(await stats(s, { code: 'keep1' })).toMatchObject({ url: 'https://example.com/keep', clicks: 1 });
  });
});

describe('links not cached are read together (issue 32)', () => {
  it('the codes one turn asks for are read by one getMany, a code asked twice once; a failed read fails its waiters only, a throwing store too', async () => {
    const s = await harness();
    for (let i = 0; i < 4; i++) await shorten(s, { url: `https://example.com/r${i}`, code: `read${i}` });
    const traffic = linkTraffic(s.services);
    for (let i = 0; i < 4; i++) traffic.forget(`read${i}`);
    const links = s.services.store.collection(LINKS);
    const getMany = vi.spyOn(links, 'getMany');
    const get = vi.spyOn(links, 'get');
    const codes = ['read0', 'read1', 'nope1', 'read1', 'read2'];
    expect(await Promise.all(codes.map((c) => resolveShortLink(s.services, c)))).toStrictEqual(['https://example.com/r0', 'https://example.com/r1', null, 'https://example.com/r1', 'https://example.com/r2']);
    expect(getMany.mock.calls.map((c) => c[0])).toStrictEqual([['read0', 'read1', 'nope1', 'read2']]);
    expect(get).not.toHaveBeenCalled();
    expect(await stats(s, { code: 'read1' })).toMatchObject({ clicks: 2 });

    getMany.mockRejectedValueOnce(new Error('store down'));
    await expect(Promise.all([resolveShortLink(s.services, 'read3'), resolveShortLink(s.services, 'nope2')])).rejects.toThrow('store down');
    // A store that throws at once (closed) fails the turn's reads, not the process.
    getMany.mockImplementationOnce(() => {
      throw new Error('store closed');
    });
    await expect(resolveShortLink(s.services, 'read3')).rejects.toThrow('store closed');
    expect(await resolveShortLink(s.services, 'read3')).toBe('https://example.com/r3');
    expect(getMany).toHaveBeenCalledTimes(4);
  });

  it(`more than READ_BATCH_MAX codes in one turn: reads of READ_BATCH_MAX at most`, async () => {
    const s = await harness();
    const getMany = vi.spyOn(s.services.store.collection(LINKS), 'getMany');
    const n = READ_BATCH_MAX + 44;
    expect(await Promise.all(Array.from({ length: n }, (_, i) => resolveShortLink(s.services, `unknown${i}`)))).toStrictEqual(Array.from({ length: n }, () => null));
    expect(getMany.mock.calls.map((c) => c[0].length)).toStrictEqual([READ_BATCH_MAX, 44]);
  });
});

describe('clicks in batches, long URLs cached (issue 21)', () => {
  const DAY = '2026-11-22';
  it("a click is in the store within ANALYTICS_FLUSH_MS (+ slack), in its day's record: one blind add per link-day and batch; url_stats counts it at once", async () => {
    const s = await harness();
    await shorten(s, { url: 'https://example.com/b', code: 'batch1' });
    const days = s.services.store.collection(LINK_DAYS);
    const addMany = vi.spyOn(days, 'addMany');
    for (let i = 0; i < 5; i++) expect(await resolveShortLink(s.services, 'batch1')).toBe('https://example.com/b');
    // Not written yet, but the instance that served the clicks already counts them.
    expect(await days.get(dayId(DAY, 'batch1'))).toBeUndefined();
    expect(await stats(s, { code: 'batch1' })).toMatchObject({ clicks: 5, lastClickedAt: '2026-11-22T09:00:00.000Z' });
    await vi.waitFor(async () => expect(await days.get(dayId(DAY, 'batch1'))).toMatchObject({ clicks: 5, last: T0 }), { timeout: ANALYTICS_FLUSH_MS * 8 });
    // One call, one item: the five visits as one add; no clicks record (one record per visit).
    expect(addMany).toHaveBeenCalledTimes(1);
    expect(addMany.mock.calls[0]![0].map((it) => [it.id, it.deltas.clicks, it.max])).toStrictEqual([[dayId(DAY, 'batch1'), 5, { last: T0 }]]);
    expect(await s.services.store.collection(LINK_CLICKS).get('batch1')).toBeUndefined();
    expect(await stats(s, { code: 'batch1' })).toMatchObject({ clicks: 5, lastClickedAt: '2026-11-22T09:00:00.000Z' });
  });

  it('a batch the store refuses is kept and written later; nothing is lost or counted twice', async () => {
    const s = await harness();
    await shorten(s, { url: 'https://example.com/f', code: 'fail1' });
    const days = s.services.store.collection(LINK_DAYS);
    const real = days.addMany.bind(days);
    let refuse = 2;
    vi.spyOn(days, 'addMany').mockImplementation((...args) => (refuse-- > 0 ? Promise.reject(new Error('disk full')) : real(...args)));
    const warn = vi.spyOn(s.services.log, 'warn').mockImplementation(() => {});
    await resolveShortLink(s.services, 'fail1');
    await linkTraffic(s.services).flush(); // refused
    await resolveShortLink(s.services, 'fail1');
    expect(await stats(s, { code: 'fail1' })).toMatchObject({ clicks: 2 });
    await linkTraffic(s.services).flush(); // refused again
    await linkTraffic(s.services).flush(); // written
    expect(await days.get(dayId(DAY, 'fail1'))).toMatchObject({ clicks: 2 });
    expect(await stats(s, { code: 'fail1' })).toMatchObject({ clicks: 2 });
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('link-days not written yet'), expect.any(Error));
  });

  it('clicks counted while a batch is being written go out with the next batch, without another click', async () => {
    const s = await harness();
    await shorten(s, { url: 'https://example.com/s', code: 'slow1' });
    const days = s.services.store.collection(LINK_DAYS);
    const real = days.addMany.bind(days);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let held = 0;
    vi.spyOn(days, 'addMany').mockImplementation(async (...args) => {
      held++;
      await gate;
      return real(...args);
    });
    await resolveShortLink(s.services, 'slow1');
    const first = linkTraffic(s.services).flush(); // held at the gate
    await resolveShortLink(s.services, 'slow1'); // counted while the first batch is in flight
    void linkTraffic(s.services).flush(); // one batch at a time: deferred, not dropped
    await vi.waitFor(() => expect(held).toBe(1));
    expect(await stats(s, { code: 'slow1' })).toMatchObject({ clicks: 2 });
    release();
    await first;
    await vi.waitFor(async () => expect(await days.get(dayId(DAY, 'slow1'))).toMatchObject({ clicks: 2 }), { timeout: ANALYTICS_FLUSH_MS * 8 });
  });

  it('a clicks record of an older version (lastClickedAt, or clicks counted per visit) adds up with the days; the later time wins', async () => {
    const s = await harness();
    await shorten(s, { url: 'https://example.com/o', code: 'old1' });
    const clicks = s.services.store.collection(LINK_CLICKS);
    await clicks.put({ code: 'old1', clicks: 7, lastClickedAt: '2026-11-21T08:00:00.000Z' });
    expect(await stats(s, { code: 'old1' })).toMatchObject({ clicks: 7, lastClickedAt: '2026-11-21T08:00:00.000Z' });
    await resolveShortLink(s.services, 'old1');
    await linkTraffic(s.services).flush();
    expect(await clicks.get('old1')).toStrictEqual({ code: 'old1', clicks: 7, lastClickedAt: '2026-11-21T08:00:00.000Z' });
    expect(await stats(s, { code: 'old1' })).toMatchObject({ clicks: 8, lastClickedAt: '2026-11-22T09:00:00.000Z' });
    // An older version counts into both: its day record's `visits` (analytics only) and the clicks record.
    await s.services.store.collection(LINK_DAYS).add(dayId(DAY, 'old1'), { visits: 1 }, { init: { id: dayId(DAY, 'old1') } });
    await clicks.put({ code: 'old1', clicks: 8, lastClickedAt: '2026-11-23T00:00:00.000Z' });
    expect(await stats(s, { code: 'old1' })).toMatchObject({ clicks: 9, lastClickedAt: '2026-11-23T00:00:00.000Z' });
  });

  it('a batch of many codes is written with the event loop turning in between; every click lands', async () => {
    const s = await harness();
    const links = s.services.store.collection(LINKS);
    const codes = Array.from({ length: 600 }, (_, i) => `many${i}`);
    for (const code of codes) await links.put({ code, url: `https://example.com/${code}`, createdAt: '2026-11-22T09:00:00.000Z', creator: 'key:k', creatorKeyId: 'k', creatorDay: 'key:k|2026-11-22' });
    for (const code of codes) await resolveShortLink(s.services, code);
    let turns = 0;
    let done = false;
    const spin = () => {
      if (done) return;
      turns++;
      setImmediate(spin);
    };
    setImmediate(spin);
    await linkTraffic(s.services).flush();
    done = true;
    expect(turns).toBeGreaterThanOrEqual(2);
    const days = s.services.store.collection(LINK_DAYS);
    expect(await days.count()).toBe(600);
    expect(await days.get(dayId(DAY, 'many599'))).toMatchObject({ clicks: 1 });
    const all = await clicksOf(s.services, await links.getMany(codes).then((l) => l.map((x) => x!)));
    expect(all.every((c) => c.clicks === 1)).toBe(true);
  });

  it('an unknown code is not cached: created a moment later, it redirects', async () => {
    const s = await harness();
    expect(await resolveShortLink(s.services, 'later1')).toBe(null);
    await shorten(s, { url: 'https://example.com/later', code: 'later1' });
    expect(await resolveShortLink(s.services, 'later1')).toBe('https://example.com/later');
    expect(linkTraffic(s.services).url('later1')).toBe('https://example.com/later');
  });

  it('the URL cache is bounded: the oldest entry goes first', async () => {
    const s = await harness();
    const t = linkTraffic(s.services);
    for (let i = 0; i <= URL_CACHE_MAX; i++) t.remember(`c${i}`, `https://example.com/${i}`);
    expect(t.cachedUrls).toBe(URL_CACHE_MAX);
    expect(t.url('c0')).toBeUndefined();
    expect(t.url(`c${URL_CACHE_MAX}`)).toBe(`https://example.com/${URL_CACHE_MAX}`);
  });

  it.each([['memory', false], ['file', true]])('LINK_CACHE_MAX bounds the cache (%s store); a re-read code does not push another out', async (_, disk) => {
    const s = await harness({ env: { LINK_CACHE_MAX: '3' }, disk });
    for (const c of ['cap1', 'cap2', 'cap3', 'cap4']) await shorten(s, { url: `https://example.com/${c}`, code: c });
    const t = linkTraffic(s.services);
    for (const c of ['cap1', 'cap2', 'cap3']) expect(await resolveShortLink(s.services, c)).toBe(`https://example.com/${c}`);
    expect(await resolveShortLink(s.services, 'cap1')).toBe('https://example.com/cap1');
    expect(t.cachedUrls).toBe(3);
    expect(t.url('cap2')).toBe('https://example.com/cap2');
    expect(await resolveShortLink(s.services, 'cap4')).toBe('https://example.com/cap4');
    expect(t.cachedUrls).toBe(3);
    expect(t.url('cap1')).toBeUndefined();
    expect(t.url('cap4')).toBe('https://example.com/cap4');
  });

  it('LINK_CACHE_MAX=0 caches nothing: every redirect reads the store, and sees an update at once', async () => {
    const s = await harness({ env: { LINK_CACHE_MAX: '0' } });
    await shorten(s, { url: 'https://example.com/none', code: 'none1' });
    expect(await resolveShortLink(s.services, 'none1')).toBe('https://example.com/none');
    expect(linkTraffic(s.services).cachedUrls).toBe(0);
    await s.services.store.collection(LINKS).update('none1', (cur) => ({ ...cur!, url: 'https://example.com/moved' }));
    expect(await resolveShortLink(s.services, 'none1')).toBe('https://example.com/moved');
  });

  it('a plain link is cached as its URL; a link with rules keeps them (and its used-up mark)', async () => {
    const s = await harness();
    await shorten(s, { url: 'https://example.com/plain', code: 'plain1' });
    await shorten(s, { url: 'https://example.com/ruled', code: 'ruled1', maxVisits: 1, expiredUrl: 'https://example.com/after' });
    expect(await resolveShortLink(s.services, 'plain1')).toBe('https://example.com/plain');
    expect(linkTraffic(s.services).cached('plain1')).toStrictEqual({ url: 'https://example.com/plain', expiresAt: null, expiredUrl: null, maxVisits: null, usedUp: false });
    expect(await resolveShortLink(s.services, 'ruled1')).toBe('https://example.com/ruled');
    expect(linkTraffic(s.services).url('ruled1')).toBeUndefined();
    expect(await resolveShortLink(s.services, 'ruled1')).toBe(null);
    expect(linkTraffic(s.services).cached('ruled1')).toMatchObject({ maxVisits: 1, usedUp: true, expiredUrl: 'https://example.com/after' });
  });
});

describe('short links per day, counted from the store', () => {
  it('per key, per hashed client address, per UTC day', async () => {
    const s = await harness();
    const alice = { keyId: 'alice' };
    const anon = { keyId: null, ip: '203.0.113.9' };
    for (let i = 0; i < 3; i++) await shorten(s, { url: 'https://example.com' }, alice);
    await shorten(s, { url: 'https://example.com' }, anon);
    clock.t = Date.parse('2026-11-22T23:59:59.999Z');
    await shorten(s, { url: 'https://example.com' }, alice);
    clock.t = Date.parse('2026-11-23T00:00:00.000Z');
    await shorten(s, { url: 'https://example.com' }, alice);
    const owner = linkOwnerKey({ keyId: 'alice', ip: 'whatever' });
    expect(owner).toBe('key:alice');
    expect(await countLinksCreatedToday(s.services.store, owner, T0)).toBe(4);
    expect(await countLinksCreatedToday(s.services.store, owner, clock.t)).toBe(1);
    const anonOwner = linkOwnerKey(anon);
    expect(anonOwner).toMatch(/^ip:[0-9a-f]{24}$/);
    expect(anonOwner).not.toContain('203.0.113.9');
    expect(await countLinksCreatedToday(s.services.store, anonOwner, T0)).toBe(1);
    expect(await countLinksCreatedToday(s.services.store, linkOwnerKey({ keyId: null, ip: '203.0.113.10' }), T0)).toBe(0);
  });
});

describe('declarations', () => {
  it('family (loaded through its manifest), REST bindings and honest annotations', async () => {
    const family = await loadFamily(shortener);
    expect(family.collections).toStrictEqual([LINKS, LINK_CLICKS, LINK_VISITS, LINK_EXTERNAL_IDS, LINK_TOMBSTONES, LINK_CHANGES, LINK_DAY_STATS, LINK_DAYS, LINK_CLICK_ROLLUP]);
    expect(family.tools.map((t) => [t.name, family.name, t.rest, t.annotations])).toStrictEqual([
      [
        'url_shorten',
        'shortener',
        { method: 'POST', path: '/api/shorten', status: 201, altStatus: { status: 200, description: 'The link an earlier create with the same externalId made' } },
        { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      ],
      ['url_shorten_bulk', 'shortener', { method: 'POST', path: '/api/links/bulk' }, { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }],
      ['url_stats', 'shortener', { method: 'GET', path: '/api/shorten' }, { readOnlyHint: true, idempotentHint: true, openWorldHint: false }],
      ['url_list', 'shortener', { method: 'GET', path: '/api/links' }, { readOnlyHint: true, idempotentHint: true, openWorldHint: false }],
      ['url_update', 'shortener', { method: 'PATCH', path: '/api/links/{code}' }, { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false }],
      ['url_delete', 'shortener', { method: 'DELETE', path: '/api/links/{code}' }, { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false }],
    ]);
  });
});
