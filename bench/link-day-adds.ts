// The write of the visit counts on Redis (issue 32): link-day records added as the server's
// flush adds them (countVisit's counts, dayAdd, Collection.addMany with STORE_CAPS, lazy, a
// token per call, CHUNK records a call), each id new. Reports µs of CPU per record of this
// process (making the counts included) and of redis-server (/proc/<pid>/stat), and the making
// alone. KIND=alike (default): every visit of one User-Agent, no referrer, one hour (the
// counts share one object); KIND=distinct: a referrer host of its own per record (none shared:
// the worst case). IDS=new (default): each record new (a link-day's first write); IDS=again: a
// round writes the ids the warm-up wrote (records that exist: a link visited in every flush).
//
// `node --import tsx bench/link-day-adds.ts` — KIND, IDS, RECORDS per call (default 32, the
// server's chunk), CALLS per round (default 1000), ROUNDS (default 5, the median reported).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../src/log.js';
import { openRedisStore } from '../src/state/redis/index.js';
import { countVisit, dayAdd, emptyCounts, LINK_DAYS, STORE_CAPS } from '../src/tools/shortener/analytics-counters.js';
import { UaCache } from '../src/tools/shortener/analytics-ua.js';
import { CHUNK } from '../src/tools/shortener/pending-writes.js';
import { cpuMicros, median, startRedisServer } from './lib.js';

const kind = process.env.KIND ?? 'alike';
const perCall = Number(process.env.RECORDS ?? CHUNK);
const calls = Number(process.env.CALLS ?? 1000);
const rounds = Number(process.env.ROUNDS ?? 5);
const again = process.env.IDS === 'again';
const ua = new UaCache().info('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36');

let seq = 0;
/** One call's items: a new link-day each, one visit counted. */
function items() {
  const out = [];
  for (let i = 0; i < perCall; i++, seq++) {
    const c = emptyCounts();
    countVisit(c, ua, kind === 'distinct' ? `r${seq}.example` : 'direct', 9, 1_764_300_000_000);
    out.push(dayAdd(`2026-11-28|c${(again ? seq % (calls * perCall) : seq).toString(36)}`, c));
  }
  return out;
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dtb-day-adds-'));
const redis = await startRedisServer(tmp);
try {
  const store = await openRedisStore({ url: redis.url, prefix: 'adds:', log: createLogger('error'), quiet: true });
  const days = store.collection(LINK_DAYS);
  const call = (token: string) => days.addMany(items(), { caps: STORE_CAPS, durability: 'lazy', once: token });
  for (let i = 0; i < (again ? calls : calls / 4); i++) await call(`warm.${i}`);
  const node: number[] = [];
  const server: number[] = [];
  const making: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const [n0, s0] = [process.cpuUsage(), cpuMicros(redis.child.pid!)];
    for (let i = 0; i < calls; i++) await call(`r${r}.${i}`);
    const d = process.cpuUsage(n0);
    node.push((d.user + d.system) / (calls * perCall));
    server.push((cpuMicros(redis.child.pid!) - s0) / (calls * perCall));
    const m0 = process.cpuUsage();
    for (let i = 0; i < calls; i++) items();
    const m = process.cpuUsage(m0);
    making.push((m.user + m.system) / (calls * perCall));
  }
  await store.close();
  const round = (x: number) => Math.round(x * 100) / 100;
  console.log(JSON.stringify({ kind, ids: again ? 'again' : 'new', recordsPerCall: perCall, calls, rounds, nodeCpuUsPerRecord: round(median(node)), redisServerCpuUsPerRecord: round(median(server)), makingCpuUsPerRecord: round(median(making)), perRound: { node: node.map(round), server: server.map(round) } }, null, 2));
} finally {
  redis.child.kill();
  fs.rmSync(tmp, { recursive: true, force: true });
}
process.exit(0);
