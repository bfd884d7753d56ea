// Issue 32: bytes of one short link's visit analytics after 1M visits over DAYS days, on the
// file store and on Redis (Debian's redis-server on a unix socket). Storage grows with the days
// a link is visited, not with its visits: the figure is per link and day, whatever the visits.
// Standalone: `node --import tsx bench/analytics-bytes.ts` (VISITS=1000000 DAYS=30 by default;
// CODES=n spreads the visits uniformly over n links, for the CPU per visit when nearly every
// visit is a link's first in its batch — bytes are then per link on average). BENCH_STORES=file,redis
// picks the stores; STORE_FLUSH_EVERY=2 analytics batches per store flush (the server's timing).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { loadConfig } from '../src/config.js';
import { manualClock } from '../src/core/clock.js';
import { closeServices, createServices, type Services } from '../src/services.js';
import { LINK_DAYS } from '../src/tools/shortener/analytics-counters.js';
import { visitAnalytics } from '../src/tools/shortener/analytics.js';
import { startRedisServer } from './lib.js';

const VISITS = Number(process.env.VISITS ?? 1_000_000);
const DAYS = Number(process.env.DAYS ?? 30);
const CODES = Number(process.env.CODES ?? 1);
const CODE = 'bench-analytics';
/** Visits between two flushes: 250 ms at 16k redirects/s. */
const BATCH = Number(process.env.BATCH ?? 4_000);
const START = Date.parse('2026-11-01T00:00:00Z');
/** Analytics batches per store flush (the file store's LAZY_FLUSH_MS is two ANALYTICS_FLUSH_MS). */
const STORE_FLUSH_EVERY = Number(process.env.STORE_FLUSH_EVERY ?? 2);
/** Which stores to measure (file,redis). */
const STORES = (process.env.BENCH_STORES ?? 'file,redis').split(',');

const UAS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (iPad; CPU OS 17_7 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.7 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.2903.86',
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.104 Mobile Safari/537.36',
  'Mozilla/5.0 (Linux; Android 14; SM-S921B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/26.0 Chrome/122.0.0.0 Mobile Safari/537.36',
  'curl/8.5.0',
  'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  'Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)',
  'facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)',
  'Twitterbot/1.0',
];

/** A deterministic mix: User-Agents and 1,000 referrer hosts with Zipf-like weights, 30 % direct. */
function* mix(): Generator<{ userAgent: string; referer: string | undefined }> {
  let x = 12345;
  const rnd = () => ((x = (x * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  for (;;) {
    const ua = UAS[Math.floor(UAS.length * rnd() ** 2)]!;
    const r = rnd();
    const host = Math.floor(1 / Math.max(rnd(), 1e-3)); // P(host ≥ k) ≈ 1/k
    yield { userAgent: ua, referer: r < 0.3 ? undefined : `https://site${host}.example/page/${Math.floor(rnd() * 1e6)}?q=${r}` };
  }
}

async function measure(env: Record<string, string>, bytesOf: (s: Services) => Promise<number>): Promise<Record<string, number>> {
  const clock = manualClock(START);
  const services = await createServices(loadConfig({ LOG_LEVEL: 'error', ...env }), { clock });
  const analytics = visitAnalytics(services);
  const visits = mix();
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < VISITS; i++) {
    clock.t = START + Math.floor((i / VISITS) * DAYS * 86_400_000);
    analytics.record(CODES === 1 ? CODE : `${CODE}${i % CODES}`, visits.next().value!);
    if (i % BATCH === BATCH - 1) {
      await analytics.flush();
      // The store's lazy flush (every 500 ms: two batches at 16k visits/s), as in the server.
      if (Math.floor(i / BATCH) % STORE_FLUSH_EVERY === STORE_FLUSH_EVERY - 1) await services.store.flush();
    }
  }
  await analytics.flush();
  const cpu = process.cpuUsage(cpu0);
  // The store's own writes too (segment files, journal lines): what the visits cost in all.
  await services.store.flush();
  const cpuWritten = process.cpuUsage(cpu0);
  const records = (await services.store.collection(LINK_DAYS).query()).filter((r) => CODES > 1 || r.id.endsWith(`|${CODE}`));
  const json = records.reduce((n, r) => n + Buffer.byteLength(JSON.stringify(r)), 0);
  // After the close: the file store's journal is folded into its segment files by then.
  await closeServices(services);
  const bytes = await bytesOf(services);
  return {
    visits: VISITS,
    links: CODES,
    days: Math.round(records.length / CODES),
    recordJsonBytes: json,
    storedBytes: bytes,
    storedBytesPerLinkDay: Math.round(bytes / records.length),
    recordCpuMicrosPerVisit: Math.round(((cpu.user + cpu.system) / VISITS) * 100) / 100,
    writtenCpuMicrosPerVisit: Math.round(((cpuWritten.user + cpuWritten.system) / VISITS) * 100) / 100,
    seconds: Math.round((performance.now() - t0) / 100) / 10,
  };
}

async function startRedis(dir: string): Promise<{ socket: string; stop: () => void }> {
  const { socket, child } = await startRedisServer(dir);
  return { socket, stop: () => child.kill() };
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dtb-analytics-bytes-'));
try {
  const dataDir = path.join(tmp, 'data');
  if (STORES.includes('file')) {
    // The file store: the bytes of the collection's files on disk (this link's records only).
    const file = await measure({ DATA_DIR: dataDir }, async () =>
      fs.readdirSync(dataDir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile() && e.name.includes(LINK_DAYS.name)).reduce((n, e) => n + fs.statSync(path.join(e.parentPath, e.name)).size, 0),
    );
    console.log(JSON.stringify({ store: 'file', ...file }));
  }
  if (STORES.includes('redis')) {
    const redis = await startRedis(tmp);
    try {
      // Redis: MEMORY USAGE of every key of the collection (the data hash, its ids, the counter hashes).
      const prefix = 'bench-bytes:';
      const r = await measure({ REDIS_URL: `unix://${redis.socket}`, REDIS_PREFIX: prefix }, async () => {
        const c = new Redis({ path: redis.socket });
        try {
          let n = 0;
          for (const k of await c.keys(`${prefix}*${LINK_DAYS.name}*`)) n += Number(await c.memory('USAGE', k));
          return n;
        } finally {
          c.disconnect();
        }
      });
      console.log(JSON.stringify({ store: 'redis', ...r }));
    } finally {
      redis.stop();
  }
  }
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
