/**
 * Issue 33 over real HTTP, on the file store and on a real Redis: private keyless tasks, and the
 * tools that steer a task (update, pause/resume, run now) over REST and MCP.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../src/core/clock.js';
import { listenTestApp, mcpError, type ListeningApp } from './harness.js';
import { describeRedis, startRedis, type TestRedis } from './redis.js';

const T0 = Date.parse('2026-03-02T08:30:00.000Z');
type Json = Record<string, any>;

function steerSuite(env: () => Record<string, string>): void {
  const clock = manualClock(T0);
  const apps: ListeningApp[] = [];
  afterEach(async () => {
    clock.t = T0;
    for (const a of apps.splice(0)) await a.close();
  });
  async function app(): Promise<ListeningApp> {
    const a = await listenTestApp({ env: { TRUSTED_PROXIES: '127.0.0.1', ...env() }, overrides: { clock } });
    apps.push(a);
    return a;
  }
  /** A keyless REST call from client address `ip` (behind the trusted loopback proxy). */
  const rest = async (a: ListeningApp, ip: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> => {
    const headers: Record<string, string> = { 'x-forwarded-for': ip };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const r = await fetch(`${a.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: r.status, body: (await r.json()) as Json };
  };

  it('two keyless callers on different addresses cannot reach each other’s tasks (REST and MCP)', async () => {
    const a = await app();
    const mine = await rest(a, '203.0.113.1', 'POST', '/api/cron-task', { name: 'mine', schedule: '* * * * *', callback_url: 'https://hooks.example.com/x?token=secret' });
    expect(mine.status).toBe(201);
    const named = await rest(a, '203.0.113.1', 'POST', '/api/cron-task', { agent_id: 'bot', name: 'named', schedule: '* * * * *' });
    const ids = [mine.body.task.task_id as string, named.body.task.task_id as string];
    expect(mine.body.task.agent_id).toBe('default');
    clock.t = T0 + 120_000;
    // The same client (same address) keeps the published shape: agent "default" by default.
    expect((await rest(a, '203.0.113.1', 'GET', '/api/cron-task?due=true')).body.count).toBe(1);
    expect((await rest(a, '203.0.113.1', 'GET', '/api/cron-task?agent_id=bot')).body.count).toBe(1);
    for (const [agent, id] of [['default', ids[0]!], ['bot', ids[1]!]] as const) {
      for (const [method, path, body] of [
        ['POST', `/api/cron-task/${id}/done?agent_id=${agent}`, {}],
        ['GET', `/api/cron-task/${id}/logs?agent_id=${agent}`, undefined],
        ['DELETE', `/api/cron-task/${id}?agent_id=${agent}`, undefined],
      ] as const) {
        expect([path, (await rest(a, '198.51.100.7', method, path, body)).status]).toStrictEqual([path, 404]);
      }
      expect((await rest(a, '198.51.100.7', 'GET', `/api/cron-task?agent_id=${agent}`)).body).toStrictEqual({ success: true, agent_id: agent, tasks: [], count: 0 });
      expect((await rest(a, '198.51.100.7', 'GET', `/api/cron-task/logs?agent_id=${agent}`)).body.logs).toStrictEqual([]);
    }
    // MCP over HTTP from the other address: nothing either.
    const other = await a.httpClient({ 'x-forwarded-for': '198.51.100.7' });
    const listed = await other.callTool({ name: 'cron_task_list', arguments: {} });
    expect(listed.structuredContent).toStrictEqual({ agent_id: 'default', tasks: [], count: 0 });
    const done = await other.callTool({ name: 'cron_task_done', arguments: { task_id: ids[0] } });
    expect(mcpError(done)).toMatchObject({ code: 'NOT_FOUND' });
    // …and from the owner's address, MCP sees the task.
    const owner = await a.httpClient({ 'x-forwarded-for': '203.0.113.1' });
    expect(((await owner.callTool({ name: 'cron_task_list', arguments: {} })).structuredContent as Json).tasks.map((t: Json) => t.task_id)).toStrictEqual([ids[0]]);
    // One IPv6 client is its /64 (the address its calls are counted under), as for rate limits.
    const v6 = await rest(a, '2001:db8:1:2::1', 'POST', '/api/cron-task', { name: 'v6', schedule: '@daily' });
    expect((await rest(a, '2001:db8:1:2::99', 'GET', '/api/cron-task')).body.tasks.map((t: Json) => t.task_id)).toStrictEqual([v6.body.task.task_id]);
    expect((await rest(a, '2001:db8:1:3::1', 'GET', '/api/cron-task')).body.count).toBe(0);
  });
}

describe('cron task steering on the file store', () => {
  steerSuite(() => ({}));
});

describeRedis('cron task steering on Redis', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });
  steerSuite(() => ({ REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix() }));
});
