/**
 * Issue 17: several instances on one Redis keep every promise of docs/contract.md cluster-wide.
 * Three instances here are three full services in this process, each with its own Redis
 * connection and HTTP socket (test/scale-out-e2e.test.ts runs three `serve` processes).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { keysCommand } from '../src/keys-cli.js';
import { manualClock } from '../src/core/clock.js';
import { closeServices, createServices, type Services } from '../src/services.js';
import { transferCommand } from '../src/state/transfer-cli.js';
import { LIMITS, tasksOf, type TaskRecord } from '../src/tools/cron-tasks/model.js';
import { startScheduler } from '../src/tools/cron-tasks/scheduler.js';
import { families } from '../src/tools/index.js';
import { openRedisStore } from '../src/state/redis/index.js';
import type { Logger } from '../src/log.js';
import { testConfig, tempDir, listenTestApp, type ListeningApp } from './harness.js';
import { checkIndexesCommand } from '../src/state/check-indexes-cli.js';
import { STORED_COLLECTIONS } from '../src/tools/manifests.js';
import { describeRedis, startRedis, type TestRedis } from './redis.js';
import { startRedisCluster, type TestCluster } from './redis-topology.js';
import { ITEMS } from './store-fixtures.js';
import { createLogger } from '../src/log.js';

let redis: TestRedis;
const apps: ListeningApp[] = [];
const services: Services[] = [];

afterAll(async () => {
  for (const a of apps.splice(0)) await a.close().catch(() => {});
  for (const s of services.splice(0)) await closeServices(s).catch(() => {});
  await redis?.stop();
});

/** Where the instances' state lives: one Redis, or a Cluster (set by each describe's beforeAll). */
let target: { env(): Record<string, string>; prefix(): string };
let prefixes = 0;

function envFor(prefix: string, extra: Record<string, string> = {}): Record<string, string> {
  return { ...target.env(), REDIS_PREFIX: prefix, RATE_LIMITS: 'on', LOG_LEVEL: 'silent', ...extra };
}

/** Three instances on one Redis prefix. */
async function cluster(extra: Record<string, string> = {}, n = 3): Promise<{ prefix: string; nodes: ListeningApp[] }> {
  const prefix = target.prefix();
  const nodes: ListeningApp[] = [];
  for (let i = 0; i < n; i++) nodes.push(await listenTestApp({ env: envFor(prefix, extra) }));
  apps.push(...nodes);
  return { prefix, nodes };
}

async function call(node: ListeningApp, method: string, p: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(node.url + p, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    redirect: 'manual',
  });
}

async function register(node: ListeningApp, email: string): Promise<string> {
  const r = await call(node, 'POST', '/api/auth/register', { email });
  expect(r.status).toBe(201);
  return ((await r.json()) as { api_key: string }).api_key;
}

/** Polls until `ok`: the test's own timeout is the only bound (its signal ends the polling). */
async function until(ok: () => Promise<boolean>, signal: AbortSignal): Promise<void> {
  while (!(await ok())) {
    signal.throwIfAborted();
    await new Promise((r) => setTimeout(r, 100));
  }
}

const statuses = (rs: Response[]) => {
  const out: Record<number, number> = {};
  for (const r of rs) out[r.status] = (out[r.status] ?? 0) + 1;
  return out;
};

/**
 * The checks every topology passes (one Redis, a Cluster): limits, registration, the link
 * quota and clicks, the task cap, a live plan change, webhooks, export and import.
 */
function sharedChecks(): void {
  it('limits are exact cluster-wide: 45 simultaneous calls with one free key on 3 instances → 10 × 200, 35 × 429; a refused call consumes nothing', async () => {
    const { nodes } = await cluster();
    const key = await register(nodes[0]!, 'limits@example.com');
    const auth = { authorization: `Bearer ${key}` };
    const rs = await Promise.all(Array.from({ length: 45 }, (_, i) => call(nodes[i % 3]!, 'POST', '/api/base-convert', { value: '255' }, auth)));
    expect(statuses(rs)).toStrictEqual({ 200: 10, 429: 35 });
    const refused = rs.find((r) => r.status === 429)!;
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get('ratelimit-remaining')).toBe('0');
    const info = (await (await call(nodes[2]!, 'GET', '/api/auth/info', undefined, auth)).json()) as { usage: { minute: { used: number }; day: { used: number } } };
    expect(info.usage.minute.used).toBe(10);
    expect(info.usage.day.used).toBe(10);
  });

  it('keyless callers per address, and the day counter, likewise', async () => {
    const { nodes } = await cluster({ PLAN_KEYLESS: '5/10/20', PLAN_FREE: '100/12/100' });
    const keyless = await Promise.all(Array.from({ length: 15 }, (_, i) => call(nodes[i % 3]!, 'POST', '/api/base-convert', { value: '7' })));
    expect(statuses(keyless)).toStrictEqual({ 200: 5, 429: 10 });
    const key = await register(nodes[1]!, 'day@example.com');
    const auth = { authorization: `Bearer ${key}` };
    const rs = await Promise.all(Array.from({ length: 30 }, (_, i) => call(nodes[i % 3]!, 'POST', '/api/base-convert', { value: '7' }, auth)));
    expect(statuses(rs)).toStrictEqual({ 200: 12, 429: 18 });
    const body = (await rs.find((r) => r.status === 429)!.json()) as { error: { details: { window: string } } };
    expect(body.error.details.window).toBe('day');
  });

  it('registration: 5 per address per hour across all instances', async () => {
    const { nodes } = await cluster();
    const rs = await Promise.all(Array.from({ length: 9 }, (_, i) => call(nodes[i % 3]!, 'POST', '/api/auth/register', { email: `r${i}@example.com` })));
    expect(statuses(rs)).toStrictEqual({ 201: 5, 429: 4 });
  });

  it('short-link quota exact; links resolve on every instance and clicks add up in url_stats', async ({ signal }) => {
    const { nodes } = await cluster({ PLAN_KEYLESS: '5/50/3', PLAN_FREE: '100/1000/5' });
    const key = await register(nodes[0]!, 'links@example.com');
    const auth = { authorization: `Bearer ${key}` };
    const rs = await Promise.all(Array.from({ length: 20 }, (_, i) => call(nodes[i % 3]!, 'POST', '/api/shorten', { url: `https://example.com/${i}` }, auth)));
    expect(statuses(rs)).toStrictEqual({ 201: 5, 429: 15 });
    const code = ((await rs.find((r) => r.status === 201)!.json()) as { code: string }).code;
    const clicks = await Promise.all(Array.from({ length: 60 }, (_, i) => call(nodes[i % 3]!, 'GET', `/s/${code}`)));
    expect(statuses(clicks)).toStrictEqual({ 302: 60 });
    // Each instance writes its clicks every CLICK_FLUSH_MS: every instance comes to see all 60, and never more.
    for (const n of nodes) {
      const clicksOn = async () => ((await (await call(n, 'GET', `/api/shorten?code=${code}`, undefined, auth)).json()) as { clicks: number }).clicks;
      await until(async () => (await clicksOn()) >= 60, signal);
      expect(await clicksOn()).toBe(60);
    }
  });

  it('the task cap per (owner, agent) is exact under concurrency; a task is listed, done and deleted through any instance', async () => {
    const { nodes } = await cluster({ RATE_LIMITS: 'off' });
    // 495 tasks already there (this keyless client's owner, agent "capped"), then 15 simultaneous creates: exactly 5 fit.
    const tasks = tasksOf(nodes[0]!.services.store);
    const base = (await (await call(nodes[0]!, 'POST', '/api/cron-task', { agent_id: 'capped', name: 'seed', schedule: '@daily' })).json()) as { task: { task_id: string } };
    const seed = (await tasks.get(base.task.task_id))!;
    for (let i = 1; i < LIMITS.tasksPerAgent - 5; i++) await tasks.put({ ...seed, task_id: `seed${i}` } as TaskRecord);
    const rs = await Promise.all(Array.from({ length: 15 }, (_, i) => call(nodes[i % 3]!, 'POST', '/api/cron-task', { agent_id: 'capped', name: `t${i}`, schedule: '@hourly' })));
    expect(statuses(rs)).toStrictEqual({ 201: 5, 409: 10 });
    expect(seed.owner_agent).toMatch(/^ip:[0-9a-f]{32}\|capped$/);
    expect(await tasks.count({ index: 'agent_next', gte: `${seed.owner_agent}|`, lt: `${seed.owner_agent}}` })).toBe(LIMITS.tasksPerAgent);

    const created = (await (await call(nodes[0]!, 'POST', '/api/cron-task', { agent_id: 'roam', name: 'Roaming', schedule: '* * * * *' })).json()) as { task: { task_id: string } };
    const id = created.task.task_id;
    const listed = (await (await call(nodes[1]!, 'GET', '/api/cron-task?agent_id=roam')).json()) as { tasks: { task_id: string }[] };
    expect(listed.tasks.map((t) => t.task_id)).toStrictEqual([id]);
    const done = await call(nodes[2]!, 'POST', `/api/cron-task/${id}/done?agent_id=roam`, { status: 'done' });
    expect(done.status).toBe(200);
    const logs = (await (await call(nodes[0]!, 'GET', `/api/cron-task/${id}/logs?agent_id=roam`)).json()) as { logs: { status: string }[] };
    expect(logs.logs.map((l) => l.status)).toStrictEqual(['done']);
    expect((await call(nodes[1]!, 'DELETE', `/api/cron-task/${id}?agent_id=roam`)).status).toBe(200);
    expect((await call(nodes[2]!, 'GET', `/api/cron-task/${id}/logs?agent_id=roam`)).status).toBe(404);
  });

  it('keys set-plan and keys list work while instances run; the new plan applies on every instance at once', async () => {
    const { prefix, nodes } = await cluster();
    const key = await register(nodes[0]!, 'upgrade@example.com');
    const auth = { authorization: `Bearer ${key}` };
    expect((await call(nodes[1]!, 'POST', '/api/base-convert', { value: '1' }, auth)).headers.get('ratelimit-limit')).toBe('10');
    const config = testConfig(envFor(prefix));
    let out = '';
    const io = { out: (s: string) => void (out += s), err: (s: string) => void (out += s) };
    expect(await keysCommand(['set-plan', 'upgrade@example.com', 'pro'], config, io, {})).toBe(0);
    expect(await keysCommand(['list'], config, io, {})).toBe(0);
    expect(out).toMatch(/is now on the pro plan/);
    expect(out).toMatch(/pro\s+\S+\s+upgrade@example\.com/);
    for (const n of nodes) {
      const r = await call(n, 'POST', '/api/base-convert', { value: '1' }, auth);
      expect(r.status).toBe(200);
      expect(r.headers.get('ratelimit-policy')).toMatch(/"minute";q=60/);
    }
  });

  it('webhooks: exactly one POST per (occurrence, attempt) while every instance runs a scheduler', async () => {
    const prefix = target.prefix();
    const received: { id: string; attempt: number }[] = [];
    const perId = new Map<string, number>();
    const { createServer } = await import('node:http');
    const receiver = createServer((req, res) => {
      const id = String(req.headers['webhook-id']);
      const n = (perId.get(id) ?? 0) + 1;
      perId.set(id, n);
      received.push({ id, attempt: n });
      req.resume();
      // The first attempt of every message fails (503): each message gets exactly two POSTs.
      setTimeout(() => {
        res.statusCode = n === 1 ? 503 : 200;
        res.end();
      }, 20);
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
    const port = (receiver.address() as { port: number }).port;
    try {
      const clock = manualClock('2026-11-23T10:00:30Z');
      const svcs: Services[] = [];
      for (let i = 0; i < 3; i++) svcs.push(await createServices(testConfig(envFor(prefix, { RATE_LIMITS: 'off' })), { clock }));
      services.push(...svcs);
      const schedulers = svcs.map((s) => startScheduler(s, { timers: false, backoff: () => 0 }));
      const { cronTaskCreate } = await import('../src/tools/cron-tasks/cron-task-create.js');
      const { invokeTool } = await import('../src/invoke.js');
      const { toolContext } = await import('./harness.js');
      for (let i = 0; i < 12; i++) {
        await invokeTool(cronTaskCreate, { agent_id: 'hooks', name: `h${i}`, schedule: '* * * * *', callback_url: `http://127.0.0.1:${port}/hook` }, toolContext(svcs[i % 3]!));
      }
      // Two minutes of due checks, every scheduler at once, several times per step.
      for (const minute of [1, 2]) {
        clock.t = Date.parse(`2026-11-23T10:0${minute}:00Z`);
        for (let round = 0; round < 6; round++) {
          await Promise.all(schedulers.flatMap((s) => [s.tick(), s.tick()]));
          await Promise.all(schedulers.map((s) => s.settle()));
        }
      }
      // Occurrence 10:01 only (each task's next_run_at is the first missed minute; 10:02 collapses into it).
      const ids = [...perId.keys()];
      expect(ids).toHaveLength(12);
      for (const id of ids) expect(perId.get(id)).toBe(2);
      expect(received).toHaveLength(24);
    } finally {
      receiver.close();
    }
  });

  it('export file → import Redis → export → import file loses nothing', async () => {
    // A file store with some of everything.
    const dir = tempDir();
    const fileEnv = { DATA_DIR: dir, RATE_LIMITS: 'on', LOG_LEVEL: 'silent' };
    const src = await listenTestApp({ env: fileEnv });
    const key = await register(src, 'move@example.com');
    for (let i = 0; i < 5; i++) await call(src, 'POST', '/api/shorten', { url: `https://example.com/m${i}` }, { authorization: `Bearer ${key}` });
    await call(src, 'POST', '/api/cron-task', { agent_id: 'mover', name: 'Move me', schedule: '@daily' }, { authorization: `Bearer ${key}` });
    await src.close();
    const known = families.flatMap((f) => f.collections ?? []);
    const io = (stdin?: string) => {
      const chunks: Buffer[] = [];
      const stdout = new Writable({ write: (c: Buffer, _e, cb) => (chunks.push(c), cb()) });
      const input = new PassThrough();
      input.end(stdin ?? '');
      return { io: { stdin: input, stdout, err: () => {} }, text: () => Buffer.concat(chunks).toString() };
    };
    const file1 = path.join(tempDir(), 'one.jsonl');
    expect(await transferCommand('export', [file1], testConfig(fileEnv), { known })).toBe(0);
    const prefix = target.prefix();
    const redisConfig = testConfig(envFor(prefix));
    expect(await transferCommand('import', [file1], redisConfig, { known })).toBe(0);
    const file2 = path.join(tempDir(), 'two.jsonl');
    expect(await transferCommand('export', [file2], redisConfig, { known })).toBe(0);
    const dir2 = tempDir();
    expect(await transferCommand('import', [file2], testConfig({ DATA_DIR: dir2, LOG_LEVEL: 'silent' }), { known })).toBe(0);
    const file3 = path.join(tempDir(), 'three.jsonl');
    expect(await transferCommand('export', [file3], testConfig({ DATA_DIR: dir2, LOG_LEVEL: 'silent' }), { known })).toBe(0);
    const records = (f: string) =>
      fs
        .readFileSync(f, 'utf8')
        .split('\n')
        .filter((l) => l.includes('"record"'))
        .sort();
    expect(records(file1).length).toBeGreaterThanOrEqual(7);
    expect(records(file2)).toStrictEqual(records(file1));
    expect(records(file3)).toStrictEqual(records(file1));
    void io;
    // The imported data serves on Redis: the key works and its links are there (indexes built at start-up).
    const node = await listenTestApp({ env: envFor(prefix) });
    apps.push(node);
    const info = (await (await call(node, 'GET', '/api/auth/info', undefined, { authorization: `Bearer ${key}` })).json()) as { plan: string };
    expect(info.plan).toBe('free');
    const tasks = (await (await call(node, 'GET', '/api/cron-task?agent_id=mover', undefined, { authorization: `Bearer ${key}` })).json()) as { tasks: unknown[] };
    expect(tasks.tasks).toHaveLength(1);
  });
}

describeRedis('several instances on one Redis (issue 17)', () => {
  beforeAll(async () => {
    redis = await startRedis();
    target = { env: () => ({ REDIS_URL: redis.url }), prefix: () => redis.prefix() };
  });

  sharedChecks();

  it('Redis going away: 503 STORAGE_UNAVAILABLE with Retry-After while it is away (not held until it is back), /healthz 503 with the reason; back without a restart', async ({ signal }) => {
    const own = await startRedis();
    try {
      const node = await listenTestApp({ env: { REDIS_URL: own.url, REDIS_PREFIX: 'outage:', RATE_LIMITS: 'on', LOG_LEVEL: 'silent' } });
      apps.push(node);
      const created = (await (await call(node, 'POST', '/api/shorten', { url: 'https://example.com/kept' })).json()) as { code: string };
      await own.stop(true);
      // Redis starts again only after these answers: a call queued until it is back would never answer.
      const r = await call(node, 'POST', '/api/base-convert', { value: '1' });
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toBeTruthy();
      expect(((await r.json()) as { error: { code: string } }).error.code).toBe('STORAGE_UNAVAILABLE');
      expect((await call(node, 'GET', `/s/${created.code}`)).status).toBe(503);
      const h = await call(node, 'GET', '/healthz');
      expect(h.status).toBe(503);
      expect(((await h.json()) as { reason: string }).reason).toMatch(/Redis/);
      // Back (empty: this test Redis has no persistence), and the same process serves again.
      await own.start();
      await until(async () => (await call(node, 'GET', '/healthz')).status === 200, signal);
      expect((await call(node, 'POST', '/api/base-convert', { value: '1' })).status).toBe(200);
      expect((await call(node, 'POST', '/api/shorten', { url: 'https://example.com/after' })).status).toBe(201);
    } finally {
      await own.stop();
    }
  });

  it('a Redis that stops answering (SIGSTOP): 503 at the command timeout while it is still stopped, /healthz 503; answers again → recovery', async ({ signal }) => {
    const own = await startRedis();
    try {
      const node = await listenTestApp({ env: { REDIS_URL: own.url, REDIS_PREFIX: 'stall:', RATE_LIMITS: 'on', LOG_LEVEL: 'silent' } });
      apps.push(node);
      expect((await call(node, 'POST', '/api/base-convert', { value: '1' })).status).toBe(200);
      own.signal('SIGSTOP');
      // SIGCONT comes only after these answers: without the command timeout the call would never answer.
      const r = await call(node, 'POST', '/api/base-convert', { value: '1' });
      expect(r.status).toBe(503);
      const h = await call(node, 'GET', '/healthz');
      expect(h.status).toBe(503);
      expect(((await h.json()) as { reason: string }).reason).toMatch(/does not answer/);
      own.signal('SIGCONT');
      await until(async () => (await call(node, 'GET', '/healthz')).status === 200, signal);
      expect((await call(node, 'POST', '/api/base-convert', { value: '1' })).status).toBe(200);
    } finally {
      own.signal('SIGCONT');
      await own.stop();
    }
  });

  it('with AOF on, what was acknowledged survives kill -9 of Redis; the instance serves it again without a restart', async ({ signal }) => {
    const own = await startRedis(['--appendonly', 'yes', '--appendfsync', 'always']);
    try {
      const node = await listenTestApp({ env: { REDIS_URL: own.url, REDIS_PREFIX: 'aof:', RATE_LIMITS: 'off', LOG_LEVEL: 'silent' } });
      apps.push(node);
      const made = (await (await call(node, 'POST', '/api/shorten', { url: 'https://example.com/durable' })).json()) as { code: string };
      await call(node, 'GET', `/s/${made.code}`);
      await own.stop(true);
      await own.start();
      await until(async () => (await call(node, 'GET', '/healthz')).status === 200, signal);
      const r = await call(node, 'GET', `/s/${made.code}`);
      expect(r.status).toBe(302);
      expect(r.headers.get('location')).toBe('https://example.com/durable');
      const stats = (await (await call(node, 'GET', `/api/shorten?code=${made.code}`)).json()) as { clicks: number };
      expect(stats.clicks).toBe(2);
    } finally {
      await own.stop();
    }
  });

  it('start-up checks: unreachable → a clear message and exit 1 (no endless retry)', async ({ signal }) => {
    // No timeout of its own: a server that kept retrying would outlive the test's timeout, whose
    // signal then kills it.
    const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = execFile(
        process.execPath,
        ['--import', 'tsx', 'src/main.ts', 'serve'],
        { cwd: path.join(import.meta.dirname, '..'), env: { ...process.env, PORT: '0', REDIS_URL: `unix://${path.join(tempDir(), 'nothing.sock')}`, LOG_LEVEL: 'warn' }, signal },
        (_err, _out, stderr) => resolve({ code: child.exitCode, stderr }),
      );
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot reach Redis at unix:.*nothing\.sock \(REDIS_URL\)/);
  });

  it('start-up checks in the adapter: maxmemory-policy other than noeviction, persistence off', async () => {
    const evicting = await startRedis(['--maxmemory-policy', 'allkeys-lru']);
    const lines: string[] = [];
    const log: Logger = { debug: () => {}, info: () => {}, warn: (m) => void lines.push(m), error: (m) => void lines.push(m) };
    try {
      await expect(openRedisStore({ url: evicting.url, log })).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.stringMatching(/maxmemory-policy allkeys-lru/) });
      const allowed = await openRedisStore({ url: evicting.url, log, allowEviction: true });
      await allowed.close();
      expect(lines.filter((l) => /persistence off/.test(l))).toHaveLength(1);
    } finally {
      await evicting.stop();
    }
  });
});

describeRedis('several instances on a Redis Cluster: three masters, three replicas (issue 37)', () => {
  let testCluster: TestCluster;
  beforeAll(async () => {
    testCluster = await startRedisCluster();
    target = { env: () => testCluster.env(), prefix: () => `cl${++prefixes}:` };
  }, 120_000);
  afterAll(async () => {
    for (const a of apps.splice(0)) await a.close().catch(() => {});
    await testCluster?.stop();
  });

  sharedChecks();

  /** Keys under `prefix` on each master now (SCAN of that node), e.g. of one collection's shards. */
  async function keysPerMaster(match: string): Promise<number[]> {
    const out: number[] = [];
    for (const m of await testCluster.masters()) {
      let cursor = '0';
      let n = 0;
      do {
        const [next, keys] = (await m.command('SCAN', cursor, 'MATCH', match, 'COUNT', 1000)) as [string, string[]];
        cursor = next;
        n += keys.length;
      } while (cursor !== '0');
      out.push(n);
    }
    return out;
  }

  async function shorten(node: ListeningApp, auth: Record<string, string>, url: string): Promise<Response> {
    return call(node, 'POST', '/api/shorten', { url }, auth);
  }

  it('a collection spreads over every master: 60 links, 16 shards, each master holds some', async () => {
    const { prefix, nodes } = await cluster({ PLAN_FREE: '1000/100000/1000' });
    const key = await register(nodes[0]!, 'spread@example.com');
    const auth = { authorization: `Bearer ${key}` };
    const rs = await Promise.all(Array.from({ length: 60 }, (_, i) => shorten(nodes[i % 3]!, auth, `https://example.com/spread/${i}`)));
    expect(statuses(rs)).toStrictEqual({ 201: 60 });
    const perMaster = await keysPerMaster(`${prefix}{links:*}:data`);
    expect(perMaster).toHaveLength(3);
    for (const n of perMaster) expect(n).toBeGreaterThan(0);
    // Every shard's records are there once: the per-shard counts add up to the links made.
    let total = 0;
    for (const m of await testCluster.masters()) {
      let cursor = '0';
      do {
        const [next, keys] = (await m.command('SCAN', cursor, 'MATCH', `${prefix}{links:*}:data`, 'COUNT', 1000)) as [string, string[]];
        cursor = next;
        for (const k of keys) total += Number(await m.command('HLEN', k));
      } while (cursor !== '0');
    }
    expect(total).toBe(60);
    // The owner's list merges the shards: pages of 25 through another instance give all 60 once.
    const made = await Promise.all(rs.map(async (r) => ((await r.json()) as { code: string }).code));
    const listed: string[] = [];
    let cursor: string | null = null;
    do {
      const page = (await (await call(nodes[2]!, 'GET', `/api/links?limit=25${cursor ? `&cursor=${cursor}` : ''}`, undefined, auth)).json()) as { links: { code: string }[]; nextCursor: string | null };
      listed.push(...page.links.map((l) => l.code));
      cursor = page.nextCursor;
    } while (cursor);
    expect(listed).toHaveLength(60);
    expect([...listed].sort()).toStrictEqual([...made].sort());
    // The index check walks every shard on its master (each script in its shard's slot): all in step.
    let out = '';
    const io = { out: (s: string) => void (out += s), err: (s: string) => void (out += s) };
    expect(await checkIndexesCommand([], testConfig(envFor(prefix)), STORED_COLLECTIONS, io)).toBe(0);
    expect(out).toContain('links.ownerTime: 60 entries, 60 records: 0 stale, 0 wrong, 0 missing\n');
    expect(out).toContain('api_keys.key_hash: 1 entries, 1 records: 0 stale, 0 wrong, 0 missing\n');
  });

  it('a manual failover of one master mid-load: calls fail at most as 503 while it switches, every acknowledged link is kept and resolves everywhere', async ({ signal }) => {
    const { nodes } = await cluster({ PLAN_FREE: '1000/100000/1000' });
    const key = await register(nodes[0]!, 'failover@example.com');
    const auth = { authorization: `Bearer ${key}` };
    const made: string[] = [];
    const seen: Record<number, number> = {};
    let stop = false;
    const load = (async () => {
      for (let i = 0; !stop; i++) {
        const r = await shorten(nodes[i % 3]!, auth, `https://example.com/fo/${i}`);
        seen[r.status] = (seen[r.status] ?? 0) + 1;
        if (r.status === 201) made.push(((await r.json()) as { code: string }).code);
        else await r.body?.cancel();
      }
    })();
    await until(async () => made.length >= 20, signal);
    const [first] = await testCluster.masters();
    await testCluster.failover(first!);
    const before = made.length;
    await until(async () => made.length >= before + 20, signal);
    stop = true;
    await load;
    expect(Object.keys(seen).filter((s) => s !== '201' && s !== '503')).toStrictEqual([]);
    for (const code of made) {
      const r = await call(nodes[made.indexOf(code) % 3]!, 'GET', `/s/${code}`);
      expect(r.status).toBe(302);
    }
    expect(new Set(made).size).toBe(made.length);
  });

  it('an import across a master failover: every batch lands (batches sent again on MOVED/TRYAGAIN/CLUSTERDOWN), none twice', async () => {
    const store = await openRedisStore({ topology: { kind: 'cluster', nodes: testCluster.nodes.map((n) => ({ host: n.host, port: n.port })) }, prefix: target.prefix(), log: createLogger('silent') });
    try {
      const masters = await testCluster.masters();
      const switching = testCluster.failover(masters[1]!);
      let done = false;
      void switching.then(() => (done = true), () => (done = true));
      let rounds = 0;
      // Batches until the switch is over, and one after it.
      for (let last = false; !last; rounds++) {
        last = done;
        await store.putMany(ITEMS, Array.from({ length: 2000 }, (_, i) => ({ id: `r${rounds}-${i}`, owner: `o${i % 5}`, n: i })));
      }
      await switching;
      expect(rounds).toBeGreaterThanOrEqual(2);
      expect(await store.collection(ITEMS).count()).toBe(rounds * 2000);
      expect(await store.collection(ITEMS).count({ index: 'owner', eq: 'o3' })).toBe(rounds * 400);
    } finally {
      await store.close();
    }
  });
});
