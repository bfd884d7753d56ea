import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import type { Store } from '../src/state/index.js';
import { dayAdd, dayId, LINK_DAYS, STORE_CAPS, type DayCounts } from '../src/tools/shortener/analytics-counters.js';
import { LINKS, type LinkRecord } from '../src/tools/shortener/links.js';

export const root = path.join(import.meta.dirname, '..');

let tickUs: number | undefined;
/**
 * utime + stime of process `pid` (`'self'`: this one), in µs, from /proc/<pid>/stat: clock ticks
 * (getconf CLK_TCK, 10 ms on Linux; runs of seconds keep the error small). `reaped`: with its
 * reaped children's too (cutime + cstime: a wrk run, once it has exited).
 */
export function cpuMicros(pid: number | 'self', reaped = false): number {
  if (tickUs === undefined) {
    let hz = 100;
    try {
      hz = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      // no getconf: Linux's usual 100
    }
    tickUs = 1e6 / hz;
  }
  const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12]) + (reaped ? Number(f[13]) + Number(f[14]) : 0)) * tickUs;
}

/**
 * Starts Debian's redis-server on a unix socket in `dir` (no TCP port) and waits until it
 * accepts a connection. `persistence`: its snapshot and AOF options (none by default).
 */
export async function startRedisServer(dir: string, persistence: string[] = ['--save', '', '--appendonly', 'no']): Promise<{ url: string; socket: string; child: ChildProcess }> {
  const socket = path.join(dir, 'redis.sock');
  const bin = fs.existsSync('/usr/bin/redis-server') ? '/usr/bin/redis-server' : 'redis-server';
  const child = spawn(bin, ['--port', '0', '--unixsocket', socket, '--unixsocketperm', '700', '--dir', dir, ...persistence, '--loglevel', 'warning'], { stdio: 'ignore' });
  for (let i = 0; i < 200 && !fs.existsSync(socket); i++) await new Promise((r) => setTimeout(r, 25));
  await new Promise<void>((resolve, reject) => {
    const s = net.connect(socket, () => (s.end(), resolve()));
    s.on('error', reject);
  });
  return { url: `unix://${socket}`, socket, child };
}

/** Starts a node process (in `cwd`, the project by default) and waits until `url` answers. */
export async function startProcess(args: string[], env: Record<string, string>, url: string, cwd = root): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      const r = await fetch(url);
      if (r.status < 500) return child;
    } catch {
      // not up yet
    }
    if (child.exitCode !== null) throw new Error(`process exited: ${err}`);
    if (Date.now() > deadline) throw new Error(`timeout starting ${args.join(' ')}: ${err}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Reads (and resets) the event-loop delay histogram and GC pauses of a server started with
 * bench/loop-delay.ts preloaded and LOOP_DELAY_FILE=`file` (it writes them on SIGUSR2).
 */
export async function loopDelay(proc: ChildProcess, file: string): Promise<{ p99: number; max: number; gc?: { totalMs: number } & Record<string, number>; cpuTurn?: unknown }> {
  fs.rmSync(file, { force: true });
  proc.kill('SIGUSR2');
  for (let i = 0; i < 100 && !fs.existsSync(file); i++) await new Promise((r) => setTimeout(r, 10));
  return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as { p99: number; max: number }) : { p99: NaN, max: NaN };
}

/** Waits (at most two minutes) until the server at `base` answers /healthz with 200: a large store loads after it listens. */
export async function untilHealthy(base: string): Promise<void> {
  for (let i = 0; i < 1200 && (await fetch(`${base}/healthz`)).status !== 200; i++) await new Promise((r) => setTimeout(r, 100));
}

/** Starts the real service (built bin) on a temp data dir with limits off. */
export function startService(port: number, extraEnv: Record<string, string> = {}): Promise<ChildProcess> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dtb-bench-'));
  return startProcess(
    [path.join(root, 'bin', 'devtoolbox.js'), 'serve'],
    { PORT: String(port), DATA_DIR: dataDir, RATE_LIMITS: 'off', LOG_LEVEL: 'error', ...extraEnv },
    `http://127.0.0.1:${port}/healthz`,
  );
}

export interface LoadResult {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

/**
 * BENCH_LOADGEN=wrk: load runs use Debian's wrk (C, one thread, `connections` connections)
 * instead of autocannon, which runs in the bench's own process and spends 20–60 µs of CPU per
 * request (the limiter bench prints it) on the same two cores as the servers measured (issues 32,
 * 37); wrk spends about a third of that.
 */
export const WRK = process.env.BENCH_LOADGEN === 'wrk' ? (['/usr/bin/wrk', '/usr/local/bin/wrk'].find((p) => fs.existsSync(p)) ?? 'wrk') : undefined;

/** What a wrk script's `done` prints (WRK_DONE). wrk counts a status ≥ 400 in `status`. */
export interface WrkSummary {
  requests: number;
  /** µs */
  duration: number;
  status: number;
  errors: number;
  /** µs */
  p50: number;
  /** µs */
  p99: number;
}

/** The `done` function every wrk script of the bench ends with: one line the runner parses. */
export const WRK_DONE = `
function done(summary, latency, requests)
  io.write(string.format('WRK {"requests":%d,"duration":%d,"status":%d,"errors":%d,"p50":%d,"p99":%d}\\n', summary.requests, summary.duration, summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, latency:percentile(50), latency:percentile(99)))
end
`;

/** A wrk script that GETs the paths of the file named by its first argument, one per line, in turn (from the top again at the end). */
export const WRK_PATHS_SCRIPT = `
local paths, n, i = {}, 0, 0
function init(args)
  for line in io.lines(args[1]) do n = n + 1; paths[n] = line end
end
function request()
  i = i + 1
  if i > n then i = 1 end
  return wrk.format('GET', paths[i])
end
${WRK_DONE}`;

/** Extra node flags for a server under test, from the environment variable `name` (space-separated). */
export function serverArgs(name: string): string[] {
  return (process.env[name] ?? '').split(' ').filter((a) => a !== '');
}

/** Stops a server gracefully (a CPU profile is written at exit), at most 60 s. */
export async function stopGracefully(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null) return;
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  proc.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 60_000))]);
}

/** One wrk run of `script` (a Lua text ending with WRK_DONE) against `url`; `args` go to the script's init. */
export async function wrkRun(url: string, script: string, seconds: number, args: string[] = [], connections = 32): Promise<WrkSummary> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dtb-wrk-'));
  try {
    fs.writeFileSync(path.join(dir, 'run.lua'), script);
    const child = spawn(WRK ?? 'wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '-s', path.join(dir, 'run.lua'), url, ...(args.length > 0 ? ['--', ...args] : [])], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    const line = /^WRK (\{.*\})$/m.exec(out);
    if (code !== 0 || !line) throw new Error(`wrk failed (${code}): ${out}`);
    return JSON.parse(line[1]!) as WrkSummary;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** A Lua string literal (long brackets: no escapes to get wrong). */
const lua = (s: string) => `[==[${s}]==]`;

/** One load run: autocannon, or wrk with BENCH_LOADGEN=wrk (there non2xx counts statuses ≥ 400 only). */
export async function load(
  name: string,
  opts: { url: string; method?: 'GET' | 'POST'; body?: string; headers?: Record<string, string>; connections?: number; duration?: number },
): Promise<LoadResult> {
  const method = opts.method ?? 'POST';
  const headers = { 'content-type': 'application/json', ...(opts.headers ?? {}) };
  const connections = opts.connections ?? 32;
  const duration = opts.duration ?? Number(process.env.BENCH_SECONDS ?? 6);
  if (WRK) {
    const script = [`wrk.method = ${lua(method)}`, ...(opts.body === undefined ? [] : [`wrk.body = ${lua(opts.body)}`]), ...Object.entries(headers).map(([k, v]) => `wrk.headers[ ${lua(k)} ] = ${lua(v)}`), WRK_DONE].join('\n');
    const w = await wrkRun(opts.url, script, duration, [], connections);
    return { name, rps: Math.round(w.requests / (w.duration / 1e6)), p50: w.p50 / 1000, p99: w.p99 / 1000, errors: w.errors, non2xx: w.status };
  }
  const r = await autocannon({ url: opts.url, method, body: opts.body, headers, connections, duration });
  return { name, rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.timeouts, non2xx: r.non2xx };
}

/** The checkout compared with this one (BENCH_COMPARE: another checkout of this project with its node_modules), absolute; undefined when none. */
export function compareDir(): string | undefined {
  const d = process.env.BENCH_COMPARE;
  if (!d) return undefined;
  const abs = path.resolve(d);
  if (!fs.existsSync(path.join(abs, 'src/main.ts')) || !fs.existsSync(path.join(abs, 'node_modules'))) throw new Error(`BENCH_COMPARE: ${abs} is not a checkout of this project with node_modules`);
  return abs;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** A TCP port that was free a moment ago on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/**
 * GET load over a rotating list of short codes (`/s/{code}`), 32 connections for BENCH_SECONDS;
 * 3xx counts as success, anything else (2xx included) as `other`.
 */
export async function redirectLoad(base: string, codes: string[]): Promise<{ rps: number; p99: number; ok: number; other: number }> {
  let i = 0;
  const r = await autocannon({
    url: base,
    connections: 32,
    duration: Number(process.env.BENCH_SECONDS ?? 6),
    requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `/s/${codes[i++ % codes.length]!}` }) }],
  });
  return { rps: Math.round(r['3xx'] / r.duration), p99: r.latency.p99, ok: r['3xx'], other: r['2xx'] + r.non2xx - r['3xx'] + r.errors };
}

/** A deterministic PRNG (mulberry32), so both servers see the same visitors. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `m` code indexes uniform over [0, n). */
export function uniform(n: number, m: number): Uint32Array {
  const r = rng(1);
  return Uint32Array.from({ length: m }, () => Math.floor(r() * n));
}

/** `m` code indexes with P(rank k) ∝ 1/k (Zipf, s = 1), ranks scattered over the codes. */
export function zipf(n: number, m: number): Uint32Array {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let k = 0; k < n; k++) cdf[k] = sum += 1 / (k + 1);
  const r = rng(2);
  const out = new Uint32Array(m);
  for (let j = 0; j < m; j++) {
    const x = r() * sum;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    // Rank → code: a fixed odd multiplier modulo n scatters the hot codes over the segments.
    out[j] = Number((BigInt(lo) * 2654435761n) % BigInt(n));
  }
  return out;
}

/** The short code of the bench's link number `i`. */
export function codeOf(i: number): string {
  return `pre${i.toString(36)}`;
}

/** Seeds links 0 … n-1 straight into the store through putMany (chunks of 5,000), as the server would have written them (created now, or at `createdAt`). */
export async function seedLinks(store: Store, n: number, createdAt = new Date().toISOString()): Promise<void> {
  store.collection(LINKS);
  for (let s = 0; s < n; s += 5000) {
    const recs: LinkRecord[] = [];
    for (let i = s; i < Math.min(n, s + 5000); i++) {
      recs.push({
        code: codeOf(i),
        url: `https://example.com/articles/${i}/a-fairly-typical-slug-for-a-long-url?utm_source=bench&utm_medium=test`,
        createdAt,
        creator: 'key:bench',
        creatorKeyId: 'bench',
        creatorDay: `key:bench|${createdAt.slice(0, 10)}`,
      });
    }
    await store.putMany(LINKS, recs);
  }
}

/** Writes the link-day record of links 0 … n-1 for `day` with `counts`, as the server's flush writes them (dayAdd, 256 a call). */
export async function seedDays(store: Store, n: number, day: string, counts: DayCounts): Promise<void> {
  const days = store.collection(LINK_DAYS);
  for (let s = 0; s < n; s += 256) {
    const items = [];
    for (let i = s; i < Math.min(n, s + 256); i++) items.push(dayAdd(dayId(day, codeOf(i)), counts));
    await days.addMany(items, { caps: STORE_CAPS, durability: 'lazy' });
  }
}
