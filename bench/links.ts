// Short links at scale (issue 32): 1M links stored, visitors uniform over all codes and with a
// Zipf(1.0) spread, GET /s/{code} beside bare hono's GET 302 on the same codes, interleaved
// rounds (medians); creates at 1M; the server's CPU µs per request (/proc/<pid>/stat) and its
// event loop's p99 delay (perf_hooks, through bench/loop-delay.ts). File store and Redis.
// `BENCH_ONLY=links npm run bench`, or `node --import tsx bench/links.ts`.
// BENCH_LINKS (default 1000000), BENCH_SECONDS (per run, default 6), BENCH_ROUNDS (default 3),
// BENCH_STORES (default file,redis), BENCH_VISITED=1 (every link visited once before the runs: see seedVisits). Links are seeded straight into the store (putMany), as
// the server would have written them. BENCH_SERVER_ARGS: extra node flags for the server, after tsx's (e.g.
// `--cpu-prof --cpu-prof-dir=/tmp/prof`, `--trace-gc`, or `--import ./bench/skip-analytics.ts`); with them the server is stopped with
// SIGTERM and awaited, so that a profile gets written. A last run scans random unknown codes
// (an attacker guessing codes: every one a store miss). The server serves /metrics on its own
// port (METRICS_PORT): the oldest unwritten click or analytics count
// is read every 250 ms of a redirect run (countLagMaxSPerRun) — figures whose counts fell behind
// are not figures. Metrics on cost the redirects a few µs of CPU each (0–10 µs in A/B runs at
// 200k links, within the noise): BENCH_LAG=0 runs without them and without the reads, for the
// ratios to bare hono. BENCH_COMPARE=<another checkout of this project, its node_modules
// installed or linked>: a second server started from that checkout's sources on a copy of the
// same links (file: the data dir copied; Redis: seeded again under another prefix), its
// uniform and Zipf rounds interleaved with this one's — a before/after in one run, which this
// VM's drifting CPU (bare hono ±40 % between runs minutes apart) otherwise makes meaningless.
// Reported under `compare` (the same bare rounds). Redis runs report redis-server's CPU µs per
// redirect too (redisCpuUsPerReq: it shares the machine's cores with the server and the load),
// and with BENCH_REDIS_STATS=1 its costliest commands per run (INFO commandstats: calls and µs
// per redirect; a script's inner commands are counted both on their own and in its EVALSHA).
// BENCH_WARMUP (seconds, default 2): each redirect run is preceded by that much of the same load,
// not counted, so that a run measures its spread's steady state rather than the wake of the run
// before it (a uniform run fills the link cache with codes Zipf's visitors seldom ask for and
// leaves its counts' writes behind: docs/shortener.md, session 24). BENCH_WARMUP=0: as before
// session 24.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import { createLogger } from '../src/log.js';
import { openFileStore, type Store } from '../src/state/index.js';
import { openRedisStore } from '../src/state/redis/index.js';
import { countVisit, emptyCounts } from '../src/tools/shortener/analytics-counters.js';
import { UaCache } from '../src/tools/shortener/analytics-ua.js';
import { codeOf, compareDir, cpuMicros, freePort, load, loopDelay, median, rng, seedDays, seedLinks, serverArgs, startProcess, stopGracefully, startRedisServer, uniform, untilHealthy, WRK, WRK_PATHS_SCRIPT, wrkRun, zipf } from './lib.js';

const log = createLogger('error');
const seconds = () => Number(process.env.BENCH_SECONDS ?? 6);
const warmup = () => Number(process.env.BENCH_WARMUP ?? 2);
const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

/** Seeds `n` links (seedLinks), then with BENCH_VISITED=1 one visit of each. */
async function seed(store: Store, n: number): Promise<void> {
  await seedLinks(store, n);
  if (process.env.BENCH_VISITED === '1') await seedVisits(store, n);
}

/**
 * BENCH_VISITED=1: every link visited once before the runs, today, as the server writes a visit
 * (its day's analytics record, which counts the click too, through the same addMany). Without
 * it nearly every redirect of a uniform run is its code's first visit of the day, so the record
 * is created then; a link visited before adds to a record that exists (issue 32: what the first
 * visits cost beside the later ones).
 */
async function seedVisits(store: Store, n: number): Promise<void> {
  const now = Date.now();
  const iso = new Date(now).toISOString();
  const visit = emptyCounts();
  countVisit(visit, new UaCache().info(undefined), '', Number(iso.slice(11, 13)), now);
  await seedDays(store, n, iso.slice(0, 10), visit);
}

/** `m` codes of the same shape as the stored ones that no link has. */
function unknownCodes(m: number): string[] {
  const r = rng(3);
  return Array.from({ length: m }, () => `zz${Math.floor(r() * 2 ** 40).toString(36)}`);
}

interface Run {
  rps: number;
  p99: number;
  bad: number;
  cpuUsPerReq: number;
  loopP99Ms: number;
  /** The server's GC pauses during the run (bench/loop-delay.ts). */
  gc?: unknown;
  /** CPU ms per loop iteration (bench/loop-delay.ts): the stalls, robust to a loaded machine. */
  cpuTurn?: unknown;
  /**
   * The oldest count (click or analytics) not yet written, at its worst during the run (s,
   * /metrics read every 250 ms), and how long the counts took to be written after it: whether
   * the store writes keep up with the redirects (session 10 found they had not).
   */
  countLagMaxS?: number;
  drainS?: number;
  /** redis-server's CPU µs per request (Redis runs: it shares this machine's cores with the server). */
  storeCpuUsPerReq?: number;
  storeCommands?: Record<string, { perReq: number; usPerReq: number }>;
}

/** The redis-server of the Redis runs, whose CPU each run reads too. */
let storePid: number | undefined;
/** With BENCH_REDIS_STATS=1: a store on it, whose connection reads INFO commandstats per run. */
let statsStore: Awaited<ReturnType<typeof openRedisStore>> | undefined;

/** redis-server's commands of one run (INFO commandstats after a CONFIG RESETSTAT): calls and µs per request, the costliest first. */
function commandStats(info: string, requests: number): Record<string, { perReq: number; usPerReq: number }> {
  const rows = [...info.matchAll(/^cmdstat_(\S+?):calls=(\d+),usec=(\d+)/gm)].map((m) => [m[1]!, Number(m[2]), Number(m[3])] as const);
  rows.sort((a, b) => b[2] - a[2]);
  return Object.fromEntries(rows.slice(0, 12).map(([c, n, us]) => [c, { perReq: round(n / Math.max(1, requests), 3), usPerReq: round(us / Math.max(1, requests), 2) }]));
}

/** The oldest unwritten count's age over every kind (s), from the server's /metrics. */
async function countLag(metricsUrl: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  let worst = 0;
  for (const m of text.matchAll(/^unwritten_counts_oldest_seconds\{[^}]*\} (\S+)$/gm)) worst = Math.max(worst, Number(m[1]));
  return worst;
}

/** Reads countLag every 250 ms until `stop()` is true; resolves with the worst value read. */
async function watchLag(metricsUrl: string, stop: () => boolean): Promise<number> {
  let worst = 0;
  while (!stop()) {
    worst = Math.max(worst, await countLag(metricsUrl));
    await new Promise((r) => setTimeout(r, 250));
  }
  return worst;
}

function pathOf(seq: Uint32Array | string[], i: number): string {
  const v = seq[i % seq.length]!;
  return typeof v === 'string' ? v : codeOf(v);
}

/**
 * BENCH_LOADGEN=wrk (./lib.ts WRK): the redirect runs load with wrk instead of autocannon. Bare
 * hono's rate is bound by its own core either way; a redirect that needs redis-server's CPU too
 * is bound by what the load generator leaves of both (issue 32). The unknown-code scan stays on
 * autocannon (it counts 4xx as served). One wrk run over `seq` from `from.i` (the paths written
 * to a file first, outside the timed run), shaped as autocannon's result.
 */
async function wrkRedirects(base: string, seq: Uint32Array | string[], from: { i: number }, secs = seconds()): Promise<{ requests: { total: number }; latency: { p99: number }; duration: number; '3xx': number; '4xx': number }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dtb-wrk-paths-'));
  try {
    const k = Math.min(seq.length, 1_000_000);
    const lines: string[] = [];
    for (let j = 0; j < k; j++) lines.push(`/s/${pathOf(seq, from.i + j)}`);
    fs.writeFileSync(path.join(dir, 'paths'), lines.join('\n') + '\n');
    const w = await wrkRun(base, WRK_PATHS_SCRIPT, secs, [path.join(dir, 'paths')]);
    from.i += w.requests;
    // wrk counts a status ≥ 400 as an error; what is left of a redirect run is its 302s.
    return { requests: { total: w.requests + w.errors }, latency: { p99: w.p99 / 1000 }, duration: w.duration / 1e6, '3xx': w.requests - w.status, '4xx': w.status };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** GET /s/{code} over `seq` (starting where the last run of this server stopped), 32 connections; `ok`: the status counted as served. */
async function redirects(base: string, seq: Uint32Array | string[], proc: ChildProcess, delayFile: string, from: { i: number }, ok: '3xx' | '4xx' = '3xx', metricsUrl?: string): Promise<Run> {
  // The same load first, not counted (BENCH_WARMUP).
  if (warmup() > 0) {
    if (WRK && ok === '3xx') await wrkRedirects(base, seq, from, warmup());
    else await autocannon({ url: base, connections: 32, duration: warmup(), requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `/s/${pathOf(seq, from.i++)}` }) }] });
  }
  await loopDelay(proc, delayFile);
  const c0 = cpuMicros(proc.pid!);
  const s0 = storePid === undefined ? 0 : cpuMicros(storePid);
  if (statsStore) await statsStore.conn.redis.config('RESETSTAT');
  let done = false;
  const lag = metricsUrl ? watchLag(metricsUrl, () => done) : undefined;
  const r = WRK && ok === '3xx' ? await wrkRedirects(base, seq, from) : await autocannon({
    url: base,
    connections: 32,
    duration: seconds(),
    requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `/s/${pathOf(seq, from.i++)}` }) }],
  });
  const cpu = cpuMicros(proc.pid!) - c0;
  const storeCpu = storePid === undefined ? undefined : cpuMicros(storePid) - s0;
  const storeCommands = statsStore ? commandStats(await statsStore.conn.redis.info('commandstats'), r.requests.total) : undefined;
  done = true;
  const lags: Pick<Run, 'countLagMaxS' | 'drainS'> = {};
  if (metricsUrl) {
    lags.countLagMaxS = round(await lag!, 2);
    const t = performance.now();
    for (let i = 0; i < 400 && (await countLag(metricsUrl)) > 0; i++) await new Promise((r) => setTimeout(r, 25));
    lags.drainS = round((performance.now() - t) / 1000, 2);
  }
  const d = await loopDelay(proc, delayFile);
  const n = r[ok];
  return { rps: Math.round(n / r.duration), p99: r.latency.p99, bad: r.requests.total - n, cpuUsPerReq: round(cpu / Math.max(1, r.requests.total), 1), loopP99Ms: d.p99, gc: d.gc, cpuTurn: d.cpuTurn, ...lags, ...(storeCpu === undefined ? {} : { storeCpuUsPerReq: round(storeCpu / Math.max(1, r.requests.total), 1) }), ...(storeCommands ? { storeCommands } : {}) };
}

/** One store: seed, start the server, interleave bare / uniform / Zipf rounds, then creates. */
async function benchStore(kind: 'file' | 'redis', n: number, tmp: string, bare: { base: string; proc: ChildProcess }, procs: ChildProcess[]): Promise<Record<string, unknown>> {
  let env: Record<string, string>;
  let envB: Record<string, string> | undefined;
  storePid = undefined;
  statsStore = undefined;
  const t0 = performance.now();
  if (kind === 'file') {
    const dir = fs.mkdtempSync(path.join(tmp, 'file-'));
    const store = await openFileStore(dir, { log });
    await seed(store, n);
    await store.close();
    env = { DATA_DIR: dir };
    if (compareDir()) {
      const copy = fs.mkdtempSync(path.join(tmp, 'file-b-'));
      fs.cpSync(dir, copy, { recursive: true });
      envB = { DATA_DIR: copy };
    }
  } else {
    const redis = await startRedisServer(fs.mkdtempSync(path.join(tmp, 'redis-')));
    procs.push(redis.child);
    storePid = redis.child.pid;
    if (process.env.BENCH_REDIS_STATS === '1') statsStore = await openRedisStore({ url: redis.url, prefix: 'benchstats:', log, quiet: true });
    const store = await openRedisStore({ url: redis.url, prefix: 'bench:', log, quiet: true });
    await seed(store, n);
    await store.close();
    env = { REDIS_URL: redis.url, REDIS_PREFIX: 'bench:' };
    if (compareDir()) {
      const b = await openRedisStore({ url: redis.url, prefix: 'benchb:', log, quiet: true });
      await seed(b, n);
      await b.close();
      envB = { REDIS_URL: redis.url, REDIS_PREFIX: 'benchb:' };
    }
  }
  const seedSeconds = round((performance.now() - t0) / 1000, 1);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // /metrics on its own port: the unwritten counts' age is read during every redirect run
  // (BENCH_LAG=0: no metrics, no lag read — what the metrics cost, in the same command).
  const lagged = process.env.BENCH_LAG !== '0';
  const metricsPort = await freePort();
  const metricsUrl = lagged ? `http://127.0.0.1:${metricsPort}/metrics` : undefined;
  const delayFile = path.join(tmp, `loop-${kind}.json`);
  const start = async (base: string, env: Record<string, string>, delayFile: string, metricsPort: number, cwd?: string) => {
    const proc = await startProcess(
      ['--import', 'tsx', ...serverArgs('BENCH_SERVER_ARGS'), '--import', './bench/loop-delay.ts', 'src/main.ts', 'serve'],
      { PORT: new URL(base).port, LOG_LEVEL: 'error', PUBLIC_BASE_URL: base, RATE_LIMITS: 'off', WORKERS: '0', LOOP_DELAY_FILE: delayFile, ...(lagged ? { METRICS_PORT: String(metricsPort) } : {}), ...env },
      // Any answer once it listens (a 1M-link store then loads for a while: /healthz waits below).
      `${base}/bench-probe`,
      cwd,
    );
    procs.push(proc);
    await untilHealthy(base);
    return proc;
  };
  const proc = await start(base, env, delayFile, metricsPort);
  const t1 = performance.now();
  // The server's store loads lazily: the first read of the links waits for it.
  await fetch(`${base}/s/${codeOf(0)}`, { redirect: 'manual' });
  const firstReadSeconds = round((performance.now() - t1) / 1000, 1);
  // The compared checkout's server (BENCH_COMPARE), on its copy of the links.
  const other = compareDir();
  let b: { base: string; proc: ChildProcess; delayFile: string; metricsUrl: string | undefined } | undefined;
  if (other && envB) {
    const baseB = `http://127.0.0.1:${await freePort()}`;
    const metricsPortB = await freePort();
    const delayFileB = path.join(tmp, `loop-${kind}-b.json`);
    b = { base: baseB, proc: await start(baseB, envB, delayFileB, metricsPortB, other), delayFile: delayFileB, metricsUrl: lagged ? `http://127.0.0.1:${metricsPortB}/metrics` : undefined };
    await fetch(`${baseB}/s/${codeOf(0)}`, { redirect: 'manual' });
  }

  const m = Math.min(4 * n, 4_000_000);
  const seqs = { uniform: uniform(n, m), zipf: zipf(n, m) };
  const at = { bare: { i: 0 }, uniform: { i: 0 }, zipf: { i: 0 }, uniformB: { i: 0 }, zipfB: { i: 0 } };
  const rows: Record<'bare' | 'uniform' | 'zipf' | 'uniformB' | 'zipfB', Run[]> = { bare: [], uniform: [], zipf: [], uniformB: [], zipfB: [] };
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  // BENCH_RUNS picks the runs (e.g. `uniform` alone, to profile it); all by default.
  const runs = new Set((process.env.BENCH_RUNS ?? 'bare,uniform,zipf,scan,creates').split(','));
  const none: Run = { rps: NaN, p99: NaN, bad: 0, cpuUsPerReq: NaN, loopP99Ms: NaN };
  for (let r = 0; r < rounds; r++) {
    rows.bare.push(runs.has('bare') ? await redirects(bare.base, seqs.uniform, bare.proc, path.join(tmp, 'loop-bare.json'), at.bare) : none);
    rows.uniform.push(runs.has('uniform') ? await redirects(base, seqs.uniform, proc, delayFile, at.uniform, '3xx', metricsUrl) : none);
    rows.zipf.push(runs.has('zipf') ? await redirects(base, seqs.zipf, proc, delayFile, at.zipf, '3xx', metricsUrl) : none);
    if (b) {
      rows.uniformB.push(runs.has('uniform') ? await redirects(b.base, seqs.uniform, b.proc, b.delayFile, at.uniformB, '3xx', b.metricsUrl) : none);
      rows.zipfB.push(runs.has('zipf') ? await redirects(b.base, seqs.zipf, b.proc, b.delayFile, at.zipfB, '3xx', b.metricsUrl) : none);
    }
  }
  if (b) b.proc.kill('SIGKILL');
  const med = (xs: Run[], k: Exclude<keyof Run, 'gc' | 'cpuTurn' | 'countLagMaxS' | 'drainS' | 'storeCpuUsPerReq' | 'storeCommands'>) => median(xs.map((x) => x[k]));
  const scan = runs.has('scan') ? await redirects(base, unknownCodes(1_000_000), proc, delayFile, { i: 0 }, '4xx') : none;
  await loopDelay(proc, delayFile);
  const c0 = cpuMicros(proc.pid!);
  const create = runs.has('creates')
    ? await load('url_shorten at 1M', { url: `${base}/api/shorten`, body: '{"url":"https://example.com/some/long/path?q=1"}', connections: 32 })
    : { rps: NaN, p99: NaN, errors: 0, non2xx: 0 };
  const createCpu = cpuMicros(proc.pid!) - c0;
  const createLoop = await loopDelay(proc, delayFile);
  await statsStore?.close();
  if (serverArgs('BENCH_SERVER_ARGS').length > 0) await stopGracefully(proc);
  const bareRps = med(rows.bare, 'rps');
  return {
    linksStored: n,
    seedSeconds,
    firstReadSeconds,
    bareGet302Rps: bareRps,
    bareCpuUsPerReq: med(rows.bare, 'cpuUsPerReq'),
    uniformRps: med(rows.uniform, 'rps'),
    uniformToBare: round(med(rows.uniform, 'rps') / bareRps),
    uniformCpuUsPerReq: med(rows.uniform, 'cpuUsPerReq'),
    uniformP99Ms: med(rows.uniform, 'p99'),
    uniformLoopP99Ms: med(rows.uniform, 'loopP99Ms'),
    zipfRps: med(rows.zipf, 'rps'),
    zipfToBare: round(med(rows.zipf, 'rps') / bareRps),
    zipfCpuUsPerReq: med(rows.zipf, 'cpuUsPerReq'),
    zipfP99Ms: med(rows.zipf, 'p99'),
    ...(statsStore ? { redisCommandsPerRun: { uniform: rows.uniform.map((x) => x.storeCommands), zipf: rows.zipf.map((x) => x.storeCommands) } } : {}),
    ...(kind === 'redis' ? { redisCpuUsPerReq: { uniform: rows.uniform.map((x) => x.storeCpuUsPerReq), zipf: rows.zipf.map((x) => x.storeCpuUsPerReq), uniformB: rows.uniformB.map((x) => x.storeCpuUsPerReq), zipfB: rows.zipfB.map((x) => x.storeCpuUsPerReq) } } : {}),
    gcPerRun: { uniform: rows.uniform.map((x) => x.gc), zipf: rows.zipf.map((x) => x.gc), scan: scan.gc, creates: createLoop.gc },
    cpuTurnPerRun: { uniform: rows.uniform.map((x) => x.cpuTurn), zipf: rows.zipf.map((x) => x.cpuTurn), scan: scan.cpuTurn, creates: createLoop.cpuTurn },
    zipfLoopP99Ms: med(rows.zipf, 'loopP99Ms'),
    // Per run: the oldest unwritten count at its worst, and the time to write the rest after it.
    countLagMaxSPerRun: { uniform: rows.uniform.map((x) => x.countLagMaxS), zipf: rows.zipf.map((x) => x.countLagMaxS) },
    drainSPerRun: { uniform: rows.uniform.map((x) => x.drainS), zipf: rows.zipf.map((x) => x.drainS) },
    unknownScanRps: scan.rps,
    unknownScanToBare: round(scan.rps / bareRps),
    unknownScanCpuUsPerReq: scan.cpuUsPerReq,
    unknownScanLoopP99Ms: scan.loopP99Ms,
    redirectErrors: rows.uniform.concat(rows.zipf).reduce((s, x) => s + x.bad, 0),
    createsPerSec: create.rps,
    createP99Ms: create.p99,
    createErrors: create.errors + create.non2xx,
    createCpuUsPerReq: round(createCpu / Math.max(1, create.rps * seconds()), 1),
    createLoopP99Ms: createLoop.p99,
    ...(b
      ? {
          compare: {
            checkout: other,
            uniformRps: med(rows.uniformB, 'rps'),
            uniformToBare: round(med(rows.uniformB, 'rps') / bareRps),
            uniformCpuUsPerReq: med(rows.uniformB, 'cpuUsPerReq'),
            uniformLoopP99Ms: med(rows.uniformB, 'loopP99Ms'),
            zipfRps: med(rows.zipfB, 'rps'),
            zipfToBare: round(med(rows.zipfB, 'rps') / bareRps),
            zipfCpuUsPerReq: med(rows.zipfB, 'cpuUsPerReq'),
            zipfLoopP99Ms: med(rows.zipfB, 'loopP99Ms'),
            // Per round, this checkout's CPU µs per redirect less the compared one's (interleaved).
            uniformCpuDiffPerRound: rows.uniform.map((x, i) => round(x.cpuUsPerReq - rows.uniformB[i]!.cpuUsPerReq, 1)),
            zipfCpuDiffPerRound: rows.zipf.map((x, i) => round(x.cpuUsPerReq - rows.zipfB[i]!.cpuUsPerReq, 1)),
          },
        }
      : {}),
  };
}

export async function benchLinks(): Promise<Record<string, unknown>> {
  const n = Number(process.env.BENCH_LINKS ?? 1_000_000);
  const stores = (process.env.BENCH_STORES ?? 'file,redis').split(',').map((s) => s.trim()) as ('file' | 'redis')[];
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dtb-bench-links-'));
  const procs: ChildProcess[] = [];
  try {
    const barePort = await freePort();
    const bareFile = path.join(tmp, 'loop-bare.json');
    const bareProc = await startProcess(['--import', 'tsx', '--import', './bench/loop-delay.ts', 'bench/bare-hono.ts'], { PORT: String(barePort), LOOP_DELAY_FILE: bareFile }, `http://127.0.0.1:${barePort}/`);
    procs.push(bareProc);
    const out: Record<string, unknown> = {};
    for (const kind of stores) {
      const started = procs.length;
      out[kind] = await benchStore(kind, n, tmp, { base: `http://127.0.0.1:${barePort}`, proc: bareProc }, procs);
      for (const p of procs.splice(started)) p.kill('SIGKILL');
    }
    return out;
  } finally {
    for (const p of procs) p.kill('SIGKILL');
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(JSON.stringify(await benchLinks(), null, 2));
  process.exit(0);
}
