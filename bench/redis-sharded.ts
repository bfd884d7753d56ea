// The cost of queries that span the 16 shards of the Cluster layout (issue 37), in one run:
// one owner's 10k links (plus 10k of other owners) on one Redis with the one-slot layout (as
// REDIS_URL runs), the same Redis with 16 shards (the merge alone), and a 3-master Cluster
// (16 shards over three masters). Per query: median wall time in this process (interleaved
// rounds) and the Redis servers' CPU per query (/proc/<pid>/stat). Queries are the store calls
// url_list makes: its first page (51 newest, the ownerTime index backwards), a page past a
// cursor deep in the range, the owner's count, and all 10k (an export-like walk).
// `BENCH_ONLY=redis BENCH_REDIS_PART=sharded npm run bench`, or
// `BENCH_REDIS_PART=sharded node --import tsx bench/redis.ts`. BENCH_SHARDED_LINKS (10000). A 30 s command
// timeout: a loaded machine must slow the figures, not fail the run.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createLogger } from '../src/log.js';
import { RedisStore, connectRedis } from '../src/state/redis/index.js';
import { LINKS, ownerTimeOf, type LinkRecord } from '../src/tools/shortener/links.js';
import { cpuMicros, median } from './lib.js';

const run = promisify(execFile);
const log = createLogger('error');
const BIN = fs.existsSync('/usr/bin/redis-server') ? '/usr/bin/redis-server' : 'redis-server';

function pings(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => s.write('PING\r\n'));
    s.once('data', (d) => (s.destroy(), resolve(d.toString().startsWith('+PONG'))));
    s.once('error', () => resolve(false));
  });
}

async function node(dir: string, port: number, extra: string[]): Promise<ChildProcess> {
  const c = spawn(BIN, ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--dbfilename', `d${port}.rdb`, '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction', '--loglevel', 'warning', ...extra], { stdio: 'ignore' });
  for (let i = 0; i < 400 && !(await pings(port)); i++) await new Promise((r) => setTimeout(r, 25));
  return c;
}

/** Links of owner `bench` (n) and of 100 other owners (n), one createdAt each, ownerTime set. */
function records(n: number): LinkRecord[] {
  const base = Date.parse('2026-11-01T00:00:00Z');
  return Array.from({ length: 2 * n }, (_, i) => {
    const keyId = i % 2 === 0 ? 'bench' : `other${i % 100}`;
    const createdAt = new Date(base + i * 1000).toISOString();
    const code = `c${i.toString(36)}`;
    return { code, url: `https://example.com/a/${i}`, createdAt, creator: `key:${keyId}`, creatorKeyId: keyId, creatorDay: `key:${keyId}|${createdAt.slice(0, 10)}`, ownerTime: ownerTimeOf(keyId, createdAt, code) };
  });
}

/** The sharded-query figures. */
export async function benchSharded(): Promise<Record<string, unknown>> {
  const n = Number(process.env.BENCH_SHARDED_LINKS ?? 10_000);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dtb-bench-sharded-'));
  const procs: ChildProcess[] = [];
  const stores: RedisStore[] = [];
  try {
    const singlePort = 21_000 + Math.floor(Math.random() * 5000);
    procs.push(await node(tmp, singlePort, []));
    const clusterPorts = [0, 1, 2].map((i) => 31_000 + Math.floor(Math.random() * 3000) * 3 + i);
    const clusterProcs = [];
    for (const p of clusterPorts) clusterProcs.push(await node(tmp, p, ['--cluster-enabled', 'yes', '--cluster-config-file', path.join(tmp, `nodes-${p}.conf`)]));
    procs.push(...clusterProcs);
    await run('redis-cli', ['--cluster', 'create', ...clusterPorts.map((p) => `127.0.0.1:${p}`), '--cluster-yes'], { timeout: 60_000 });
    for (let i = 0; i < 200; i++) {
      const out = await run('redis-cli', ['-p', String(clusterPorts[0]), 'CLUSTER', 'INFO']);
      if (out.stdout.includes('cluster_state:ok')) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const url = `redis://127.0.0.1:${singlePort}`;
    const setups = {
      'one Redis, 1 shard': { store: new RedisStore(await connectRedis({ url, log, quiet: true, commandTimeoutMs: 30_000 }), 'b1:', 1), pids: [procs[0]!.pid!] },
      'one Redis, 16 shards': { store: new RedisStore(await connectRedis({ url, log, quiet: true, commandTimeoutMs: 30_000 }), 'b16:', 16), pids: [procs[0]!.pid!] },
      'Cluster 3 masters, 16 shards': {
        store: new RedisStore(await connectRedis({ topology: { kind: 'cluster', nodes: clusterPorts.map((port) => ({ host: '127.0.0.1', port })) }, log, quiet: true, commandTimeoutMs: 30_000 }), 'bc:'),
        pids: clusterProcs.map((c) => c.pid!),
      },
    };
    const recs = records(n);
    for (const s of Object.values(setups)) {
      stores.push(s.store);
      for (let i = 0; i < recs.length; i += 5000) await s.store.putMany(LINKS, recs.slice(i, i + 5000));
    }
    const mine = recs.filter((r) => r.creatorKeyId === 'bench');
    const deep = mine[Math.floor(mine.length / 2)]!.ownerTime!;
    const queries: Record<string, { reps: number; fn: (s: RedisStore) => Promise<number> }> = {
      'first page (51 newest)': { reps: 200, fn: async (s) => (await s.collection(LINKS).query({ index: 'ownerTime', gt: 'bench|', lt: 'bench}', order: 'desc', limit: 51 })).length },
      'page past a cursor halfway': { reps: 200, fn: async (s) => (await s.collection(LINKS).query({ index: 'ownerTime', gt: 'bench|', lt: deep, order: 'desc', limit: 51 })).length },
      'count of the owner': { reps: 200, fn: (s) => s.collection(LINKS).count({ index: 'ownerTime', gt: 'bench|', lt: 'bench}' }) },
      [`all ${n} of the owner`]: { reps: 5, fn: async (s) => (await s.collection(LINKS).query({ index: 'ownerTime', gt: 'bench|', lt: 'bench}', order: 'desc' })).length },
    };
    const wall: Record<string, number[]> = {};
    const cpu: Record<string, number[]> = {};
    for (let r = 0; r < rounds; r++) {
      for (const [q, { reps, fn }] of Object.entries(queries)) {
        for (const [name, s] of Object.entries(setups)) {
          const expected = q.startsWith('first') || q.startsWith('page') ? 51 : n;
          const c0 = s.pids.reduce((a, p) => a + cpuMicros(p), 0);
          const t0 = performance.now();
          for (let i = 0; i < reps; i++) {
            const got = await fn(s.store);
            if (got !== expected) throw new Error(`${name} / ${q}: ${got} instead of ${expected}`);
          }
          const us = ((performance.now() - t0) * 1000) / reps;
          (wall[`${q} | ${name}`] ??= []).push(us);
          (cpu[`${q} | ${name}`] ??= []).push((s.pids.reduce((a, p) => a + cpuMicros(p), 0) - c0) / reps);
        }
      }
    }
    const out: Record<string, unknown> = { links: `${n} of the owner + ${n} of 100 others`, rounds };
    for (const k of Object.keys(wall)) out[`${k}: µs wall / µs Redis CPU`] = `${Math.round(median(wall[k]!))} / ${Math.round(median(cpu[k]!))}`;
    return out;
  } finally {
    for (const s of stores) await s.close().catch(() => {});
    for (const p of procs) p.kill('SIGKILL');
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
