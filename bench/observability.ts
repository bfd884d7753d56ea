// Issue 36: what metrics and request logging cost a small call, in the server's own CPU time per
// request (read from /proc), so that the other processes sharing the machine slow every variant
// alike. Variants: off (the default), METRICS_TOKEN (metrics on), LOG_REQUESTS=on with
// LOG_FORMAT=json and LOG_LEVEL=warn (request ids on, the access line filtered by level: the
// tracking cost alone). Rounds alternate the variants; medians are reported.
// Run: npm run build && BENCH_ONLY=observability npm run bench   (BENCH_ROUNDS, BENCH_REQUESTS;
// BENCH_VARIANTS=off,metrics to pick; BENCH_BEFORE=<a checkout built with npm run build> adds
// the variant `before`: that build with everything off, e.g. the commit before a change).
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { createMetrics } from '../src/metrics.js';
import { withHttpMetrics } from '../src/metrics-http.js';
import { freePort, median, startProcess, startService } from './lib.js';

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
  'request ids': { LOG_REQUESTS: 'on', LOG_FORMAT: 'json', LOG_LEVEL: 'warn' },
};

/** User + system CPU time of a process, in µs (Linux /proc; clock ticks of 10 ms). */
function cpuMicros(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

async function cpuPerRequest(child: ChildProcess, port: number, c: (typeof CASES)['rest'], amount: number): Promise<number> {
  const before = cpuMicros(child.pid!);
  const r = await autocannon({ url: `http://127.0.0.1:${port}${c.path}`, method: 'POST', body: c.body, headers: { 'content-type': 'application/json', ...c.headers }, connections: 16, amount });
  if (r.non2xx + r.errors > 0) throw new Error(`${r.non2xx} non-2xx, ${r.errors} errors`);
  return (cpuMicros(child.pid!) - before) / amount;
}

/** Another build of the service (BENCH_BEFORE), everything off, as startService starts this one. */
function startBefore(dir: string, port: number): Promise<ChildProcess> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dtb-bench-'));
  const env = { PORT: String(port), DATA_DIR: dataDir, RATE_LIMITS: 'off', LOG_LEVEL: 'error' };
  return startProcess([path.join(dir, 'bin', 'devtoolbox.js'), 'serve'], env, `http://127.0.0.1:${port}/healthz`);
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

export async function benchObservability(): Promise<Record<string, unknown>> {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
  const amount = Number(process.env.BENCH_REQUESTS ?? 20_000);
  const picked = process.env.BENCH_VARIANTS?.split(',').map((v) => v.trim());
  const before = process.env.BENCH_BEFORE;
  const variants = Object.keys(VARIANTS).filter((v) => v === 'off' || !picked || picked.includes(v));
  const servers: Record<string, { child: ChildProcess; port: number }> = {};
  try {
    if (before) {
      const port = await freePort();
      servers.before = { child: await startBefore(before, port), port };
    }
    for (const name of variants) {
      const port = await freePort();
      servers[name] = { child: await startService(port, VARIANTS[name]), port };
    }
    const samples: Record<string, number[]> = {};
    for (const [name, s] of Object.entries(servers)) for (const c of Object.values(CASES)) await cpuPerRequest(s.child, s.port, c, amount / 4); // warm-up
    for (let i = 0; i < rounds; i++) {
      for (const [name, s] of Object.entries(servers)) {
        for (const [k, c] of Object.entries(CASES)) (samples[`${k} ${name}`] ??= []).push(await cpuPerRequest(s.child, s.port, c, amount));
      }
    }
    const out: Record<string, unknown> = {};
    for (const [k, xs] of Object.entries(samples)) out[`${k} µs CPU/request`] = +median(xs).toFixed(1);
    for (const k of Object.keys(CASES)) {
      const off = median(samples[`${k} off`]!);
      for (const v of Object.keys(servers).filter((v) => v !== 'off')) out[`${k} ${v} ÷ off`] = +(median(samples[`${k} ${v}`]!) / off).toFixed(3);
    }
    const ns = inProcessNs();
    out['metrics in process: ns CPU/request'] = Math.round(ns);
    out['metrics in process ÷ rest off'] = +(ns / 1000 / median(samples['rest off']!)).toFixed(4);
    return { ...out, rounds, requests: amount };
  } finally {
    for (const s of Object.values(servers)) s.child.kill();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await benchObservability(), null, 2));
}
