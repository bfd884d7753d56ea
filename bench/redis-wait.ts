// The cost of REDIS_WAIT_REPLICAS=1 (issue 37): inserts into one collection on a Redis primary
// with one replica (loopback TCP, AOF everysec), `durable` (acknowledged by the primary) against
// `replicated` (a fence write + WAIT 1 on the acknowledgement connection, shared by concurrent
// writes), one writer and 32 at once. Rounds interleave the two; medians.
// Standalone: `node --import tsx bench/redis-wait.ts`; in `npm run bench`: BENCH_ONLY=redis-wait.
// BENCH_SECONDS (per case and round, default 3), BENCH_ROUNDS (default 3).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { createLogger } from '../src/log.js';
import { openRedisStore } from '../src/state/redis/index.js';
import type { CollectionDef, Durability, Store } from '../src/state/types.js';
import { freePort, median } from './lib.js';

interface Row {
  id: string;
  n: number;
}
const ROWS: CollectionDef<Row> = { name: 'waitbench', key: 'id' };
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

async function startNode(dir: string, port: number, extra: string[]): Promise<ChildProcess> {
  const bin = fs.existsSync('/usr/bin/redis-server') ? '/usr/bin/redis-server' : 'redis-server';
  const child = spawn(bin, ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--dbfilename', `d${port}.rdb`, '--appenddirname', `a${port}`, '--save', '', '--appendonly', 'yes', '--appendfsync', 'everysec', '--maxmemory-policy', 'noeviction', '--loglevel', 'warning', ...extra], { stdio: 'ignore' });
  for (let i = 0; i < 200; i++) {
    if (await new Promise((r) => net.connect(port, '127.0.0.1').once('connect', function (this: net.Socket) { this.destroy(); r(true); }).once('error', () => r(false)))) return child;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`redis-server on ${port} did not start`);
}

/** Inserts for `ms` with `writers` concurrent writers; writes/s and the median latency (ms). */
async function run(store: Store, durability: Durability, writers: number, ms: number, tag: string): Promise<{ wps: number; p50: number }> {
  const rows = store.collection(ROWS);
  const lat: number[] = [];
  const end = performance.now() + ms;
  let n = 0;
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      while (performance.now() < end) {
        const t = performance.now();
        await rows.insert({ id: `${tag}-${w}-${n++}`, n }, { durability });
        lat.push(performance.now() - t);
      }
    }),
  );
  return { wps: round((lat.length * 1000) / ms, 0), p50: round(median(lat), 2) };
}

export async function benchRedisWait(): Promise<Record<string, unknown>> {
  const seconds = Number(process.env.BENCH_SECONDS ?? 3);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dtb-bench-wait-'));
  const p = await freePort();
  const r = await freePort();
  const primary = await startNode(dir, p, []);
  const replica = await startNode(dir, r, ['--replicaof', '127.0.0.1', String(p)]);
  const log = createLogger('error');
  try {
    // The replica's first sync must be over, or WAIT counts it out.
    const probe = new Redis({ host: '127.0.0.1', port: p });
    for (let i = 0; i < 400 && !/slave0:.*state=online/.test(await probe.info('replication')); i++) await new Promise((res) => setTimeout(res, 50));
    probe.disconnect();
    const store = await openRedisStore({ url: `redis://127.0.0.1:${p}`, prefix: 'bw:', log, quiet: true, waitReplicas: 1, waitTimeoutMs: 1000 });
    const out: Record<string, { wps: number[]; p50: number[] }> = {};
    const add = (k: string, x: { wps: number; p50: number }) => ((out[k] ??= { wps: [], p50: [] }).wps.push(x.wps), out[k].p50.push(x.p50));
    for (let i = 0; i < rounds; i++) {
      for (const writers of [1, 32]) {
        add(`durable_${writers}`, await run(store, 'durable', writers, seconds * 1000, `d${i}${writers}`));
        add(`replicated_${writers}`, await run(store, 'replicated', writers, seconds * 1000, `r${i}${writers}`));
      }
    }
    await store.close();
    const res: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(out)) res[k] = { writes_per_s: median(v.wps), p50_ms: median(v.p50) };
    for (const w of [1, 32]) res[`replicated_vs_durable_${w}`] = round(median(out[`replicated_${w}`]!.wps) / median(out[`durable_${w}`]!.wps), 2);
    return res;
  } finally {
    replica.kill('SIGKILL');
    primary.kill('SIGKILL');
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(JSON.stringify(await benchRedisWait(), null, 2));
  process.exit(0);
}
