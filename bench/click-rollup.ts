// The clicks' roll-up (issue 32, session 18): what adding a day's clicks into the links' clicks
// records costs, per day record, now that a redirect writes only its day's analytics record.
// Each round seeds LINKS links (created 10 days ago) and one day record each for the day 3 days
// back (a visit's fields, 2 clicks), the roll-up's record the day before, then times one
// rollUpClicks over the lot: CPU µs per record of this process (process.cpuUsage) and, on Redis,
// of redis-server (/proc). A fresh store each round.
//
// `node --import tsx bench/click-rollup.ts` — LINKS (default 100,000), STORES (default
// `file,redis`: Debian's redis-server on a unix socket), ROUNDS (default 3).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { systemClock } from '../src/core/clock.js';
import { createLogger } from '../src/log.js';
import type { Services } from '../src/services.js';
import { openFileStore, type Store } from '../src/state/index.js';
import { openRedisStore } from '../src/state/redis/index.js';
import { countVisit, emptyCounts } from '../src/tools/shortener/analytics-counters.js';
import { UaCache } from '../src/tools/shortener/analytics-ua.js';
import { addDays, ROLLUP_ID, ROLLUP_LAG_DAYS, rollUpClicks } from '../src/tools/shortener/clicks.js';
import { LINK_CLICK_ROLLUP, LINK_CLICKS } from '../src/tools/shortener/links.js';
import { codeOf, cpuMicros, median, seedDays, seedLinks, startRedisServer } from './lib.js';

const n = Number(process.env.LINKS ?? 100_000);
const rounds = Number(process.env.ROUNDS ?? 3);
const stores = (process.env.STORES ?? 'file,redis').split(',') as ('file' | 'redis')[];
const log = createLogger('error');
const DAY_MS = 86_400_000;

/** The links, a day record each for the day to roll up, and the roll-up's record before it. */
async function seed(store: Store): Promise<string> {
  const now = Date.now();
  const day = addDays(new Date(now).toISOString().slice(0, 10), -ROLLUP_LAG_DAYS);
  await seedLinks(store, n, new Date(now - 10 * DAY_MS).toISOString());
  const visit = emptyCounts();
  const ua = new UaCache().info('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36');
  for (let k = 0; k < 2; k++) countVisit(visit, ua, 'news.example.com', 9, Date.parse(`${day}T09:00:00Z`));
  await seedDays(store, n, day, visit);
  await store.collection(LINK_CLICK_ROLLUP).put({ id: ROLLUP_ID, through: addDays(day, -1) });
  await store.flush();
  return day;
}

/** One roll-up over a seeded store: CPU µs per record here and in redis-server (pid), and records a second. */
async function rollUp(store: Store, redisPid: number | undefined): Promise<{ us: number; redisUs: number; perSecond: number }> {
  const day = await seed(store);
  const services = { store, clock: systemClock, log } as unknown as Services;
  const r0 = redisPid ? cpuMicros(redisPid) : 0;
  const t0 = process.cpuUsage();
  const w0 = performance.now();
  const read = await rollUpClicks(services, Infinity);
  const wall = performance.now() - w0;
  const d = process.cpuUsage(t0);
  const r1 = redisPid ? cpuMicros(redisPid) : 0;
  const rolledUp = await store.collection(LINK_CLICKS).get(codeOf(n - 1));
  if (read !== n || rolledUp?.clicks !== 2 || rolledUp.through !== day) throw new Error(`roll-up incomplete: read ${read}, last record ${JSON.stringify(rolledUp)}`);
  return { us: Math.round(((d.user + d.system) / n) * 10) / 10, redisUs: Math.round(((r1 - r0) / n) * 10) / 10, perSecond: Math.round(n / (wall / 1000)) };
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dtb-click-rollup-'));
const out: Record<string, unknown> = { links: n };
try {
  for (const kind of stores) {
    const rows: { us: number; redisUs: number; perSecond: number }[] = [];
    const redis = kind === 'redis' ? await startRedisServer(fs.mkdtempSync(path.join(tmp, 'redis-'))) : undefined;
    try {
      for (let r = 0; r < rounds; r++) {
        const store = redis ? await openRedisStore({ url: redis.url, prefix: `rollup${r}:`, log, quiet: true }) : await openFileStore(fs.mkdtempSync(path.join(tmp, 'file-')), { log });
        try {
          rows.push(await rollUp(store, redis?.child.pid));
        } finally {
          await store.close();
        }
      }
    } finally {
      redis?.child.kill();
    }
    out[kind] = {
      cpuUsPerRecord: median(rows.map((x) => x.us)),
      ...(redis ? { redisServerUsPerRecord: median(rows.map((x) => x.redisUs)) } : {}),
      recordsPerSecond: median(rows.map((x) => x.perSecond)),
      perRound: rows,
    };
  }
  console.log(JSON.stringify(out, null, 2));
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
process.exit(0);
