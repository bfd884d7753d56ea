// Short-link redirects under sustained load (issue 32), one server per spread: a 1M-link file
// store seeded once and copied for each server, so that one server only ever sees uniform
// visitors and another only Zipf(1.0) ones — a deployment's traffic has one spread, not one that
// switches every few seconds as bench/links.ts's rounds do (each of its runs measures the wake of
// the other spread's run before it). Windows of SECONDS each, in turn: bare hono's GET 302, then
// each server; a window's figures are its own (rate, ratio to the bare window just before, server
// CPU µs per redirect from /proc — the main thread's and the other threads', V8's GC helpers
// among them — and the GC pauses' µs per redirect from perf_hooks through bench/loop-delay.ts).
// The windows one after another show how a redirect's cost grows as a day's link-day records
// pile up (a uniform visit's code is nearly always its first of the day: one more record).
//
// `node --import tsx bench/links-steady.ts` — LINKS (default 1,000,000), DISTS (default
// `uniform,zipf`), WINDOWS (default 6), SECONDS (default 5), WARMUP (seconds of each server's
// own load first, not counted; default 5), SERVER_ARGS (extra node flags for the servers, after
// tsx's: e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`, each server then stopped with SIGTERM and
// awaited so that a profile gets written; or `--import ./bench/skip-analytics.ts` with
// SKIP_ANALYTICS, which the servers inherit: what a redirect costs without a part of its
// analytics), ANALYTICS_THREADS (`main`, `worker` or both, `main,worker`: a server per spread
// and value of ANALYTICS_THREAD, taking turns; default `worker`, the server's),
// ANALYTICS_THREAD_PROF=<dir> (a CPU profile of each server's analytics thread, written at its stop).
// At the end each server is stopped (SIGTERM: its counts drained and written) and its store read:
// `visits` (every request it answered) against `clicksWritten` (the clicks of its link-day
// records), so that a fast figure cannot come from counts left unwritten. SERVERS (default 1):
// servers per spread and mode, each on its own copy, all taking turns in every window; a
// variant's median is over all its servers' windows, `servers` gives each one's (two processes
// of one build differ by up to a quarter here: session 28). BUILDS (`label=dir,…`; default this
// checkout): servers of other checkouts too (a `git worktree` of another commit, its
// node_modules linked; `label=dir:NAME=value:…` adds environment variables to that build's
// servers, e.g. `b30=.:ANALYTICS_BATCH_MS=30000`), each variant per build (`zipf@label`), taking turns in the same windows:
// a change compared in one run, as this VM's speed drifts by a third between runs (session 29).
// Each server's `whole`: its threads' CPU µs per visit from the end of its warm-up to its stop,
// its idle turns included (a batch written while the others take their turn is in it, where
// the windows' figures leave it out).
// Load: wrk (Debian's), 32 connections, one thread.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createLogger } from '../src/log.js';
import { loadConfig } from '../src/config.js';
import { openFileStore, openStoreForCli } from '../src/state/index.js';
import { codeOf, cpuMicros, freePort, loopDelay, median, root, seedLinks, serverArgs, startProcess, stopGracefully, uniform, untilHealthy, WRK_PATHS_SCRIPT, wrkRun, zipf } from './lib.js';

const n = Number(process.env.LINKS ?? 1_000_000);
const dists = (process.env.DISTS ?? 'uniform,zipf').split(',');
const windows = Number(process.env.WINDOWS ?? 6);
const seconds = Number(process.env.SECONDS ?? 5);
const warmup = Number(process.env.WARMUP ?? 5);
const threads = (process.env.ANALYTICS_THREADS ?? process.env.ANALYTICS_THREAD ?? 'worker').split(',');
const servers = Number(process.env.SERVERS ?? 1);
const builds = (process.env.BUILDS ?? '')
  .split(',')
  .filter(Boolean)
  .map((b) => {
    const eq = b.indexOf('=');
    const [dir, ...vars] = b.slice(eq + 1).split(':');
    if (eq < 1 || !dir) throw new Error(`BUILDS: ${b} is not label=dir[:NAME=value…]`);
    return { label: b.slice(0, eq), dir: path.resolve(dir), env: Object.fromEntries(vars.map((v) => [v.slice(0, v.indexOf('=')), v.slice(v.indexOf('=') + 1)])) };
  });
const r1 = (x: number) => Math.round(x * 10) / 10;

interface Target {
  name: string;
  /** The variant it is one server of (its spread and mode). */
  variant: string;
  base: string;
  proc: ChildProcess;
  seq: Uint32Array;
  /** Where in `seq` its next window starts. */
  at: number;
  /** Its loop-delay report file (undefined: bare hono, not instrumented). */
  report: string | undefined;
  /** Its DATA_DIR (undefined: bare hono). */
  data?: string;
  /** Its threads' CPU and visits once warmed up (see `whole` in the output). */
  since?: { cpu: { main: number; other: number }; at: number };
}

/** The clicks of a stopped server's link-day records (its DATA_DIR, and DATA_DIR/analytics when the thread had one). */
async function clicksWritten(data: string): Promise<number> {
  const store = await openStoreForCli(loadConfig({ DATA_DIR: data }), { log: createLogger('error') });
  try {
    let clicks = 0;
    for (let after: string | undefined; ; ) {
      const page = await store.scan('link_days', { ...(after === undefined ? {} : { after }), limit: 10_000 });
      for (const r of page) clicks += (JSON.parse(r.json) as { clicks?: number }).clicks ?? 0;
      if (page.length < 10_000) return clicks;
      after = page[page.length - 1]!.id;
    }
  } finally {
    await store.close();
  }
}

/** CPU µs of the process's main thread and of its other threads (/proc/<pid>/task). */
function threadMicros(pid: number): { main: number; other: number } {
  let main = 0;
  let other = 0;
  for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
    let st: string;
    try {
      st = fs.readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
    } catch {
      continue; // a thread that ended meanwhile
    }
    const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
    const us = ((Number(f[11]) + Number(f[12])) * 1e6) / 100;
    if (Number(t) === pid) main += us;
    else other += us;
  }
  return { main, other };
}

/** One window of wrk over the target's next codes. */
async function window(t: Target, secs: number, tmp: string) {
  const lines: string[] = [];
  for (let j = 0; j < 1_000_000; j++) lines.push(`/s/${codeOf(t.seq[(t.at + j) % t.seq.length]!)}`);
  const file = path.join(tmp, 'paths');
  fs.writeFileSync(file, lines.join('\n') + '\n');
  if (t.report) await loopDelay(t.proc, t.report);
  const th0 = threadMicros(t.proc.pid!);
  const c0 = cpuMicros(t.proc.pid!);
  const w = await wrkRun(t.base, WRK_PATHS_SCRIPT, secs, [file]);
  const cpu = cpuMicros(t.proc.pid!) - c0;
  const th1 = threadMicros(t.proc.pid!);
  const loop = t.report ? await loopDelay(t.proc, t.report) : undefined;
  const gc = loop?.gc;
  t.at += w.requests;
  const per = (x: number) => r1(x / Math.max(1, w.requests));
  return {
    rps: Math.round(w.requests / (w.duration / 1e6)),
    cpuUsPerReq: per(cpu),
    mainUs: per(th1.main - th0.main),
    otherThreadsUs: per(th1.other - th0.other),
    ...(gc ? { gcPauseUs: per(gc.totalMs * 1000) } : {}),
    ...(loop ? { loopP99Ms: r1(loop.p99), loopMaxMs: r1(loop.max) } : {}),
    visitsSoFar: t.at,
    bad: w.status + w.errors,
  };
}

export async function benchLinksSteady(): Promise<Record<string, unknown>> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dtb-links-steady-'));
  const procs: ChildProcess[] = [];
  try {
    const seeded = path.join(tmp, 'seeded');
    fs.mkdirSync(seeded);
    const store = await openFileStore(seeded, { log: createLogger('error') });
    await seedLinks(store, n);
    await store.close();
    const targets: Target[] = [];
    for (const build of builds.length > 0 ? builds : [{ label: '', dir: root, env: {} }]) for (const dist of dists) for (const thread of threads) for (let k = 1; k <= servers; k++) {
      if (dist !== 'uniform' && dist !== 'zipf') throw new Error(`DISTS: ${dist} is neither uniform nor zipf`);
      if (thread !== 'main' && thread !== 'worker') throw new Error(`ANALYTICS_THREADS: ${thread} is neither main nor worker`);
      const variant = (threads.length > 1 ? `${dist}-${thread}` : dist) + (builds.length > 1 ? `@${build.label}` : '');
      const name = servers > 1 ? `${variant}#${k}` : variant;
      const data = path.join(tmp, `data-${name}`);
      fs.cpSync(seeded, data, { recursive: true });
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      const report = path.join(tmp, `loop-${name}.json`);
      const proc = await startProcess(
        ['--import', 'tsx', ...serverArgs('SERVER_ARGS'), '--import', './bench/loop-delay.ts', 'src/main.ts', 'serve'],
        { PORT: String(port), LOG_LEVEL: 'error', PUBLIC_BASE_URL: base, RATE_LIMITS: 'off', WORKERS: '0', LOOP_DELAY_FILE: report, DATA_DIR: data, ANALYTICS_THREAD: thread, ...build.env },
        `${base}/bench-probe`,
        build.dir,
      );
      procs.push(proc);
      await untilHealthy(base);
      await fetch(`${base}/s/${codeOf(0)}`, { redirect: 'manual' });
      // `at` counts the probe's visit just made.
      targets.push({ name, variant, base, proc, seq: dist === 'zipf' ? zipf(n, 4_000_000) : uniform(n, 4_000_000), at: 1, report, data });
    }
    const barePort = await freePort();
    const bareProc = await startProcess(['--import', 'tsx', 'bench/bare-hono.ts'], { PORT: String(barePort) }, `http://127.0.0.1:${barePort}/`);
    procs.push(bareProc);
    const bare: Target = { name: 'bare', variant: 'bare', base: `http://127.0.0.1:${barePort}`, proc: bareProc, seq: uniform(n, 4_000_000), at: 0, report: undefined };
    for (const t of targets) if (warmup > 0) await window(t, warmup, tmp);
    for (const t of targets) t.since = { cpu: threadMicros(t.proc.pid!), at: t.at };
    const rows: Record<string, Array<Record<string, number>>> = { bare: [] };
    for (let i = 0; i < windows; i++) {
      const b = await window(bare, seconds, tmp);
      rows['bare']!.push(b);
      for (const t of targets) {
        const r = await window(t, seconds, tmp);
        (rows[t.name] ??= []).push({ ...r, toBare: Math.round((r.rps / b.rps) * 100) / 100 });
      }
    }
    const out: Record<string, unknown> = { links: n, seconds, warmup, bareRps: median(rows['bare']!.map((r) => r.rps!)), bareCpuUsPerReq: median(rows['bare']!.map((r) => r.cpuUsPerReq!)) };
    const each: Record<string, unknown> = {};
    for (const t of targets) {
      const rs = rows[t.name]!;
      // The whole run's CPU per visit, the windows and the turns of the others alike: what a server does between its windows (its analytics thread's batches) counts too.
      const cpu = threadMicros(t.proc.pid!);
      const visits = Math.max(1, t.at - t.since!.at);
      const whole = { mainUs: r1((cpu.main - t.since!.cpu.main) / visits), otherThreadsUs: r1((cpu.other - t.since!.cpu.other) / visits) };
      await stopGracefully(t.proc);
      each[t.name] = { variant: t.variant, visits: t.at, clicksWritten: await clicksWritten(t.data!), whole, toBareMedian: median(rs.map((r) => r['toBare']!)), toBareFirst: rs[0]!['toBare'], toBareLast: rs[rs.length - 1]!['toBare'], cpuUsPerReqMedian: median(rs.map((r) => r['cpuUsPerReq']!)), windows: rs };
    }
    if (servers === 1) return { ...out, ...each };
    for (const variant of new Set(targets.map((t) => t.variant))) {
      const mine = targets.filter((t) => t.variant === variant);
      const rs = mine.flatMap((t) => rows[t.name]!);
      out[variant] = { toBareMedian: median(rs.map((r) => r['toBare']!)), cpuUsPerReqMedian: median(rs.map((r) => r['cpuUsPerReq']!)), servers: Object.fromEntries(mine.map((t) => [t.name, each[t.name]])) };
    }
    return out;
  } finally {
    if (serverArgs('SERVER_ARGS').length > 0 || process.env.ANALYTICS_THREAD_PROF) await Promise.all(procs.map(stopGracefully));
    for (const p of procs) p.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 500));
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(JSON.stringify(await benchLinksSteady(), null, 2));
  process.exit(0);
}
