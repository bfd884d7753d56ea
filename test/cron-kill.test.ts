/**
 * Issue 33: `kill -9` of the server holding a claim. A real server process claims a due task with
 * the shortest lease (10 s), is killed, and a new process on the same data dir (or the same Redis)
 * still ends the lease: the task is due again, logged `lease_expired`, the dead claim's run_id
 * refused and a new claim accepted. Both stores.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from './harness.js';
import { describeRedis, startRedis, type TestRedis } from './redis.js';
import { killServerProcesses, startServerProcess } from './server-process.js';

afterEach(killServerProcesses);

type Json = Record<string, any>;

async function call(base: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const r = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as Json };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function killSuite(env: () => Record<string, string>): void {
  it('the lease still expires after kill -9 and the task is due again (logged lease_expired)', async () => {
    const shared = { RATE_LIMITS: 'off', WORKERS: '0', ...env() };
    const first = await startServerProcess(shared);
    // A one-shot already due, max_retries 0: the case where losing the claimant must not lose the run.
    const created = await call(first.base, 'POST', '/api/cron-task', { agent_id: 'k', name: 'once', run_at: new Date(Date.now() - 60_000).toISOString() });
    expect(created.status).toBe(201);
    const id = created.body.task.task_id as string;
    const claim = await call(first.base, 'POST', `/api/cron-task/${id}/claim?agent_id=k`, { lease_seconds: 10 });
    expect(claim.status).toBe(200);
    expect(await first.stop('SIGKILL')).toBe('SIGKILL');

    const second = await startServerProcess(shared);
    // The claim survived the crash (its lease_expired entry below proves it); the new process's
    // scheduler applies the lapsed lease on its own: poll the logs (no read writes them).
    let logs: Json[] = [];
    while (!logs.some((l) => l.status === 'lease_expired')) {
      await sleep(250);
      logs = (await call(second.base, 'GET', `/api/cron-task/${id}/logs?agent_id=k`)).body.logs as Json[];
    }
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({ status: 'lease_expired', attempt: 1, started_at: new Date(Date.parse(claim.body.lease_expires_at as string) - 10_000).toISOString(), duration_ms: 10_000, created_at: claim.body.lease_expires_at });
    const due = await call(second.base, 'GET', '/api/cron-task?agent_id=k&due=true');
    expect(due.body.tasks.map((t: Json) => [t.task_id, t.status])).toStrictEqual([[id, 'due']]);
    expect((await call(second.base, 'POST', `/api/cron-task/${id}/done?agent_id=k`, { run_id: claim.body.run_id })).status).toBe(409);
    const again = await call(second.base, 'POST', `/api/cron-task/${id}/claim?agent_id=k`, { lease_seconds: 10 });
    expect(again.status).toBe(200);
    expect(again.body.run_id).not.toBe(claim.body.run_id);
    const done = await call(second.base, 'POST', `/api/cron-task/${id}/done?agent_id=k`, { run_id: again.body.run_id });
    expect(done.body.task).toMatchObject({ status: 'completed', last_status: 'done' });
    await second.stop();
  }, 90_000);
}

describe('kill -9 during a claim, file store', () => {
  killSuite(() => ({ DATA_DIR: tempDir('dtb-cron-kill-') }));
});

describeRedis('kill -9 during a claim, Redis', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });
  killSuite(() => ({ DATA_DIR: tempDir('dtb-cron-kill-'), REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix() }));
});
