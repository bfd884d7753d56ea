import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';

export const root = path.join(import.meta.dirname, '..');

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

/** One autocannon run. */
export async function load(
  name: string,
  opts: { url: string; method?: 'GET' | 'POST'; body?: string; headers?: Record<string, string>; connections?: number; duration?: number },
): Promise<LoadResult> {
  const r = await autocannon({
    url: opts.url,
    method: opts.method ?? 'POST',
    body: opts.body,
    headers: { 'content-type': 'application/json', ...(opts.headers ?? {}) },
    connections: opts.connections ?? 32,
    duration: opts.duration ?? Number(process.env.BENCH_SECONDS ?? 6),
  });
  return { name, rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.timeouts, non2xx: r.non2xx };
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
