// The server's own work per short-link visit, without HTTP (issue 32): the shortener's preroute
// (what answers a GET /s/{code} ahead of the router: the link cache, a store read on a miss, the
// visit's analytics and click, their batched writes) called in this process, 32 visits in flight
// and a turn of the event loop between batches, so the counts' flushes run as in the server.
// CPU µs per visit from process.cpuUsage: neither sockets nor a load generator nor the machine's
// other processes are in it, so it is steadier than the HTTP runs of bench/links.ts, and it
// shows how much of a redirect's cost is the visit's own work rather than HTTP's.
//
// `node --import tsx bench/link-visits.ts` — LINKS (default 200,000), VISITS per run (default
// 300,000, after a quarter as many to warm up), DISTS (default `one,zipf,uniform`: one hot
// code; Zipf(1.0) over the codes; uniform), STORES (default `file,redis`: Debian's redis-server
// on a unix socket), ROUNDS (default 3, interleaved), LINK_CACHE_MAX (default LINKS / 4: the
// server's 250,000 against 1M links), PROF=<dir> (a CPU profile of each measured run),
// REFERRERS (see below), SKIP_ANALYTICS (`writes`, `memory` and `slab` on the file store only,
// `worker`, `all`: see bench/skip-analytics.ts), ANALYTICS_THREAD (`worker`, the default, or
// `main`: process CPU counts both threads).
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import { getRequestListener } from '@hono/node-server';
import { buildService, type Service } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { openFileStore } from '../src/state/index.js';
import { openRedisStore } from '../src/state/redis/index.js';
import { shortLinkFastPath } from '../src/tools/shortener/routes.js';
import { codeOf, median, seedLinks, startRedisServer, uniform, zipf } from './lib.js';
import './skip-analytics.js';

const n = Number(process.env.LINKS ?? 200_000);
const m = Number(process.env.VISITS ?? 300_000);
const rounds = Number(process.env.ROUNDS ?? 3);
const dists = (process.env.DISTS ?? 'one,zipf,uniform').split(',') as Dist[];
const stores = (process.env.STORES ?? 'file,redis').split(',') as ('file' | 'redis')[];
const log = createLogger('error');
type Dist = 'one' | 'zipf' | 'uniform';

const UA = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const HEADERS = { host: '127.0.0.1', 'user-agent': UA, accept: '*/*' };
/** REFERRERS=n: each visit's Referer one of n hosts in turn (a new host per visit past the caches: the worst case of the counts' caches); 0 (default): none. */
const referrers = Number(process.env.REFERRERS ?? 0);
const headersOf = (i: number) => (referrers > 0 ? { ...HEADERS, referer: `https://r${i % referrers}.example/p` } : HEADERS);
/** The server's cache against the links (LINK_CACHE_MAX; a quarter by default, as 250,000 is of 1M). */
const cacheMax = process.env.LINK_CACHE_MAX ?? String(Math.floor(n / 4));

/** The visitors of a spread (code indexes, made once per spread): all 0, or bench/links.ts's uniform and Zipf(1.0) visitors. */
const made = new Map<Dist, Uint32Array>();
function visitors(dist: Dist): Uint32Array {
  const count = m + (m >> 2);
  let seq = made.get(dist);
  if (!seq) made.set(dist, (seq = dist === 'one' ? new Uint32Array(count) : dist === 'uniform' ? uniform(n, count) : zipf(n, count)));
  return seq;
}

/** The profiler of this process (PROF): started and stopped around a measured run. */
const session = process.env.PROF ? new Session() : undefined;

/** One run over a fresh server on `env`'s store: CPU µs per visit, and visits answered otherwise than 302. */
async function run(env: Record<string, string>, dist: Dist, label: string): Promise<{ cpuUsPerVisit: number; other: number }> {
  // ANALYTICS_THREAD as the server's (default worker); SKIP_ANALYTICS's variants set main.
  const thread = process.env.ANALYTICS_THREAD ?? 'worker';
  const svc: Service = await buildService(loadConfig({ ...env, LOG_LEVEL: 'error', WORKERS: '0', RATE_LIMITS: 'off', LINK_CACHE_MAX: cacheMax, ANALYTICS_THREAD: thread }));
  try {
    await svc.ready;
    const visit = shortLinkFastPath(svc.services);
    const seq = visitors(dist);
    let i = 0;
    let other = 0;
    const visits = async (count: number) => {
      const end = Math.min(i + count, seq.length);
      while (i < end) {
        const batch: (Response | Promise<Response | undefined> | undefined)[] = [];
        for (let k = 0; k < 32 && i < end; k++, i++) batch.push(visit('GET', `/s/${codeOf(seq[i]!)}`, headersOf(i)));
        for (const r of await Promise.all(batch)) if (r?.status !== 302) other++;
        await new Promise((r) => setImmediate(r));
      }
    };
    await visits(m >> 2);
    if (session) await session.post('Profiler.start');
    const t0 = process.cpuUsage();
    await visits(m);
    const d = process.cpuUsage(t0);
    if (session) {
      const { profile } = await session.post('Profiler.stop');
      fs.writeFileSync(path.join(process.env.PROF!, `${label}.cpuprofile`), JSON.stringify(profile));
    }
    return { cpuUsPerVisit: Math.round(((d.user + d.system) / m) * 100) / 100, other };
  } finally {
    await svc.close();
  }
}

// @hono/node-server's light Response, as the server answers with (one listener installs it).
getRequestListener(() => new Response(null));
if (session) {
  fs.mkdirSync(process.env.PROF!, { recursive: true });
  session.connect();
  await session.post('Profiler.enable');
}
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dtb-link-visits-'));
const out: Record<string, unknown> = { links: n, visits: m, linkCacheMax: Number(cacheMax) };
let stop: (() => void) | undefined;
try {
  for (const kind of stores) {
    let env: Record<string, string>;
    if (kind === 'file') {
      const dir = path.join(tmp, 'file');
      const store = await openFileStore(dir, { log });
      await seedLinks(store, n);
      await store.close();
      env = { DATA_DIR: dir };
    } else {
      const dir = fs.mkdtempSync(path.join(tmp, 'redis-'));
      const redis = await startRedisServer(dir);
      stop = () => redis.child.kill();
      const store = await openRedisStore({ url: redis.url, prefix: 'visits:', log, quiet: true });
      await seedLinks(store, n);
      await store.close();
      env = { REDIS_URL: redis.url, REDIS_PREFIX: 'visits:' };
    }
    const rows: Record<string, number[]> = {};
    let other = 0;
    // Rounds interleave the spreads; each run starts its own server on the same links (the
    // counts the runs before wrote stay: later runs visit links visited before).
    for (let r = 0; r < rounds; r++) {
      for (const dist of dists) {
        const res = await run(env, dist, `${kind}-${dist}-${r}`);
        (rows[dist] ??= []).push(res.cpuUsPerVisit);
        other += res.other;
      }
    }
    out[kind] = { ...Object.fromEntries(dists.map((d) => [`${d}CpuUsPerVisit`, median(rows[d]!)])), perRound: rows, notRedirected: other };
    stop?.();
    stop = undefined;
  }
  console.log(JSON.stringify(out, null, 2));
} finally {
  stop?.();
  fs.rmSync(tmp, { recursive: true, force: true });
}
process.exit(0);
