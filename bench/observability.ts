// Issue 36: what metrics and request logging cost a small call, in the server's own CPU time per
// request (read from /proc), so that the other processes sharing the machine slow every variant
// alike. Variants: off (the default), METRICS_TOKEN (metrics on), control (a second server
// identical to off: the noise floor of the ratios), LOG_REQUESTS=on with LOG_FORMAT=json and
// LOG_LEVEL=warn (request ids on, the access line filtered by level: the tracking cost alone).
// Each round runs every variant once, in an order reversed every other round (ABBA: a load that
// drifts during a round weighs on both sides alike); each variant's ratio to off is taken within
// its round and the median of those paired ratios is reported with their range.
// BENCH_PROFILE=1 also runs off and metrics under `node --cpu-prof` and reports the share of the
// server's busy CPU samples spent in metrics code (src/metrics*.ts, prom-client, the call path's
// timing): a share inside one process barely moves with the machine's other load. Off's share is
// the floor of the attribution (code the metrics frames inline). The profiler's sampling thread
// costs CPU by wall-clock time, so in that mode read the shares, not the CPU-per-request ratios.
// Run: npm run build && BENCH_ONLY=observability npm run bench   (BENCH_ROUNDS, BENCH_REQUESTS;
// BENCH_VARIANTS=metrics,control to pick; BENCH_BEFORE=<a checkout built with npm run build> adds
// the variant `before`: that build with everything off, e.g. the commit before a change; with
// `before-metrics` in BENCH_VARIANTS also that build with metrics on, profiled with BENCH_PROFILE=1).
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { createMetrics } from '../src/metrics.js';
import { withHttpMetrics } from '../src/metrics-http.js';
import { profileShare } from './cpu-profile-share.js';
import { cpuMicros, freePort, median, root, startProcess } from './lib.js';

const CASES = {
  rest: { path: '/api/base-convert', body: '{"value":"255"}', headers: {} as Record<string, string> },
  mcp: {
    path: '/mcp',
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'base_convert', arguments: { value: '255' } } }),
    headers: { accept: 'application/json, text/event-stream' },
  },
};

const VARIANTS: Record<string, Record<string, string>> = {
  off: {},
  metrics: { METRICS_TOKEN: 'bench-metrics-token-0123' },
  control: {},
  'request ids': { LOG_REQUESTS: 'on', LOG_FORMAT: 'json', LOG_LEVEL: 'warn' },
};

/** Variants run under the CPU profiler with BENCH_PROFILE=1. */
const PROFILED = new Set(['off', 'metrics']);

/** Own code of the server: the build and its dependencies (node internals belong to their caller). */
const ownCode = (url: string) => url.includes('/dist/') || url.includes('/node_modules/');

/** Metrics code: src/metrics*.ts, prom-client, and the call path's timing around a call. */
const metricsFrame = (f: { functionName: string; url: string }) =>
  /\/dist\/metrics[^/]*\.js$/.test(f.url) || f.url.includes('/prom-client/') || (/\/dist\/core\/call\.js$/.test(f.url) && /#measured|#counted/.test(f.functionName));

async function cpuPerRequest(child: ChildProcess, port: number, c: (typeof CASES)['rest'], amount: number): Promise<number> {
  const before = cpuMicros(child.pid!);
  const r = await autocannon({ url: `http://127.0.0.1:${port}${c.path}`, method: 'POST', body: c.body, headers: { 'content-type': 'application/json', ...c.headers }, connections: 16, amount });
  if (r.non2xx + r.errors > 0) throw new Error(`${r.non2xx} non-2xx, ${r.errors} errors`);
  return (cpuMicros(child.pid!) - before) / amount;
}

/**
 * What metrics add to one request, in process (no sockets, no other process's noise): the HTTP
 * wrapper around a fetch that answers at once, plus the tool-call count, in ns of CPU per
 * request over a bare loop. A shared machine moves the load figures above by ±10 %; this one it
 * barely moves, and set beside the ~40 µs a small call costs it says what share metrics take.
 */
function inProcessNs(n = 1_000_000): number {
  const metrics = createMetrics({ defaultMetrics: false });
  const res = new Response('{}');
  const inner = (_req: Request, _env?: unknown) => res;
  const counted = withHttpMetrics(inner, metrics, (_m, p) => p);
  const req = new Request('http://bench/api/base-convert', { method: 'POST' });
  const env = { incoming: { url: '/api/base-convert' } };
  const cpu = (f: () => void) => {
    const t0 = process.cpuUsage();
    f();
    const t = process.cpuUsage(t0);
    return ((t.user + t.system) * 1000) / n;
  };
  const run = () => {
    const bare = cpu(() => {
      for (let i = 0; i < n; i++) inner(req, env);
    });
    const measured = cpu(() => {
      for (let i = 0; i < n; i++) {
        counted(req, env);
        metrics.toolCall('base_convert', 'rest', 'none', 'ok', 0.00004);
      }
    });
    return measured - bare;
  };
  run(); // warm-up
  return median([run(), run(), run()]);
}

/**
 * A build of the service (`dir`: this checkout, or BENCH_BEFORE's) as lib's startService starts
 * it — limits off, a fresh data dir — under the CPU profiler when `profileDir` is given (the
 * profile is written on exit).
 */
function start(dir: string, port: number, env: Record<string, string>, profileDir?: string): Promise<ChildProcess> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dtb-bench-'));
  const prof = profileDir === undefined ? [] : ['--cpu-prof', '--cpu-prof-interval', '100', `--cpu-prof-dir=${profileDir}`];
  return startProcess([...prof, path.join(dir, 'bin', 'devtoolbox.js'), 'serve'], { PORT: String(port), DATA_DIR: dataDir, RATE_LIMITS: 'off', LOG_LEVEL: 'error', ...env }, `http://127.0.0.1:${port}/healthz`);
}

/** Stops a profiled server and reads the share of its main thread's busy samples in metrics code. */
async function metricsShareOf(child: ChildProcess, dir: string): Promise<Record<string, unknown>> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGINT');
  await exited;
  // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile: thread 0 is the main thread (the others are pool workers).
  const file = fs.readdirSync(dir).find((f) => f.includes(`.${child.pid}.0.`));
  if (!file) throw new Error(`no main-thread profile in ${dir}`);
  const r = profileShare(path.join(dir, file), metricsFrame, ownCode);
  return { 'busy ms': r.busyMs, 'metrics share %': +(r.share * 100).toFixed(2), top: Object.fromEntries(r.top) };
}

export async function benchObservability(): Promise<Record<string, unknown>> {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
  const amount = Number(process.env.BENCH_REQUESTS ?? 20_000);
  const picked = process.env.BENCH_VARIANTS?.split(',').map((v) => v.trim());
  const before = process.env.BENCH_BEFORE;
  const variants = Object.keys(VARIANTS).filter((v) => v === 'off' || !picked || picked.includes(v));
  const profile = process.env.BENCH_PROFILE === '1';
  const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dtb-bench-prof-'));
  const servers: Record<string, { child: ChildProcess; port: number; profileDir?: string }> = {};
  try {
    // [name, build, env]: this build's variants, and BENCH_BEFORE's build off (and with metrics when picked).
    const plan: Array<[string, string, Record<string, string>]> = [];
    if (before) plan.push(['before', before, {}]);
    if (before && picked?.includes('before-metrics')) plan.push(['before-metrics', before, VARIANTS.metrics!]);
    for (const name of variants) plan.push([name, root, VARIANTS[name]!]);
    for (const [name, dir, env] of plan) {
      const port = await freePort();
      let profiled: string | undefined;
      if (profile && (PROFILED.has(name) || name === 'before-metrics')) fs.mkdirSync((profiled = path.join(profileDir, name)));
      servers[name] = { child: await start(dir, port, env, profiled), port, profileDir: profiled };
    }
    const names = Object.keys(servers);
    const samples: Record<string, number[]> = {};
    for (const s of Object.values(servers)) for (const c of Object.values(CASES)) await cpuPerRequest(s.child, s.port, c, amount / 4); // warm-up
    for (let i = 0; i < rounds; i++) {
      for (const name of i % 2 === 0 ? names : [...names].reverse()) {
        const s = servers[name]!;
        for (const [k, c] of Object.entries(CASES)) (samples[`${k} ${name}`] ??= []).push(await cpuPerRequest(s.child, s.port, c, amount));
      }
    }
    const out: Record<string, unknown> = {};
    for (const [k, xs] of Object.entries(samples)) out[`${k} µs CPU/request`] = +median(xs).toFixed(1);
    for (const k of Object.keys(CASES)) {
      const off = samples[`${k} off`]!;
      for (const v of names.filter((v) => v !== 'off')) {
        // Paired: each round's figure over off's in the same round.
        const ratios = samples[`${k} ${v}`]!.map((x, i) => x / off[i]!);
        out[`${k} ${v} ÷ off`] = +median(ratios).toFixed(3);
        out[`${k} ${v} ÷ off, range of the rounds`] = `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}`;
      }
    }
    if (profile) {
      // The profiler's sampling thread burns CPU by wall-clock time, not by request: under
      // BENCH_PROFILE the CPU-per-request figures and ratios above mean little; the shares do.
      out['profile note'] = 'CPU/request figures include the sampler thread (wall-clock bound): read the shares';
      for (const [name, s] of Object.entries(servers)) if (s.profileDir) out[`profile ${name}`] = await metricsShareOf(s.child, s.profileDir);
    }
    const ns = inProcessNs();
    out['metrics in process: ns CPU/request'] = Math.round(ns);
    out['metrics in process ÷ rest off'] = +(ns / 1000 / median(samples['rest off']!)).toFixed(4);
    return { ...out, rounds, requests: amount };
  } finally {
    for (const s of Object.values(servers)) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill();
    fs.rmSync(profileDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await benchObservability(), null, 2));
}
