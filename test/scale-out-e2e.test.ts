/**
 * Issue 17 end to end: one Redis, three `devtoolbox serve` processes, requests spread
 * round-robin by the test, a loopback webhook receiver. Limits, links and clicks across the
 * processes; webhooks once per (occurrence, attempt) with three schedulers; `kill -9` of the
 * process holding an attempt → another takes it over after the lease, same webhook-id.
 */
import type { ChildProcess } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { setPlan } from '../src/auth/keys.js';
import { keysCommand } from '../src/keys-cli.js';
import { createLogger } from '../src/log.js';
import { clicksStored } from './links-clicks.js';
import { openRedisStore, type RedisStore } from '../src/state/redis/index.js';
import { TASKS } from '../src/tools/cron-tasks/model.js';
import { testConfig } from './harness.js';
import { describeRedis, startRedis, type TestRedis } from './redis.js';
import { startRedisCluster, type TestCluster } from './redis-topology.js';
import { killServerProcesses, startServerProcess } from './server-process.js';

let redis: TestRedis;
let cluster: TestCluster;
/** The variables that point a process at the state: REDIS_URL, or REDIS_CLUSTER_NODES (set by each describe). */
let backend: Record<string, string>;
let prefix: string;
let store: RedisStore;

interface Node {
  child: ChildProcess;
  base: string;
  pid: number;
}
let nodes: Node[] = [];

/** Hooks the receiver got: webhook-id per POST, in order, and when each came (ms since the epoch). */
const hooks: string[] = [];
const hookAt: number[] = [];
let hang = false;
const held: ServerResponse[] = [];
const receiver = createServer((req: IncomingMessage, res: ServerResponse) => {
  req.resume();
  req.on('end', () => {
    hooks.push(String(req.headers['webhook-id']));
    hookAt.push(Date.now());
    if (hang) held.push(res);
    else res.end('ok');
  });
});
let hookUrl = '';

function env(): Record<string, string> {
  return {
    ...backend,
    REDIS_PREFIX: prefix,
    RATE_LIMITS: 'on',
    FETCH_ALLOW_PRIVATE: 'true',
    // The attempt deadline bounds the lease (deadline + 5 s): a takeover within seconds.
    FETCH_TIMEOUT_MS: '2000',
    LOG_LEVEL: 'info',
    WORKERS: '0',
    PUBLIC_BASE_URL: 'http://short.test',
  };
}

async function startNode(): Promise<Node> {
  const { child, base } = await startServerProcess(env());
  return { child, base, pid: child.pid! };
}

let rr = 0;
/** The next live node, round-robin. */
function next(): Node {
  const live = nodes.filter((n) => n.child.exitCode === null && n.child.signalCode === null);
  return live[rr++ % live.length]!;
}

async function call(node: Node, method: string, p: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(node.base + p, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    redirect: 'manual',
  });
}

/** Polls until `ok`: the test's own timeout is the only bound (its signal ends the polling). */
async function until(what: string, ok: () => boolean | Promise<boolean>, signal: AbortSignal): Promise<void> {
  while (!(await ok())) {
    if (signal.aborted) throw new Error(`the test timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const MINUTE = 60_000;

const count = (rs: Response[]) => {
  const out: Record<number, number> = {};
  for (const r of rs) out[r.status] = (out[r.status] ?? 0) + 1;
  return out;
};

/** The end-to-end checks, on whichever deployment the describe started. */
function e2eChecks(): void {
  it('limits exact over three processes; links resolve everywhere and clicks add up', async ({ signal }) => {
    const reg = await call(next(), 'POST', '/api/auth/register', { email: 'e2e@example.com' });
    const key = ((await reg.json()) as { api_key: string }).api_key;
    const auth = { authorization: `Bearer ${key}` };
    const rs = await Promise.all(Array.from({ length: 45 }, () => call(next(), 'POST', '/api/base-convert', { value: 'ff', from: 'hex' }, auth)));
    expect(count(rs)).toStrictEqual({ 200: 10, 429: 35 });

    const made = await call(next(), 'POST', '/api/shorten', { url: 'https://example.com/e2e' });
    expect(made.status).toBe(201);
    const code = ((await made.json()) as { code: string }).code;
    const clicks = await Promise.all(Array.from({ length: 30 }, () => call(next(), 'GET', `/s/${code}`)));
    expect(count(clicks)).toStrictEqual({ 302: 30 });
    // Each instance writes its clicks every ANALYTICS_FLUSH_MS (not on every redirect): all 30 are
    // in Redis soon, never more, and then every instance reports them.
    const stored = async () => (await clicksStored(store, [code]))[0]!;
    await until('the clicks in Redis', async () => (await stored()) >= 30, signal);
    expect(await stored()).toBe(30);
    for (let i = 0; i < 3; i++) {
      const stats = (await (await call(next(), 'GET', `/api/shorten?code=${code}`)).json()) as { clicks: number };
      expect(stats.clicks).toBe(30);
    }
  });

  it('keyed calls from each process’s key cache (issue 37): exact over three processes, and a plan change applies to the next calls on all three', async () => {
    const reg = await call(next(), 'POST', '/api/auth/register', { email: 'e2e-cache@example.com' });
    const key = ((await reg.json()) as { api_key: string }).api_key;
    const auth = { authorization: `Bearer ${key}` };
    // One call on each process: each now holds the key record (free plan: 10 a minute).
    for (let i = 0; i < 3; i++) expect((await call(next(), 'POST', '/api/base-convert', { value: '1' }, auth)).headers.get('ratelimit-limit')).toBe('10');
    const free = await Promise.all(Array.from({ length: 45 }, () => call(next(), 'POST', '/api/base-convert', { value: '2' }, auth)));
    expect(count(free)).toStrictEqual({ 200: 7, 429: 38 });
    // Another process changes the plan (pro: 60 a minute): every process's cached record is stale.
    await setPlan(store, 'e2e-cache@example.com', 'pro');
    const pro = await Promise.all(Array.from({ length: 90 }, () => call(next(), 'POST', '/api/base-convert', { value: '3' }, auth)));
    expect(count(pro)).toStrictEqual({ 200: 50, 429: 40 });
    expect(new Set(pro.map((r) => r.headers.get('ratelimit-policy')))).toStrictEqual(new Set(['"minute";q=60;w=60, "day";q=5000;w=86400']));
  });

  it('webhooks: one POST per occurrence with three schedulers; kill -9 mid-attempt → taken over when the lease ends (before the next minute tick), same webhook-id', async ({ signal }) => {
    // A pro key (60/min) for the task calls, set while the servers run.
    const reg = await call(next(), 'POST', '/api/auth/register', { email: 'hooks@example.com' });
    const key = ((await reg.json()) as { api_key: string }).api_key;
    const quiet = { out: () => {}, err: () => {} };
    expect(await keysCommand(['set-plan', 'hooks@example.com', 'pro'], testConfig({ ...backend, REDIS_PREFIX: prefix }), quiet, {})).toBe(0);
    const auth = { authorization: `Bearer ${key}` };

    // Nine tasks, created round-robin; a failed report on each (round-robin) makes a webhook owed now
    // and wakes that process's scheduler: all three check the same due tasks.
    const ids: string[] = [];
    for (let i = 0; i < 9; i++) {
      const r = await call(next(), 'POST', '/api/cron-task', { agent_id: 'e2e', name: `hook ${i}`, schedule: '0 0 1 1 *', callback_url: hookUrl, max_retries: 3 }, auth);
      expect(r.status).toBe(201);
      ids.push(((await r.json()) as { task: { task_id: string } }).task.task_id);
    }
    await Promise.all(ids.map((id) => call(next(), 'POST', `/api/cron-task/${id}/done?agent_id=e2e`, { status: 'failed' }, auth)));
    await until('nine webhooks', () => hooks.length >= 9, signal);
    await new Promise((r) => setTimeout(r, 1500));
    expect(hooks).toHaveLength(9);
    expect(new Set(hooks).size).toBe(9);

    // The receiver now holds every request open: the attempt stays in flight on one process.
    hang = true;
    hooks.length = 0;
    hookAt.length = 0;
    // The minute tick would take the attempt over too: start it early in a minute, so that its
    // lease (2 s deadline + 5 s) ends well before the next one.
    if (Date.now() % MINUTE > 30_000) await new Promise((r) => setTimeout(r, MINUTE - (Date.now() % MINUTE) + 500));
    const r = await call(next(), 'POST', '/api/cron-task', { agent_id: 'e2e', name: 'killed mid-attempt', schedule: '0 0 1 1 *', callback_url: hookUrl, max_retries: 3 }, auth);
    const taskId = ((await r.json()) as { task: { task_id: string } }).task.task_id;
    await call(next(), 'POST', `/api/cron-task/${taskId}/done?agent_id=e2e`, { status: 'failed' }, auth);
    // The attempt of THIS task: a late retry of one of the nine above (its sender timed out on a
    // loaded machine) may reach the receiver first, so the id is matched against the task's own.
    let found: { id: string; lease_by?: string; lease_until?: number } | undefined;
    await until('the attempt in flight', async () => {
      const task = await store.collection(TASKS).get(taskId);
      found = task?.webhooks.find((w) => hooks.includes(w.id) && w.lease_by);
      return found !== undefined;
    }, signal);
    const firstId = found!.id;
    const holder = found!.lease_by!;
    const leaseUntil = found!.lease_until!;
    const pid = Number(holder.split(':')[1]);
    const victim = nodes.find((n) => n.pid === pid)!;
    expect(victim).toBeDefined();
    victim.child.kill('SIGKILL');
    await new Promise((res) => victim.child.once('exit', res));
    hang = false;
    for (const h of held.splice(0)) h.destroy();

    // After the lease (2 s deadline + 5 s from the claim), a survivor takes the attempt over: the
    // claim's signal made every instance arm a timer for the lease's end. The order of events
    // shows it: not before the lease ends, and before the minute tick that would also do it.
    await until('the takeover', () => hooks.filter((h) => h === firstId).length >= 2, signal);
    expect(hooks.filter((h) => h === firstId)).toHaveLength(2);
    const takeoverAt = hookAt[hooks.lastIndexOf(firstId)]!;
    const nextMinuteTick = Math.ceil((leaseUntil + 1) / MINUTE) * MINUTE;
    expect(takeoverAt, 'not before the lease ends').toBeGreaterThanOrEqual(leaseUntil);
    expect(takeoverAt, 'before the next minute tick').toBeLessThan(nextMinuteTick);
    await until('the outcome logged', async () => {
      const logs = (await (await call(next(), 'GET', `/api/cron-task/${taskId}/logs?agent_id=e2e`, undefined, auth)).json()) as { logs: { status: string }[] };
      return logs.logs.some((l) => l.status === 'webhook_ok');
    }, signal);
    const after = (await store.collection(TASKS).get(taskId))!;
    expect(after.webhooks).toStrictEqual([]);
  }, 120_000);

  it('MCP behind a round-robin balancer: tools/call on every instance, progress streamed over SSE', async () => {
    const reg = await call(next(), 'POST', '/api/auth/register', { email: 'mcp@example.com' });
    const key = ((await reg.json()) as { api_key: string }).api_key;
    const quiet = { out: () => {}, err: () => {} };
    expect(await keysCommand(['set-plan', 'mcp@example.com', 'pro'], testConfig({ ...backend, REDIS_PREFIX: prefix }), quiet, {})).toBe(0);
    const headers = { authorization: `Bearer ${key}`, accept: 'application/json, text/event-stream' };
    for (let i = 0; i < 6; i++) {
      const r = await call(next(), 'POST', '/mcp', { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'base_convert', arguments: { value: String(i + 2) } } }, headers);
      expect(r.status).toBe(200);
      const j = (await r.json()) as { result: { structuredContent: { dec: string } } };
      expect(j.result.structuredContent.dec).toBe(String(i + 2));
    }
    const r = await call(next(), 'POST', '/mcp', { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'url_shorten', arguments: { url: 'https://example.com/mcp' }, _meta: { progressToken: 'p' } } }, headers);
    expect(r.headers.get('content-type')).toContain('text/event-stream');
    const text = await r.text();
    const code = /"code\\?":\\?"([A-Za-z0-9]{7})/.exec(text)?.[1];
    expect(code).toBeDefined();
    // Created through one instance, followed through another.
    expect((await call(next(), 'GET', `/s/${code}`)).status).toBe(302);
  });
}

beforeAll(async () => {
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});
afterAll(() => {
  for (const r of held) r.destroy();
  receiver.close();
});

async function startAll(): Promise<void> {
  hooks.length = 0;
  hookAt.length = 0;
  hang = false;
  rr = 0;
  nodes = await Promise.all([startNode(), startNode(), startNode()]);
}

async function stopAll(): Promise<void> {
  killServerProcesses();
  for (const r of held.splice(0)) r.destroy();
  await store?.close();
}

describeRedis('three serve processes on one Redis (issue 17, end to end)', () => {
  beforeAll(async () => {
    redis = await startRedis();
    backend = { REDIS_URL: redis.url };
    prefix = redis.prefix();
    await startAll();
    store = await openRedisStore({ url: redis.url, prefix, log: createLogger('silent'), quiet: true });
  }, 60_000);
  afterAll(async () => {
    await stopAll();
    await redis?.stop();
  });

  e2eChecks();
});

describeRedis('three serve processes on a Redis Cluster, 3 masters + 3 replicas (issue 37, end to end)', () => {
  beforeAll(async () => {
    cluster = await startRedisCluster();
    backend = cluster.env();
    prefix = 'e2ec:';
    await startAll();
    store = await openRedisStore({ topology: { kind: 'cluster', nodes: cluster.nodes.map((n) => ({ host: n.host, port: n.port })) }, prefix, log: createLogger('silent'), quiet: true });
  }, 120_000);
  afterAll(async () => {
    await stopAll();
    await cluster?.stop();
  });

  e2eChecks();
});
