// Scale-out benchmark (issue 17): one instance on Redis beside the same server on the file store
// and bare hono, in one run. REST base_convert with limits on (one Lua call per request on Redis);
// short-link creations/s (limits on: the quota's insertCapped) and redirects/s with 100k links
// stored; the scheduler's due check with 100k tasks stored.
// Standalone: `node --import tsx bench/redis.ts`; in `npm run bench`: BENCH_ONLY=redis.
// BENCH_SECONDS (per load run, default 6), BENCH_LINKS / BENCH_CRON_TASKS (default 100000).
// Redis: Debian's redis-server, started here on a unix socket with AOF everysec and noeviction
// (the settings docs/scale-out.md recommends).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadConfig } from '../src/config.js';
import { invokeTool } from '../src/invoke.js';
import { createLogger } from '../src/log.js';
import type { AnyTool, ToolContext } from '../src/registry.js';
import { closeServices, createServices } from '../src/services.js';
import { openFileStore, type Store } from '../src/state/index.js';
import { openRedisStore } from '../src/state/redis/index.js';
import { cronTaskCreate } from '../src/tools/cron-tasks/cron-task-create.js';
import { TASKS, tasksOf, type TaskRecord } from '../src/tools/cron-tasks/model.js';
import { startScheduler } from '../src/tools/cron-tasks/scheduler.js';
import { LINKS, type LinkRecord } from '../src/tools/shortener/links.js';
import { freePort, load, median, redirectLoad, startProcess } from './lib.js';

const log = createLogger('error');
const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
// Limits on, but far away: every call runs the limit check without being refused.
const HIGH = '999999999/999999999/999999999';
const LIMITS_ON = { RATE_LIMITS: 'on', PLAN_KEYLESS: HIGH, PLAN_FREE: HIGH, PLAN_PRO: HIGH };

async function startRedisServer(dir: string): Promise<{ url: string; child: ChildProcess }> {
  const socket = path.join(dir, 'redis.sock');
  const bin = fs.existsSync('/usr/bin/redis-server') ? '/usr/bin/redis-server' : 'redis-server';
  const child = spawn(
    bin,
    ['--port', '0', '--unixsocket', socket, '--unixsocketperm', '700', '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'everysec', '--maxmemory-policy', 'noeviction', '--loglevel', 'warning'],
    { stdio: 'ignore' },
  );
  for (let i = 0; i < 200 && !fs.existsSync(socket); i++) await new Promise((r) => setTimeout(r, 25));
  await new Promise<void>((resolve, reject) => {
    const s = net.connect(socket, () => (s.end(), resolve()));
    s.on('error', reject);
  });
  return { url: `unix://${socket}`, child };
}

function linkRecords(n: number): LinkRecord[] {
  const createdAt = new Date().toISOString();
  return Array.from({ length: n }, (_, i) => ({
    code: `pre${i.toString(36)}`,
    url: `https://example.com/articles/${i}/a-fairly-typical-slug-for-a-long-url?utm_source=bench&utm_medium=test`,
    createdAt,
    creator: 'key:bench',
    creatorKeyId: 'bench',
    creatorDay: `key:bench|${createdAt.slice(0, 10)}`,
  }));
}

async function fill(store: Store, n: number): Promise<string[]> {
  const recs = linkRecords(n);
  store.collection(LINKS);
  for (let i = 0; i < recs.length; i += 5000) await store.putMany(LINKS, recs.slice(i, i + 5000));
  return recs.filter((_, i) => i % 97 === 0).map((r) => r.code);
}


/** Due checks over `n` stored tasks: nothing due, and 100 due (queued per tick). */
async function dueCheck(env: Record<string, string>, n: number): Promise<{ idleMs: number; hundredDueMs: number }> {
  let t = Date.parse('2026-11-23T12:00:30Z');
  const clock = { now: () => t };
  const services = await createServices(loadConfig({ ...env, LOG_LEVEL: 'error', FETCH_ALLOW_PRIVATE: 'true', RATE_LIMITS: 'off', WORKERS: '0' }), { log, clock });
  try {
    const ctx: ToolContext = { services, caller: { keyId: null, ip: 'bench', transport: 'memory' }, progress: async () => {}, signal: new AbortController().signal };
    // Webhooks to a closed port: queued and attempted, refused at once (the tick's cost is the queuing).
    const closed = await freePort();
    await invokeTool(cronTaskCreate as unknown as AnyTool, { agent_id: 'a0', name: 'seed', schedule: '0 9 * * *', callback_url: `http://127.0.0.1:${closed}/hook` }, ctx);
    const tasks = tasksOf(services.store);
    const [seed] = await tasks.query({ limit: 1 });
    const recs: TaskRecord[] = [];
    for (let i = 0; i < n; i++) {
      const due = i < 100;
      const at = due ? t - 1000 : t + 3_600_000 + i * 10;
      const withHook = due || i % 10 === 0;
      recs.push({
        ...seed!,
        task_id: `b${i.toString(36)}`,
        agent_id: `a${i % 1000}`,
        owner_agent: `anon|a${i % 1000}`,
        agent_next: `anon|a${i % 1000}|${new Date(at).toISOString()}`,
        next_run_at: new Date(at).toISOString(),
        notify_at: withHook ? at : null,
        callback_url: withHook ? seed!.callback_url : null,
        callback_secret: withHook ? seed!.callback_secret : null,
        wake_at: withHook ? at : null,
      });
    }
    await tasks.delete(seed!.task_id);
    for (let i = 0; i < recs.length; i += 5000) await services.store.putMany(TASKS, recs.slice(i, i + 5000));
    const sched = startScheduler(services, { timers: false, backoff: () => 3_600_000 });
    const t0 = performance.now();
    await sched.tick();
    const hundredDueMs = performance.now() - t0;
    await sched.settle();
    const idle: number[] = [];
    for (let i = 0; i < 30; i++) {
      const s = performance.now();
      await sched.tick();
      idle.push(performance.now() - s);
    }
    await sched.stop();
    return { idleMs: round(median(idle), 3), hundredDueMs: round(hundredDueMs, 1) };
  } finally {
    await closeServices(services);
  }
}

export async function benchRedis(): Promise<Record<string, unknown>> {
  const nLinks = Number(process.env.BENCH_LINKS ?? 100_000);
  const nTasks = Number(process.env.BENCH_CRON_TASKS ?? 100_000);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dtb-bench-redis-'));
  const procs: ChildProcess[] = [];
  const redis = await startRedisServer(tmp);
  try {
    const prefix = 'bench:';
    const fileDir = fs.mkdtempSync(path.join(tmp, 'file-'));
    // 100k links in each backend.
    const fileStore = await openFileStore(fileDir, { log });
    const codes = await fill(fileStore, nLinks);
    await fileStore.close();
    const redisStore = await openRedisStore({ url: redis.url, prefix, log, quiet: true });
    const t0 = performance.now();
    await fill(redisStore, nLinks);
    const redisFillSeconds = (performance.now() - t0) / 1000;
    await redisStore.close();

    const barePort = await freePort();
    procs.push(await startProcess(['--import', 'tsx', 'bench/bare-hono.ts'], { PORT: String(barePort) }, `http://127.0.0.1:${barePort}/`));
    const servers: Record<'file' | 'redis', string> = { file: '', redis: '' };
    for (const kind of ['file', 'redis'] as const) {
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      const env: Record<string, string> = kind === 'file' ? { DATA_DIR: fileDir } : { REDIS_URL: redis.url, REDIS_PREFIX: prefix };
      procs.push(await startProcess(['--import', 'tsx', 'src/main.ts', 'serve'], { PORT: String(port), LOG_LEVEL: 'error', PUBLIC_BASE_URL: base, WORKERS: '0', ...LIMITS_ON, ...env }, `${base}/healthz`));
      // Ready: /healthz 200 once the collections are loaded.
      for (let i = 0; i < 600 && (await fetch(`${base}/healthz`)).status !== 200; i++) await new Promise((r) => setTimeout(r, 100));
      servers[kind] = base;
    }
    const bareCase = { url: `http://127.0.0.1:${barePort}/echo`, body: '{"value":"255"}' };
    const rest = (k: 'file' | 'redis') => ({ url: `${servers[k]}/api/base-convert`, body: '{"value":"255"}' });
    // Warm-up, then alternating rounds.
    for (const o of [bareCase, rest('file'), rest('redis')]) await load('warm-up', { ...o, duration: 2 });
    const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
    const r: Record<string, number[]> = { bare: [], file: [], redis: [], fileP99: [], redisP99: [] };
    let errors = 0;
    for (let i = 0; i < rounds; i++) {
      const b = await load('bare', bareCase);
      const f = await load('file', rest('file'));
      const x = await load('redis', rest('redis'));
      r.bare!.push(b.rps);
      r.file!.push(f.rps);
      r.redis!.push(x.rps);
      r.fileP99!.push(f.p99);
      r.redisP99!.push(x.p99);
      errors += b.errors + b.non2xx + f.errors + f.non2xx + x.errors + x.non2xx;
    }
    const bare = median(r.bare!);
    const out: Record<string, unknown> = {
      'bare hono req/s': bare,
      'REST base-convert, limits on, file store req/s': median(r.file!),
      'REST base-convert, limits on, Redis req/s': median(r.redis!),
      'REST Redis ÷ bare (target ≥ 0.5)': round(median(r.redis!) / bare),
      'REST file ÷ bare': round(median(r.file!) / bare),
      'p99 ms (file/Redis)': `${median(r.fileP99!)}/${median(r.redisP99!)}`,
      'REST errors + non-2xx': errors,
    };
    // Links: alternating rounds too, each with its own bare hono run (the machine's load moves).
    const L: Record<string, number[]> = {};
    const push = (k: string, v: number) => (L[k] ??= []).push(v);
    let linkErrors = 0;
    for (let i = 0; i < rounds; i++) {
      push('bare', (await load('bare', bareCase)).rps);
      for (const k of ['file', 'redis'] as const) {
        const c = await load('url_shorten', { url: `${servers[k]}/api/shorten`, body: '{"url":"https://example.com/some/long/path?q=1"}' });
        const d = await redirectLoad(servers[k], codes);
        push(`${k} create`, c.rps);
        push(`${k} create p99`, c.p99);
        push(`${k} redirect`, d.rps);
        push(`${k} redirect p99`, d.p99);
        linkErrors += c.errors + c.non2xx + d.other;
      }
    }
    const bareL = median(L.bare!);
    out['bare hono req/s (link rounds)'] = bareL;
    for (const k of ['file', 'redis'] as const) {
      out[`${k}: creations/s (limits on${k === 'redis' ? ', target ≥ 3000' : ''})`] = median(L[`${k} create`]!);
      out[`${k}: creation p99 ms`] = median(L[`${k} create p99`]!);
      out[`${k}: redirects/s`] = median(L[`${k} redirect`]!);
      out[`${k}: redirect p99 ms`] = median(L[`${k} redirect p99`]!);
      out[`${k}: redirects ÷ bare${k === 'redis' ? ' (target ≥ 0.5)' : ''}`] = round(median(L[`${k} redirect`]!) / bareL);
    }
    out['link errors + non-2xx/3xx'] = linkErrors;
    out['links stored'] = nLinks;
    out['Redis: 100k links written (putMany) in s'] = round(redisFillSeconds, 1);
    for (const p of procs.splice(0)) p.kill('SIGKILL');
    const fileDue = await dueCheck({ DATA_DIR: fs.mkdtempSync(path.join(tmp, 'due-')) }, nTasks);
    const redisDue = await dueCheck({ REDIS_URL: redis.url, REDIS_PREFIX: 'bench-due:' }, nTasks);
    out['tasks stored'] = nTasks;
    out['due check, nothing due, ms (file/Redis)'] = `${fileDue.idleMs}/${redisDue.idleMs}`;
    out['due check queuing 100 webhooks, ms (file/Redis)'] = `${fileDue.hundredDueMs}/${redisDue.hundredDueMs}`;
    out.rounds = rounds;
    return out;
  } finally {
    for (const p of procs) p.kill('SIGKILL');
    redis.child.kill('SIGKILL');
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(JSON.stringify(await benchRedis(), null, 2));
  process.exit(0);
}
