// Scale-out benchmark (issue 17): one instance on Redis beside the same server on the file store
// and bare hono, in one run. REST base_convert with limits on (one Lua call per subject and turn on
// Redis), keyless and with a key, and with limits off on both stores (what the limit check adds),
// req/s and the server's own CPU per request (/proc/<pid>/stat, issue 37), redis-server's and the
// load generator's (autocannon runs in this process, on the same two cores; BENCH_LOADGEN=wrk: wrk);
// short-link creations/s (limits on: the quota's insertCapped) and redirects/s with 100k links
// stored; the scheduler's due check with 100k tasks stored.
// Standalone: `node --import tsx bench/redis.ts`; in `npm run bench`: BENCH_ONLY=redis.
// BENCH_SECONDS (per load run, default 6), BENCH_LINKS / BENCH_CRON_TASKS (default 100000).
// BENCH_REDIS_PART=limiter: only the limiter rounds (the hot path of issue 37), no links or tasks;
// with BENCH_COMPARE=<another checkout with node_modules> its server runs the limited call too.
// BENCH_LOADGEN=wrk: the load runs use wrk instead of autocannon (./lib.ts).
// BENCH_REDIS_PART=sharded: only the queries across the Cluster's 16 shards (bench/redis-sharded.ts).
// Redis: Debian's redis-server, started here on a unix socket with AOF everysec and noeviction
// (the settings docs/scale-out.md recommends).
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
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
import { benchSharded } from './redis-sharded.js';
import { compareDir, cpuMicros, freePort, load, median, redirectLoad, startProcess, startRedisServer, WRK, type LoadResult } from './lib.js';

const log = createLogger('error');
const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
// Limits on, but far away: every call runs the limit check without being refused.
const HIGH = '999999999/999999999/999999999';
const LIMITS_ON = { RATE_LIMITS: 'on', PLAN_KEYLESS: HIGH, PLAN_FREE: HIGH, PLAN_PRO: HIGH };

/** EVALSHA calls and their total µs so far, from redis-server's INFO commandstats. */
async function evalshaStats(store: { conn: { redis: { info(section: string): Promise<string> } } }): Promise<{ calls: number; usec: number }> {
  const m = /^cmdstat_evalsha:calls=(\d+),usec=(\d+)/m.exec(await store.conn.redis.info('commandstats'));
  return { calls: Number(m?.[1] ?? 0), usec: Number(m?.[2] ?? 0) };
}

/**
 * The limit check alone, in this process: 32 callers in a loop for `seconds`, all on one subject
 * (batched: one script per turn) or each on its own (one script per call), under a plan of
 * `perMinute` calls a minute (the bench's 999,999,999: every call admitted and logged; a real
 * plan: the minute fills at once and most calls are refused). Node CPU µs per check
 * (process.cpuUsage), redis-server's (/proc), and the script's own µs per run and checks per
 * run (INFO commandstats: EVALSHA usec_per_call, issue 37 session 10).
 */
async function limitCheckCpu(
  url: string,
  redisPid: number,
  subjects: 1 | 32,
  seconds: number,
  perMinute = 999_999_999,
  fullMinute = false,
): Promise<{ perSecond: number; nodeUs: number; redisUs: number; scriptUs: number; perRun: number }> {
  const store = await openRedisStore({ url, prefix: `bench-check-${subjects}-${perMinute}-${fullMinute}:`, log, quiet: true });
  try {
    if (fullMinute) {
      await fillMinute(store, 'one');
      // The fill's AOF write is done before the clock starts.
      await new Promise((r) => setTimeout(r, 1500));
    }
    let n = 0;
    const end = performance.now() + seconds * 1000;
    const e0 = await evalshaStats(store);
    const c0 = process.cpuUsage();
    const r0 = cpuMicros(redisPid);
    await Promise.all(
      Array.from({ length: 32 }, async (_, i) => {
        while (performance.now() < end) {
          await store.windows.rate(subjects === 1 ? 'one' : `s${i}`, perMinute, 999_999_999, true);
          n++;
        }
      }),
    );
    const c = process.cpuUsage(c0);
    const redisUs = round((cpuMicros(redisPid) - r0) / n, 1);
    const e = await evalshaStats(store);
    const runs = Math.max(1, e.calls - e0.calls);
    return { perSecond: Math.round(n / seconds), nodeUs: round((c.user + c.system) / n, 1), redisUs, scriptUs: round((e.usec - e0.usec) / runs, 1), perRun: round(n / runs, 1) };
  } finally {
    await store.close();
  }
}

/**
 * A subject's minute log as the REST bench leaves it after a minute at 20,000 calls/s, 13 per
 * script run (docs/scale-out.md "Hot path", session 9's measure): what the limit check costs at
 * steady state, where a 3 s run starts from an empty log. Written in the limit script's member
 * format (src/state/redis/scripts.ts RATE: "<ms>:<cum, 15 digits>:<count>", score ms).
 */
async function fillMinute(store: Awaited<ReturnType<typeof openRedisStore>>, subject: string): Promise<void> {
  const r = store.conn.redis;
  const key = store.key(`rl:${subject}`, 'mw');
  const [sec, micro] = await r.time();
  const now = Number(sec) * 1000 + Math.floor(Number(micro) / 1000);
  const rate = 20_000;
  const perRun = 13;
  let p = r.pipeline();
  let cum = 0;
  for (let i = 0; i < rate * 59; i += perRun) {
    const t = now - 59_000 + Math.floor((i / rate) * 1000);
    cum += perRun;
    p.zadd(key, t, `${t}:${String(cum).padStart(15, '0')}:${perRun}`);
    if (cum % (perRun * 5000) === 0) (await p.exec(), (p = r.pipeline()));
  }
  p.pexpire(key, 61_000);
  await p.exec();
}

/** One load run and the server's CPU per answered request. */
async function measured(pid: number, name: string, opts: Parameters<typeof load>[1]): Promise<LoadResult & { cpuUs: number; total: number }> {
  const c0 = cpuMicros(pid);
  const r = await load(name, opts);
  const duration = opts.duration ?? Number(process.env.BENCH_SECONDS ?? 6);
  return { ...r, cpuUs: round((cpuMicros(pid) - c0) / Math.max(1, r.rps * duration), 1), total: r.rps * duration };
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
  if (process.env.BENCH_REDIS_PART === 'sharded') return benchSharded();
  const nLinks = Number(process.env.BENCH_LINKS ?? 100_000);
  const nTasks = Number(process.env.BENCH_CRON_TASKS ?? 100_000);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dtb-bench-redis-'));
  const procs: ChildProcess[] = [];
  const redis = await startRedisServer(tmp, ['--save', '', '--appendonly', 'yes', '--appendfsync', 'everysec', '--maxmemory-policy', 'noeviction']);
  try {
    const prefix = 'bench:';
    const fileDir = fs.mkdtempSync(path.join(tmp, 'file-'));
    // 100k links in each backend.
    const fileStore = await openFileStore(fileDir, { log });
    const limiterOnly = process.env.BENCH_REDIS_PART === 'limiter';
    const codes = limiterOnly ? [] : await fill(fileStore, nLinks);
    await fileStore.close();
    const redisStore = await openRedisStore({ url: redis.url, prefix, log, quiet: true });
    const t0 = performance.now();
    if (!limiterOnly) await fill(redisStore, nLinks);
    const redisFillSeconds = (performance.now() - t0) / 1000;
    await redisStore.close();

    const checks: Record<string, string> = {};
    // The bench's plan (every call logged: the minute log's worst case), from an empty log and
    // from a full minute, and a real plan (600 a minute: full at once, the refused calls' path).
    const checkCases = [
      [32, 999_999_999, false],
      [1, 999_999_999, false],
      [1, 999_999_999, true],
      [1, 600, false],
    ] as const;
    for (const [subjects, perMinute, full] of checkCases) {
      const c = await limitCheckCpu(redis.url, redis.child.pid!, subjects, 3, perMinute, full);
      const name = `${subjects === 1 ? 'one subject (batched)' : '32 subjects (one script each)'}${perMinute === 600 ? ', 600 a minute' : ''}${full ? ', a full minute logged (20k/s)' : ''}`;
      checks[name] = `${c.perSecond}/s, ${c.nodeUs} µs node, ${c.redisUs} µs redis-server, EVALSHA ${c.scriptUs} µs/run, ${c.perRun} checks/run`;
    }
    const barePort = await freePort();
    procs.push(await startProcess(['--import', 'tsx', 'bench/bare-hono.ts'], { PORT: String(barePort) }, `http://127.0.0.1:${barePort}/`));
    // The same service with limits off beside each (issue 37): what the REST path costs without
    // the limit check, so "limits on" is measured as a difference on both stores.
    /** The service (of this checkout, or of `cwd`'s) on a free port, ready: /healthz 200 once the collections are loaded. */
    const serve = async (env: Record<string, string>, cwd?: string): Promise<{ base: string; pid: number }> => {
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      const p = await startProcess(['--import', 'tsx', 'src/main.ts', 'serve'], { PORT: String(port), LOG_LEVEL: 'error', PUBLIC_BASE_URL: base, WORKERS: '0', ...env }, `${base}/healthz`, cwd);
      procs.push(p);
      for (let i = 0; i < 600 && (await fetch(`${base}/healthz`)).status !== 200; i++) await new Promise((r) => setTimeout(r, 100));
      return { base, pid: p.pid! };
    };
    /** A free key registered on the service at `base`. */
    const registerKey = async (base: string, email: string): Promise<string> => {
      const reg = await fetch(`${base}/api/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email }) });
      return ((await reg.json()) as { api_key: string }).api_key;
    };
    /** The limited call: REST base_convert on `base`, with `key` when given. */
    const restCall = (base: string, key?: string) => ({ url: `${base}/api/base-convert`, body: '{"value":"255"}', headers: (key === undefined ? {} : { authorization: `Bearer ${key}` }) as Record<string, string> });
    const servers: Record<'file' | 'redis' | 'file off' | 'redis off', string> = { file: '', redis: '', 'file off': '', 'redis off': '' };
    for (const kind of ['file', 'redis', 'file off', 'redis off'] as const) {
      const env: Record<string, string> = kind.startsWith('file') ? { DATA_DIR: kind === 'file' ? fileDir : fs.mkdtempSync(path.join(tmp, 'off-')) } : { REDIS_URL: redis.url, REDIS_PREFIX: kind === 'redis' ? prefix : 'bench-off:' };
      servers[kind] = (await serve({ ...(kind.endsWith('off') ? { RATE_LIMITS: 'off' } : LIMITS_ON), ...env })).base;
    }
    // BENCH_COMPARE (limiter part): the same REST call, limits on, on the compared checkout's server, same Redis, own prefix.
    const other = limiterOnly ? compareDir() : undefined;
    let before: { base: string; key: string; pid: number } | undefined;
    if (other) {
      const b = await serve({ ...LIMITS_ON, REDIS_URL: redis.url, REDIS_PREFIX: 'bench-before:' }, other);
      before = { ...b, key: await registerKey(b.base, 'bench-before@example.com') };
    }
    const bareCase = { url: `http://127.0.0.1:${barePort}/echo`, body: '{"value":"255"}' };
    const bareSameAnswer = { url: `http://127.0.0.1:${barePort}/echo-limited`, body: '{"value":"255"}' };
    const keys: Record<'file' | 'redis', string> = { file: '', redis: '' };
    for (const k of ['file', 'redis'] as const) keys[k] = await registerKey(servers[k], `bench-${k}@example.com`);
    const rest = (k: keyof typeof servers, keyed = false) => restCall(servers[k], keyed ? keys[k === 'file' ? 'file' : 'redis'] : undefined);
    // MCP over HTTP (2026-07-28, stateless): the same call as one tools/call, keyed (session 12: the key cache serves it too).
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '0' } };
    const mcpKeyed = {
      url: `${servers.redis}/mcp`,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'base_convert', arguments: { value: '255' }, _meta: meta } }),
      headers: { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'base_convert', authorization: `Bearer ${keys.redis}` } as Record<string, string>,
    };
    const pids = { bare: procs[0]!.pid!, file: procs[1]!.pid!, redis: procs[2]!.pid!, 'file off': procs[3]!.pid!, 'redis off': procs[4]!.pid! };
    // Script runs on Redis (EVALSHA + EVAL), from its own statistics: requests per script run.
    const stats = await openRedisStore({ url: redis.url, prefix: 'bench-stats:', log, quiet: true });
    const scriptRuns = async () => [...(await stats.conn.redis.info('commandstats')).matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
    // Key lookups by hash (one ZRANGEBYLEX on the key_hash index each): what the key cache saves (session 11).
    const keyLookups = async () => Number(/^cmdstat_zrangebylex:calls=(\d+)/m.exec(await stats.conn.redis.info('commandstats'))?.[1] ?? 0);
    // Warm-up, then alternating rounds: each case's figure is the median of its rounds.
    const restBefore = (keyed: boolean) => restCall(before!.base, keyed ? before!.key : undefined);
    for (const o of [bareCase, bareSameAnswer, rest('file'), rest('redis'), rest('redis', true), rest('file off'), rest('redis off'), mcpKeyed, ...(before ? [restBefore(false), restBefore(true)] : [])]) await load('warm-up', { ...o, duration: 2 });
    const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
    const cases = {
      bare: () => measured(pids.bare, 'bare', bareCase),
      'bare, same answer': () => measured(pids.bare, 'bare, same answer', bareSameAnswer),
      'file, limits off': () => measured(pids['file off'], 'file, limits off', rest('file off')),
      'redis, limits off': () => measured(pids['redis off'], 'redis, limits off', rest('redis off')),
      file: () => measured(pids.file, 'file', rest('file')),
      'file keyed': () => measured(pids.file, 'file keyed', rest('file', true)),
      redis: () => measured(pids.redis, 'redis', rest('redis')),
      'redis keyed': () => measured(pids.redis, 'redis keyed', rest('redis', true)),
      'mcp redis keyed': () => measured(pids.redis, 'mcp redis keyed', mcpKeyed),
      ...(before
        ? {
            'redis before': () => measured(before.pid, 'redis before', restBefore(false)),
            'redis keyed before': () => measured(before.pid, 'redis keyed before', restBefore(true)),
          }
        : {}),
    };
    type Figure = 'rps' | 'cpu' | 'p99' | 'redisCpu' | 'loadCpu' | 'perScript' | 'lookups';
    const R: Record<string, Record<Figure, number[]>> = {};
    let errors = 0;
    for (let i = 0; i < rounds; i++) {
      for (const [name, run] of Object.entries(cases)) {
        const rc0 = cpuMicros(redis.child.pid!);
        const s0 = await scriptRuns();
        const k0 = await keyLookups();
        const l0 = cpuMicros('self', true);
        const x = await run();
        const l = cpuMicros('self', true) - l0;
        const scripts = (await scriptRuns()) - s0;
        const lookups = (await keyLookups()) - k0;
        const e = (R[name] ??= { rps: [], cpu: [], p99: [], redisCpu: [], loadCpu: [], perScript: [], lookups: [] });
        e.rps.push(x.rps);
        e.cpu.push(x.cpuUs);
        e.p99.push(x.p99);
        e.redisCpu.push(round((cpuMicros(redis.child.pid!) - rc0) / Math.max(1, x.total), 1));
        // The load generator (autocannon in this process, or wrk: a child reaped after its run) shares the two cores: its CPU per request.
        e.loadCpu.push(round(l / Math.max(1, x.total), 1));
        e.perScript.push(scripts > 0 ? round(x.total / scripts, 1) : 0);
        e.lookups.push(round(lookups / Math.max(1, x.total), 4));
        errors += x.errors + x.non2xx;
      }
    }
    await stats.close();
    const m = (name: string, f: Figure) => median(R[name]![f]);
    const bare = m('bare', 'rps');
    const out: Record<string, unknown> = {
      'bare hono req/s': bare,
      'REST base-convert, limits on, file store req/s': m('file', 'rps'),
      'REST base-convert, limits on, Redis req/s': m('redis', 'rps'),
      'REST base-convert, limits on, Redis, keyed req/s': m('redis keyed', 'rps'),
      'REST Redis ÷ bare (target ≥ 0.6)': round(m('redis', 'rps') / bare),
      'REST Redis keyed ÷ bare (target ≥ 0.6)': round(m('redis keyed', 'rps') / bare),
      // Each round against its own bare run: the spread of this VM's drift (the medians above mix its phases).
      'REST Redis / keyed ÷ bare, per round': R.bare!.rps.map((b, i) => `${round(R.redis!.rps[i]! / b)}/${round(R['redis keyed']!.rps[i]! / b)}`).join(' '),
      // Bare hono answering the limited call's body and headers: the floor any server sending that answer meets here.
      'bare hono, same answer as a limited call ÷ bare': round(m('bare, same answer', 'rps') / bare),
      'REST Redis / keyed ÷ (bare, same answer)': `${round(m('redis', 'rps') / m('bare, same answer', 'rps'))}/${round(m('redis keyed', 'rps') / m('bare, same answer', 'rps'))}`,
      'REST file ÷ bare': round(m('file', 'rps') / bare),
      'REST file keyed ÷ bare': round(m('file keyed', 'rps') / bare),
      'REST file, limits off ÷ bare': round(m('file, limits off', 'rps') / bare),
      'REST Redis, limits off ÷ bare': round(m('redis, limits off', 'rps') / bare),
      'server CPU µs/request (bare/bare same answer/file/file keyed/Redis/Redis keyed)': ['bare', 'bare, same answer', 'file', 'file keyed', 'redis', 'redis keyed'].map((k) => m(k, 'cpu')).join('/'),
      'server CPU µs/request, limits off (file/Redis)': `${m('file, limits off', 'cpu')}/${m('redis, limits off', 'cpu')}`,
      'server CPU ÷ bare, limits on (file/Redis/Redis keyed)': ['file', 'redis', 'redis keyed'].map((k) => round(m('bare', 'cpu') / m(k, 'cpu'))).join('/'),
      'redis-server CPU µs/request (Redis/Redis keyed)': `${m('redis', 'redisCpu')}/${m('redis keyed', 'redisCpu')}`,
      'requests per script run (Redis/Redis keyed)': `${m('redis', 'perScript')}/${m('redis keyed', 'perScript')}`,
      'key lookups per keyed request (Redis keyed; 0 with the key cache)': m('redis keyed', 'lookups'),
      'MCP tools/call over HTTP, limits on, Redis, keyed req/s': m('mcp redis keyed', 'rps'),
      'MCP Redis keyed ÷ bare': round(m('mcp redis keyed', 'rps') / bare),
      'MCP Redis keyed: server CPU µs/request, key lookups per request': `${m('mcp redis keyed', 'cpu')}, ${m('mcp redis keyed', 'lookups')}`,
      'load generator CPU µs/request (bare/bare same answer/file/Redis/Redis keyed)': ['bare', 'bare, same answer', 'file', 'redis', 'redis keyed'].map((k) => m(k, 'loadCpu')).join('/'),
      'p99 ms (file/Redis/Redis keyed)': `${m('file', 'p99')}/${m('redis', 'p99')}/${m('redis keyed', 'p99')}`,
      'REST errors + non-2xx': errors,
      'limit check alone, 32 in flight, CPU per check': checks,
    };
    if (before) {
      out[`BENCH_COMPARE ${other}: REST Redis / keyed ÷ bare`] = `${round(m('redis before', 'rps') / bare)}/${round(m('redis keyed before', 'rps') / bare)}`;
      out['BENCH_COMPARE: per round'] = R.bare!.rps.map((b, i) => `${round(R['redis before']!.rps[i]! / b)}/${round(R['redis keyed before']!.rps[i]! / b)}`).join(' ');
      out['BENCH_COMPARE: server CPU µs/request (Redis/Redis keyed)'] = `${m('redis before', 'cpu')}/${m('redis keyed before', 'cpu')}`;
    }
    if (process.env.BENCH_REDIS_PART === 'limiter') return { ...out, rounds, loadGenerator: WRK ? 'wrk' : 'autocannon' };
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
