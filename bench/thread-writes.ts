// The analytics thread's own work without HTTP or a second thread (issue 32): a VisitAnalytics
// on a file store of its own (as ./analytics-worker.ts opens it), fed Zipf(1.0) or uniform
// visits over LINKS codes in batches of what the thread drains in ANALYTICS_FLUSH_MS at RATE
// visits/s, each batch then written (flush) as the thread's timer would. CPU µs per visit and
// per link-day add of this process, steady enough to compare builds of the write path.
//
// `node --import tsx bench/thread-writes.ts` — LINKS (default 1,000,000), VISITS (default
// 1,000,000), RATE (default 45,000), DIST (`zipf`, default, or `uniform`), LOG (`1`, default:
// the visit log as the thread runs it on the file store, synced every ANALYTICS_FLUSH_MS of
// visits; `0`: none, the records written every ANALYTICS_FLUSH_MS as before session 29),
// FLUSH_MS (the visits a batch holds, as if the batches came that often; default BATCH_MS with
// the log, ANALYTICS_FLUSH_MS without), PROF=<file>.
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import { systemClock } from '../src/core/clock.js';
import { createLogger } from '../src/log.js';
import { NO_METRICS } from '../src/metrics.js';
import { openFileStore } from '../src/state/index.js';
import { LINK_DAYS } from '../src/tools/shortener/analytics-counters.js';
import { UaCache } from '../src/tools/shortener/analytics-ua.js';
import { ANALYTICS_FLUSH_MS, BATCH_MS, VisitAnalytics } from '../src/tools/shortener/analytics.js';
import { VisitLog } from '../src/tools/shortener/visit-log.js';
import { codeOf, cpuMicros, uniform, zipf } from './lib.js';

const n = Number(process.env.LINKS ?? 1_000_000);
const m = Number(process.env.VISITS ?? 1_000_000);
const rate = Number(process.env.RATE ?? 45_000);
const dist = process.env.DIST ?? 'zipf';
const logged = (process.env.LOG ?? '1') === '1';
const flushMs = Number(process.env.FLUSH_MS ?? (logged ? BATCH_MS : ANALYTICS_FLUSH_MS));
const perBatch = Math.round((rate * flushMs) / 1000);
const ua = new UaCache().info('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dtb-thread-writes-'));
const log = createLogger('error');
const store = await openFileStore(dir, { log });
await store.preload([LINK_DAYS]);
// The batches come from this loop (a batch period no run reaches).
const visitLog = logged ? new VisitLog(dir, log) : undefined;
const analytics = new VisitAnalytics({ store, clock: systemClock, log, metrics: NO_METRICS }, { sweep: false, rollUp: { through: async () => '2000-01-01', late: async () => {} }, ...(visitLog ? { visitLog: { log: visitLog, batchMs: 3_600_000 } } : {}) });
const seq = dist === 'zipf' ? zipf(n, m) : uniform(n, m);
const codes = Array.from(seq, (i) => codeOf(i));
const session = process.env.PROF ? new Session() : undefined;
if (session) {
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
}
const perLog = Math.round((rate * ANALYTICS_FLUSH_MS) / 1000);
let adds = 0;
const c0 = cpuMicros('self');
for (let at = 0; at < m; at += perBatch) {
  const now = Date.now();
  const end = Math.min(m, at + perBatch);
  for (let from = at; from < end; from += perLog) {
    for (let i = from; i < Math.min(end, from + perLog); i++) analytics.count(codes[i]!, ua, 'direct', now);
    visitLog?.sync();
  }
  adds += analytics.gauges().entries;
  await analytics.flush();
}
await store.flush();
const cpu = cpuMicros('self') - c0;
if (session) fs.writeFileSync(process.env.PROF!, JSON.stringify((await session.post('Profiler.stop')).profile));
await analytics.close();
const clicks = (await store.collection(LINK_DAYS).query()).reduce((s, r) => s + ((r as { clicks?: number }).clicks ?? 0), 0);
await store.close();
fs.rmSync(dir, { recursive: true, force: true });
console.log(JSON.stringify({ links: n, visits: m, dist, log: logged, perBatch, adds, addsPerVisit: Math.round((adds / m) * 100) / 100, usPerVisit: Math.round((cpu / m) * 100) / 100, usPerAdd: Math.round((cpu / adds) * 100) / 100, clicksWritten: clicks }));
process.exit(0);
