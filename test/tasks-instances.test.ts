/**
 * Tasks across processes (docs/tasks.md): kill -9 of the instance running a task → the task ends
 * `failed` within the bound (at once after a restart on the embedded store; after the lease with
 * Redis); with Redis, a task created on one instance is polled and cancelled on another.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../src/core/clock.js';
import { tempDir, startTestApp, type TestApp } from './harness.js';
import { startSlowSite, type SlowSite } from './fixtures/slow-site.js';
import { describeRedis, startRedis, type TestRedis } from './redis.js';
import { killServerProcesses, startServerProcess, type ServerProcess } from './server-process.js';

let site: SlowSite;
beforeAll(async () => {
  site = await startSlowSite();
});
afterAll(async () => {
  killServerProcesses();
  await site.close();
});

/** `devtoolbox serve` in its own process; resolves with its base URL once it listens. */
function startServer(env: Record<string, string>): Promise<ServerProcess> {
  return startServerProcess({ RATE_LIMITS: 'off', FETCH_ALLOW_PRIVATE: 'true', WORKERS: '0', ...env });
}

async function ready(base: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const r = await fetch(`${base}/healthz`).catch(() => undefined);
    if (r?.ok) return;
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error(`${base} never became ready`);
}

const asyncCall = (base: string, tool: string, body: unknown) =>
  fetch(`${base}/api/${tool}`, { method: 'POST', headers: { 'content-type': 'application/json', prefer: 'respond-async' }, body: JSON.stringify(body) });

describe('kill -9 of the instance running a task (embedded store)', () => {
  it('after a restart on the same data dir the task reads failed at once, with a clear error', async () => {
    const dir = tempDir('dtb-tasks-crash-');
    // A lease far longer than the test: a task that reads failed was failed by the restart, not by the lease.
    const env = { DATA_DIR: dir, TASK_LEASE_MS: '600000' };
    const first = await startServer(env);
    await ready(first.base);
    const opened = site.hangsOpened;
    const res = await asyncCall(first.base, 'meta-extract', { url: `${site.url}/hang.html` });
    expect(res.status).toBe(202);
    const location = res.headers.get('location')!;
    for (let i = 0; i < 100 && site.hangsOpened === opened; i++) await new Promise((r) => setTimeout(r, 20));
    expect(((await (await fetch(`${first.base}${location}`)).json()) as { status: string }).status).toBe('working');
    await first.stop('SIGKILL');

    const second = await startServer(env);
    await ready(second.base);
    const body = (await (await fetch(`${second.base}${location}`)).json()) as Record<string, unknown>;
    expect(body).toMatchObject({ success: true, status: 'failed', error: { code: 'INTERNAL', details: { reason: 'instance_lost' } } });
    expect(body.statusMessage).toMatch(/stopped before it finished/);
    // A task that completed before the crash is still there after it.
    const done = await asyncCall(second.base, 'seo-check', { url: `${site.url}/slow.html?ms=100`, format: 'summary' });
    expect(done.status).toBe(202);
    const doneAt = done.headers.get('location')!;
    for (let i = 0; i < 100; i++) {
      const s = ((await (await fetch(`${second.base}${doneAt}`)).json()) as { status: string }).status;
      if (s === 'completed') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await second.stop('SIGKILL');
    const third = await startServer(env);
    await ready(third.base);
    expect(await (await fetch(`${third.base}${doneAt}`)).json()).toMatchObject({ status: 'completed', result: { success: true } });
    await third.stop('SIGKILL');
  }, 60_000);
});

describeRedis('tasks with Redis: any instance', () => {
  let redis: TestRedis;
  let a: TestApp | undefined;
  let b: TestApp | undefined;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => redis.stop(true));
  afterEach(async () => {
    await a?.close();
    await b?.close();
    a = b = undefined;
  });

  it('created on one instance, polled and cancelled on another; the cancel reaches the running instance', async () => {
    const prefix = redis.prefix();
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: prefix, TASK_LEASE_MS: '900' };
    [a, b] = await Promise.all([startTestApp({ env }), startTestApp({ env })]);
    const url = `${site.url}/slow.html?ms=400`;
    const res = await a.request('POST', '/api/seo-check', { url, format: 'summary' }, { prefer: 'respond-async' });
    expect(res.status).toBe(202);
    const location = res.headers.get('location')!;
    // Durable before the answer: the other instance finds it at once.
    expect(((await (await b.request('GET', location)).json()) as { status: string }).status).toBe('working');
    let body: Record<string, unknown> = {};
    for (let i = 0; i < 100; i++) {
      body = (await (await b.request('GET', location)).json()) as Record<string, unknown>;
      if (body.status === 'completed') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(body).toMatchObject({ status: 'completed', result: { success: true, url } });

    const closed = site.hangsClosed;
    const opened = site.hangsOpened;
    const hang = await a.request('POST', '/api/meta-extract', { url: `${site.url}/hang.html` }, { prefer: 'respond-async' });
    const hangAt = hang.headers.get('location')!;
    for (let i = 0; i < 100 && site.hangsOpened === opened; i++) await new Promise((r) => setTimeout(r, 20));
    const del = await b.request('DELETE', hangAt);
    expect(await del.json()).toMatchObject({ status: 'cancelled' });
    // Instance a learns it at its next heartbeat (every lease/3 = 300 ms) and aborts the fetch.
    for (let i = 0; i < 100 && site.hangsClosed === closed; i++) await new Promise((r) => setTimeout(r, 20));
    expect(site.hangsClosed).toBe(closed + 1);
    expect(((await (await a.request('GET', hangAt)).json()) as { status: string }).status).toBe('cancelled');
  }, 30_000);

  it('kill -9 of the instance running a task: another instance reports it failed once the lease runs out', async () => {
    const prefix = redis.prefix();
    // The lease is judged by the reading instance's clock: b reads a manual clock, so "once the
    // lease runs out" is a clock step, not a wait. The lease is far longer than the test's own run.
    const LEASE = 60_000;
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: prefix, TASK_LEASE_MS: String(LEASE), DATA_DIR: tempDir('dtb-tasks-redis-') };
    const server = await startServer(env);
    await ready(server.base);
    const clock = manualClock(Date.now());
    b = await startTestApp({ env: { REDIS_URL: redis.url, REDIS_PREFIX: prefix, TASK_LEASE_MS: String(LEASE) }, overrides: { clock } });
    const opened = site.hangsOpened;
    // The in-process app sees callers as 'local'; the spawned one as 127.0.0.1. Use one API key for both.
    const reg = await fetch(`${server.base}/api/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'tasks-kill@example.com' }) });
    const key = ((await reg.json()) as { api_key: string }).api_key;
    const auth = { authorization: `Bearer ${key}` };
    const res = await fetch(`${server.base}/api/meta-extract`, { method: 'POST', headers: { 'content-type': 'application/json', prefer: 'respond-async', ...auth }, body: JSON.stringify({ url: `${site.url}/hang.html` }) });
    expect(res.status).toBe(202);
    const location = res.headers.get('location')!;
    for (let i = 0; i < 100 && site.hangsOpened === opened; i++) await new Promise((r) => setTimeout(r, 20));
    expect(((await (await b.request('GET', location, undefined, auth)).json()) as { status: string }).status).toBe('working');
    await server.stop('SIGKILL');
    // Right after the kill the lease still runs (its last renewal came after the task started).
    clock.t = Date.now();
    expect(((await (await b.request('GET', location, undefined, auth)).json()) as { status: string }).status).toBe('working');
    // The bound: the lease after the last heartbeat, which came before the kill.
    clock.advance(LEASE);
    const body = (await (await b.request('GET', location, undefined, auth)).json()) as Record<string, unknown>;
    expect(body).toMatchObject({ status: 'failed', error: { details: { reason: 'instance_lost' } } });
  }, 30_000);
});
