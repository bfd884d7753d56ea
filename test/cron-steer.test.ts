/**
 * Issue 33 over real HTTP, on the file store and on a real Redis: private keyless tasks, and the
 * tools that steer a task (update, pause/resume, run now) over REST and MCP.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../src/core/clock.js';
import { invokeTool } from '../src/invoke.js';
import type { AnyTool } from '../src/registry.js';
import { closeServices } from '../src/services.js';
import { cronTaskClaim } from '../src/tools/cron-tasks/cron-task-claim.js';
import { cronTaskCreate } from '../src/tools/cron-tasks/cron-task-create.js';
import { cronTaskList } from '../src/tools/cron-tasks/cron-task-list.js';
import { cronTaskLogs } from '../src/tools/cron-tasks/cron-task-logs.js';
import { cronTaskDone } from '../src/tools/cron-tasks/cron-task-done.js';
import { cronTaskPause, cronTaskResume } from '../src/tools/cron-tasks/cron-task-pause.js';
import { cronTaskRunNow } from '../src/tools/cron-tasks/cron-task-run-now.js';
import { startScheduler } from '../src/tools/cron-tasks/scheduler.js';
import { listenTestApp, mcpError, testServices, toolContext, type ListeningApp } from './harness.js';
import { describeRedis, startRedis, type TestRedis } from './redis.js';
import { jsonWithoutRequestId } from './request-ids.js';

const T0 = Date.parse('2026-03-02T08:30:00.000Z');
type Json = Record<string, any>;

/** A loopback webhook receiver that answers 200 and keeps the JSON bodies. */
async function receiver(): Promise<{ url: string; bodies: Json[]; close(): Promise<void> }> {
  const bodies: Json[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json);
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    bodies,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

/** `instances`: how many servers may share one store (Redis: several; the file store: one process). */
function steerSuite(env: () => Record<string, string>, instances: number): void {
  const clock = manualClock(T0);
  const apps: ListeningApp[] = [];
  afterEach(async () => {
    clock.t = T0;
    for (const a of apps.splice(0)) await a.close();
  });
  async function app(shared = env()): Promise<ListeningApp> {
    const a = await listenTestApp({ env: { TRUSTED_PROXIES: '127.0.0.1', ...shared }, overrides: { clock } });
    apps.push(a);
    return a;
  }
  /** A keyless REST call from client address `ip` (behind the trusted loopback proxy). */
  const rest = async (a: ListeningApp, ip: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> => {
    const headers: Record<string, string> = { 'x-forwarded-for': ip };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const r = await fetch(`${a.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: r.status, body: (await jsonWithoutRequestId(r)) as Json };
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

  /** A keyless caller on one address, for the steering tests. */
  const me = (a: ListeningApp) => (method: string, path: string, body?: unknown) => rest(a, '203.0.113.9', method, path, body);
  const at = (t: string) => (clock.t = Date.parse(t));
  /**
   * A service whose scheduler the test drives, and a webhook receiver: `call` invokes a tool,
   * `tick(t)` moves the clock to t, ticks and waits for the deliveries. Closed after `run`.
   */
  async function withScheduler(run: (d: { rx: Awaited<ReturnType<typeof receiver>>; scheduler: ReturnType<typeof startScheduler>; call: (tool: AnyTool, input: Json) => Promise<Json>; tick: (t: string) => Promise<void> }) => Promise<void>): Promise<void> {
    const services = await testServices(env(), { clock });
    const rx = await receiver();
    try {
      const scheduler = startScheduler(services, { timers: false });
      const call = async (tool: AnyTool, input: Json) => (await invokeTool(tool, input, toolContext(services))).json as Json;
      const tick = async (t: string) => {
        at(t);
        await scheduler.tick();
        await scheduler.settle();
      };
      await run({ rx, scheduler, call, tick });
    } finally {
      await closeServices(services);
      await rx.close();
    }
  }

  it('cron_task_update changes fields in place; null clears; a new schedule or zone recomputes next_run_at DST-correctly', async () => {
    const call = me(await app());
    const created = await call('POST', '/api/cron-task', { agent_id: 'up', name: 'old', schedule: '0 9 * * *', description: 'd', tags: ['t'], max_retries: 2 });
    const id = created.body.task.task_id as string;
    const u1 = await call('PATCH', `/api/cron-task/${id}?agent_id=up`, { name: ' new ', description: null, tags: null, max_retries: null });
    expect(u1).toStrictEqual({ status: 200, body: { success: true, task: { ...created.body.task, name: 'new', description: '', tags: [], max_retries: 0 } } });
    // 28 March 2026, the eve of the EU spring-forward (02:00 → 03:00 on the 29th in Paris).
    at('2026-03-28T12:00:00.000Z');
    const paris = await call('PATCH', `/api/cron-task/${id}?agent_id=up`, { schedule: '30 2 * * *', timezone: 'Europe/Paris' });
    expect(paris.body.task).toMatchObject({ schedule: '30 2 * * *', timezone: 'Europe/Paris', next_run_at: '2026-03-29T01:30:00.000Z', status: 'scheduled', updated_at: '2026-03-28T12:00:00.000Z' });
    // New York is already on EDT (since 8 March): 02:30 − 4 h.
    expect((await call('PATCH', `/api/cron-task/${id}?agent_id=up`, { timezone: 'America/New_York' })).body.task.next_run_at).toBe('2026-03-29T06:30:00.000Z');
    expect((await call('PATCH', `/api/cron-task/${id}?agent_id=up`, { timezone: null })).body.task).toMatchObject({ timezone: 'UTC', next_run_at: '2026-03-29T02:30:00.000Z' });
    // Autumn: 25 October 2026, 02:30 happens twice in Paris; it runs once, at the first (CEST, +02:00).
    at('2026-10-24T12:00:00.000Z');
    expect((await call('PATCH', `/api/cron-task/${id}?agent_id=up`, { timezone: 'Europe/Paris' })).body.task.next_run_at).toBe('2026-10-25T00:30:00.000Z');
    // A new callback_url gets a new secret, shown once; the same URL again gets none; null clears it.
    const hooked = await call('PATCH', `/api/cron-task/${id}?agent_id=up`, { callback_url: 'https://hooks.example.com/a' });
    expect(hooked.body.task).toMatchObject({ callback_url: 'https://hooks.example.com/a', callback_secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/) });
    const again = await call('PATCH', `/api/cron-task/${id}?agent_id=up`, { callback_url: 'https://hooks.example.com/a' });
    expect(again.body.task.callback_secret).toBeUndefined();
    const other = await call('PATCH', `/api/cron-task/${id}?agent_id=up`, { callback_url: 'https://hooks.example.com/b' });
    expect(other.body.task.callback_secret).not.toBe(hooked.body.task.callback_secret);
    expect((await call('PATCH', `/api/cron-task/${id}?agent_id=up`, { callback_url: null })).body.task).toMatchObject({ callback_url: null });
    expect((await call('GET', '/api/cron-task?agent_id=up')).body.tasks).toStrictEqual([
      { ...created.body.task, name: 'new', description: '', tags: [], max_retries: 0, schedule: '30 2 * * *', timezone: 'Europe/Paris', next_run_at: '2026-10-25T00:30:00.000Z', updated_at: '2026-10-24T12:00:00.000Z' },
    ]);
    // Validation as create; never a 500.
    const bad: Array<[unknown, number, string]> = [
      [{ schedule: '0 9 * * *', run_at: '2026-11-01T00:00:00Z' }, 400, 'INVALID_INPUT'],
      [{ schedule: 'every day' }, 422, 'PARSE_ERROR'],
      [{ schedule: '0 0 31 2 *' }, 422, 'PARSE_ERROR'],
      [{ timezone: 'Nowhere/City' }, 400, 'INVALID_INPUT'],
      [{ max_retries: 11 }, 400, 'INVALID_INPUT'],
      [{ name: null }, 400, 'INVALID_INPUT'],
      [{ name: '' }, 400, 'INVALID_INPUT'],
      [{ run_at: 'tomorrow' }, 400, 'INVALID_INPUT'],
      [{ run_at: '9999-12-31T23:00:00-05:00' }, 400, 'INVALID_INPUT'],
      [{ callback_url: 'file:///etc/passwd' }, 400, 'URL_NOT_ALLOWED'],
      [{ tags: ['x'.repeat(51)] }, 400, 'INVALID_INPUT'],
    ];
    for (const [body, status, code] of bad) {
      const r = await call('PATCH', `/api/cron-task/${id}?agent_id=up`, body);
      expect([body, r.status, r.body.error?.code]).toStrictEqual([body, status, code]);
    }
    expect((await call('PATCH', `/api/cron-task/${id}?agent_id=other`, { name: 'x' })).status).toBe(404);
    expect((await call('PATCH', '/api/cron-task/task_nope?agent_id=up', { name: 'x' })).status).toBe(404);
  });

  it('pause: never due while paused, resume waits for the next fire time (no replay); paused_until resumes by itself', async () => {
    const call = me(await app());
    const { task } = (await call('POST', '/api/cron-task', { agent_id: 'p', name: 'hourly', schedule: '0 * * * *' })).body;
    const id = task.task_id as string;
    const paused = await call('POST', `/api/cron-task/${id}/pause?agent_id=p`, {});
    expect(paused).toStrictEqual({ status: 200, body: { success: true, task: { ...task, status: 'paused' } } });
    at('2026-03-02T10:30:00.000Z');
    expect((await call('GET', '/api/cron-task?agent_id=p&due=true')).body.count).toBe(0);
    expect((await call('GET', '/api/cron-task?agent_id=p')).body.tasks.map((t: Json) => t.status)).toStrictEqual(['paused']);
    expect((await call('POST', `/api/cron-task/${id}/run?agent_id=p`)).body.error).toMatchObject({ code: 'CONFLICT', details: { task_id: id, status: 'paused' } });
    const resumed = await call('POST', `/api/cron-task/${id}/resume?agent_id=p`);
    expect(resumed.body.task).toMatchObject({ status: 'scheduled', next_run_at: '2026-03-02T11:00:00.000Z', retry_count: 0, updated_at: '2026-03-02T10:30:00.000Z' });
    // Resuming a task that is not paused changes nothing.
    expect((await call('POST', `/api/cron-task/${id}/resume?agent_id=p`)).body.task).toStrictEqual(resumed.body.task);

    const timed = await call('POST', `/api/cron-task/${id}/pause?agent_id=p`, { paused_until: '2026-03-02T13:15:00+01:00' });
    expect(timed.body.task).toMatchObject({ status: 'paused', paused_until: '2026-03-02T12:15:00.000Z', next_run_at: '2026-03-02T13:00:00.000Z' });
    at('2026-03-02T12:14:59.999Z');
    expect((await call('GET', '/api/cron-task?agent_id=p')).body.tasks[0]).toMatchObject({ status: 'paused', paused_until: '2026-03-02T12:15:00.000Z' });
    at('2026-03-02T12:15:00.000Z');
    const after = (await call('GET', '/api/cron-task?agent_id=p')).body.tasks[0] as Json;
    expect(after.status).toBe('scheduled');
    expect(after.paused_until).toBeUndefined();
    at('2026-03-02T13:00:00.000Z');
    expect((await call('GET', '/api/cron-task?agent_id=p&due=true')).body.tasks.map((t: Json) => [t.task_id, t.status])).toStrictEqual([[id, 'due']]);
    for (const until of ['2026-03-02T12:00:00Z', 'soon', '9999-12-31T23:00:00-05:00']) {
      expect((await call('POST', `/api/cron-task/${id}/pause?agent_id=p`, { paused_until: until })).status).toBe(400);
    }
    expect((await call('POST', `/api/cron-task/${id}/pause?agent_id=q`, {})).status).toBe(404);
  });

  it('run now: due at once, once; the schedule is untouched', async () => {
    const call = me(await app());
    const { task } = (await call('POST', '/api/cron-task', { agent_id: 'r', name: 'yearly', schedule: '0 0 1 1 *' })).body;
    const id = task.task_id as string;
    at('2026-03-02T08:31:00.000Z');
    const ran = await call('POST', `/api/cron-task/${id}/run?agent_id=r`);
    expect(ran.body.task).toStrictEqual({ ...task, status: 'due', next_run_at: '2026-03-02T08:31:00.000Z', updated_at: '2026-03-02T08:31:00.000Z' });
    expect((await call('GET', '/api/cron-task?agent_id=r&due=true')).body.count).toBe(1);
    at('2026-03-02T08:32:00.000Z');
    // Already due: stays as it is.
    expect((await call('POST', `/api/cron-task/${id}/run?agent_id=r`)).body.task).toStrictEqual(ran.body.task);
    const done = await call('POST', `/api/cron-task/${id}/done?agent_id=r`);
    expect(done.body.task).toMatchObject({ status: 'scheduled', schedule: '0 0 1 1 *', next_run_at: '2027-01-01T00:00:00.000Z', run_count: 1 });
  });

  it('one-shot: run_at instead of schedule (exactly one); completed after done or the last failed retry, never due again', async () => {
    const call = me(await app());
    for (const body of [{ name: 'x' }, { name: 'x', schedule: '@daily', run_at: '2026-03-02T10:00:00Z' }, { name: 'x', run_at: '2026-03-02' }]) {
      expect((await call('POST', '/api/cron-task', body)).body.error?.code).toBe('INVALID_INPUT');
    }
    const created = await call('POST', '/api/cron-task', { agent_id: 'o', name: 'once', run_at: '2026-03-02T10:00:00+01:00', max_retries: 1 });
    expect(created.status).toBe(201);
    const task = created.body.task as Json;
    expect(task).toStrictEqual({
      task_id: task.task_id,
      agent_id: 'o',
      name: 'once',
      schedule: null,
      run_at: '2026-03-02T09:00:00.000Z',
      timezone: 'UTC',
      description: '',
      tags: [],
      callback_url: null,
      max_retries: 1,
      status: 'scheduled',
      retry_count: 0,
      run_count: 0,
      last_run_at: null,
      last_status: null,
      next_run_at: '2026-03-02T09:00:00.000Z',
      created_at: '2026-03-02T08:30:00.000Z',
      updated_at: '2026-03-02T08:30:00.000Z',
    });
    const id = task.task_id as string;
    at('2026-03-02T09:00:00.000Z');
    expect((await call('GET', '/api/cron-task?agent_id=o&due=true')).body.count).toBe(1);
    const f1 = await call('POST', `/api/cron-task/${id}/done?agent_id=o`, { status: 'failed' });
    expect([f1.body.task.status, f1.body.retry]).toStrictEqual(['retrying', { scheduled: true, attempt: 1, max_retries: 1 }]);
    const f2 = await call('POST', `/api/cron-task/${id}/done?agent_id=o`, { status: 'failed', message: 'gave up' });
    expect(f2.body.task).toMatchObject({ status: 'completed', last_status: 'failed', retry_count: 0, run_count: 0, next_run_at: '2026-03-02T09:00:00.000Z' });
    at('2027-03-02T09:00:00.000Z');
    expect((await call('GET', '/api/cron-task?agent_id=o&due=true')).body.count).toBe(0);
    expect((await call('GET', '/api/cron-task?agent_id=o')).body.tasks.map((t: Json) => t.status)).toStrictEqual(['completed']);
    for (const [method, path] of [['POST', `/api/cron-task/${id}/done?agent_id=o`], ['POST', `/api/cron-task/${id}/run?agent_id=o`], ['POST', `/api/cron-task/${id}/pause?agent_id=o`]]) {
      expect((await call(method!, path!, {})).body.error).toMatchObject({ code: 'CONFLICT', details: { task_id: id, status: 'completed' } });
    }
    // Kept for its logs until deleted.
    expect((await call('GET', `/api/cron-task/${id}/logs?agent_id=o`)).body.logs.map((l: Json) => l.status)).toStrictEqual(['failed', 'failed']);
    // A new run_at revives it; done completes it, this time as done.
    const revived = await call('PATCH', `/api/cron-task/${id}?agent_id=o`, { run_at: '2027-03-03T00:00:00Z' });
    expect(revived.body.task).toMatchObject({ status: 'scheduled', run_at: '2027-03-03T00:00:00.000Z', next_run_at: '2027-03-03T00:00:00.000Z' });
    const early = await call('POST', `/api/cron-task/${id}/done?agent_id=o`);
    expect(early.body.task).toMatchObject({ status: 'completed', last_status: 'done', run_count: 1 });
    // A schedule makes it recurring again.
    expect((await call('PATCH', `/api/cron-task/${id}?agent_id=o`, { schedule: '@daily' })).body.task).toMatchObject({ status: 'scheduled', schedule: '@daily', next_run_at: '2027-03-03T00:00:00.000Z' });
    expect((await call('GET', '/api/cron-task?agent_id=o')).body.tasks[0].run_at).toBeUndefined();
  });

  it('webhooks: a pause across a due time sends nothing, paused_until resumes them, run now sends one, a one-shot sends one', async () => {
    await withScheduler(async ({ rx, call, tick }) => {
    const sent = () => rx.bodies.map((b) => [b.type, b.data.task_id, b.data.scheduled_for]);
    const hourly = (await call(cronTaskCreate, { agent_id: 'w', name: 'h', schedule: '0 * * * *', callback_url: rx.url })).task as Json;
    await call(cronTaskPause, { task_id: hourly.task_id, agent_id: 'w' });
    for (const t of ['2026-03-02T09:00:00.000Z', '2026-03-02T10:00:00.000Z']) await tick(t);
    expect(rx.bodies).toStrictEqual([]);
    await call(cronTaskResume, { task_id: hourly.task_id, agent_id: 'w' });
    await tick('2026-03-02T10:00:30.000Z');
    expect(rx.bodies).toStrictEqual([]);
    await tick('2026-03-02T11:00:00.000Z');
    expect(sent()).toStrictEqual([['cron_task.due', hourly.task_id, '2026-03-02T11:00:00.000Z']]);
    await call(cronTaskDone, { task_id: hourly.task_id, agent_id: 'w' });
    // Timed: nothing at 12:00 and 13:00, the first after 13:30 is 14:00.
    await call(cronTaskPause, { task_id: hourly.task_id, agent_id: 'w', paused_until: '2026-03-02T13:30:00Z' });
    for (const t of ['2026-03-02T12:00:00.000Z', '2026-03-02T13:00:00.000Z', '2026-03-02T13:30:00.000Z']) await tick(t);
    expect(rx.bodies).toHaveLength(1);
    await tick('2026-03-02T14:00:00.000Z');
    expect(sent().slice(1)).toStrictEqual([['cron_task.due', hourly.task_id, '2026-03-02T14:00:00.000Z']]);
    await call(cronTaskDone, { task_id: hourly.task_id, agent_id: 'w' });
    // Run now: one webhook for now; ticking again sends nothing more.
    at('2026-03-02T14:10:00.000Z');
    await call(cronTaskRunNow, { task_id: hourly.task_id, agent_id: 'w' });
    await tick('2026-03-02T14:10:00.000Z');
    await tick('2026-03-02T14:11:00.000Z');
    expect(sent().slice(2)).toStrictEqual([['cron_task.due', hourly.task_id, '2026-03-02T14:10:00.000Z']]);
    // One-shot: one webhook, schedule null; none after it completed.
    const once = (await call(cronTaskCreate, { agent_id: 'w', name: 'o', run_at: '2026-03-02T15:00:00Z', callback_url: rx.url })).task as Json;
    await call(cronTaskDone, { task_id: hourly.task_id, agent_id: 'w' });
    await call(cronTaskPause, { task_id: hourly.task_id, agent_id: 'w' });
    await tick('2026-03-02T15:00:00.000Z');
    expect(rx.bodies.slice(3)).toStrictEqual([
      { type: 'cron_task.due', timestamp: '2026-03-02T15:00:00.000Z', data: { task_id: once.task_id, agent_id: 'w', name: 'o', schedule: null, scheduled_for: '2026-03-02T15:00:00.000Z' } },
    ]);
    await call(cronTaskDone, { task_id: once.task_id, agent_id: 'w' });
    await tick('2026-03-03T15:00:00.000Z');
    expect(rx.bodies).toHaveLength(4);
    });
  });

  it('a one-shot paused past its run_at: no webhook and no late notice while paused; due at the pause\'s end, its webhook then', async () => {
    await withScheduler(async ({ rx, scheduler, call, tick }) => {
    at('2026-03-02T08:00:00.000Z');
    const once = (await call(cronTaskCreate, { agent_id: 'w', name: 'o', run_at: '2026-03-02T09:00:00Z', callback_url: rx.url, grace_seconds: 60 })).task as Json;
    const paused = (await call(cronTaskPause, { task_id: once.task_id, agent_id: 'w', paused_until: '2026-03-03T09:00:00Z' })).task as Json;
    expect(paused.next_run_at).toBe('2026-03-03T09:00:00.000Z');
    // Before session 24 the webhook went out at 09:00 while paused, and the late notice owed kept it ready on every tick.
    for (const t of ['2026-03-02T09:00:00.000Z', '2026-03-02T09:05:00.000Z', '2026-03-02T20:00:00.000Z']) {
      await tick(t);
      const r = await scheduler.tick();
      expect(r).toStrictEqual({ queued: 0, started: 0 });
    }
    expect(rx.bodies).toStrictEqual([]);
    await tick('2026-03-03T09:00:00.000Z');
    expect(rx.bodies.map((b) => [b.type, b.data.scheduled_for])).toStrictEqual([['cron_task.due', '2026-03-03T09:00:00.000Z']]);
    });
  });

  it('claim: only a due task, one holder, due=true leaves it out; done with the run_id logs started_at and duration_ms; stale or foreign run_id → 409', async () => {
    const call = me(await app());
    const { task } = (await call('POST', '/api/cron-task', { agent_id: 'c', name: 'hourly', schedule: '0 * * * *', max_retries: 1 })).body;
    const id = task.task_id as string;
    expect((await call('POST', `/api/cron-task/${id}/claim?agent_id=c`, {})).body.error).toMatchObject({ code: 'CONFLICT', details: { task_id: id, status: 'scheduled', next_run_at: '2026-03-02T09:00:00.000Z' } });
    at('2026-03-02T09:00:05.000Z');
    const won = await call('POST', `/api/cron-task/${id}/claim?agent_id=c`, { lease_seconds: 60 });
    expect(won).toStrictEqual({
      status: 200,
      body: {
        success: true,
        run_id: expect.stringMatching(/^run_[A-Za-z0-9]{20}$/),
        lease_expires_at: '2026-03-02T09:01:05.000Z',
        task: { ...task, status: 'claimed', lease_expires_at: '2026-03-02T09:01:05.000Z', updated_at: '2026-03-02T09:00:05.000Z' },
      },
    });
    const runId = won.body.run_id as string;
    expect((await call('GET', '/api/cron-task?agent_id=c&due=true')).body.count).toBe(0);
    expect((await call('GET', '/api/cron-task?agent_id=c')).body.tasks.map((t: Json) => t.status)).toStrictEqual(['claimed']);
    expect((await call('POST', `/api/cron-task/${id}/claim?agent_id=c`, {})).body.error).toStrictEqual({
      code: 'CONFLICT',
      message: `Task "${id}" is already claimed until 2026-03-02T09:01:05.000Z`,
      details: { task_id: id, status: 'claimed', lease_expires_at: '2026-03-02T09:01:05.000Z' },
    });
    expect((await call('POST', `/api/cron-task/${id}/done?agent_id=c`, { run_id: 'run_someoneelse0000000' })).body.error).toMatchObject({ code: 'CONFLICT', details: { task_id: id, run_id: 'run_someoneelse0000000', lease_expires_at: '2026-03-02T09:01:05.000Z' } });
    at('2026-03-02T09:00:35.000Z');
    const done = await call('POST', `/api/cron-task/${id}/done?agent_id=c`, { run_id: runId, message: 'ok' });
    expect(done.body.log).toStrictEqual({ log_id: done.body.log.log_id, task_id: id, agent_id: 'c', status: 'done', message: 'ok', attempt: 1, created_at: '2026-03-02T09:00:35.000Z', started_at: '2026-03-02T09:00:05.000Z', duration_ms: 30_000 });
    expect(done.body.task).toMatchObject({ status: 'scheduled', next_run_at: '2026-03-02T10:00:00.000Z', run_count: 1 });
    expect(done.body.task.lease_expires_at).toBeUndefined();
    // The same run_id again: stale.
    expect((await call('POST', `/api/cron-task/${id}/done?agent_id=c`, { run_id: runId })).status).toBe(409);
    for (const lease_seconds of [9, 3601, 1.5, '60']) expect((await call('POST', `/api/cron-task/${id}/claim?agent_id=c`, { lease_seconds })).status).toBe(400);
    expect((await call('POST', `/api/cron-task/${id}/claim?agent_id=other`, {})).status).toBe(404);
  });

  it('a lease that ends without a report: due again, logged lease_expired once, counted as a failed attempt while retries are left', async () => {
    const call = me(await app());
    const { task } = (await call('POST', '/api/cron-task', { agent_id: 'x', name: 'hourly', schedule: '0 * * * *', max_retries: 1 })).body;
    const id = task.task_id as string;
    at('2026-03-02T09:00:00.000Z');
    const first = (await call('POST', `/api/cron-task/${id}/claim?agent_id=x`, { lease_seconds: 10 })).body.run_id as string;
    at('2026-03-02T09:00:10.000Z');
    expect((await call('GET', '/api/cron-task?agent_id=x&due=true')).body.tasks.map((t: Json) => [t.task_id, t.status, t.retry_count])).toStrictEqual([[id, 'retrying', 1]]);
    const second = (await call('POST', `/api/cron-task/${id}/claim?agent_id=x`, { lease_seconds: 10 })).body.run_id as string;
    expect(second).not.toBe(first);
    expect((await call('POST', `/api/cron-task/${id}/done?agent_id=x`, { run_id: first })).status).toBe(409);
    // The second lease ends too: no retry left to count, yet the run never happened — the same
    // occurrence is due again (retry_count stays at max_retries) until someone reports.
    at('2026-03-02T09:00:30.000Z');
    expect((await call('GET', '/api/cron-task?agent_id=x&due=true')).body.tasks.map((t: Json) => [t.task_id, t.status, t.retry_count, t.next_run_at])).toStrictEqual([
      [id, 'retrying', 1, '2026-03-02T09:00:00.000Z'],
    ]);
    const third = (await call('POST', `/api/cron-task/${id}/claim?agent_id=x`, { lease_seconds: 10 })).body.run_id as string;
    at('2026-03-02T09:00:35.000Z');
    const failed = await call('POST', `/api/cron-task/${id}/done?agent_id=x`, { run_id: third, status: 'failed' });
    // A failed report with no retry left ends the occurrence: the task moves on.
    expect(failed.body.task).toMatchObject({ status: 'scheduled', last_status: 'failed', retry_count: 0, next_run_at: '2026-03-02T10:00:00.000Z' });
    const logs = (await call('GET', `/api/cron-task/${id}/logs?agent_id=x`)).body.logs as Json[];
    expect(logs.map((l) => [l.status, l.attempt, l.started_at, l.duration_ms, l.created_at])).toStrictEqual([
      ['failed', 2, '2026-03-02T09:00:30.000Z', 5_000, '2026-03-02T09:00:35.000Z'],
      ['lease_expired', 2, '2026-03-02T09:00:10.000Z', 10_000, '2026-03-02T09:00:20.000Z'],
      ['lease_expired', 1, '2026-03-02T09:00:00.000Z', 10_000, '2026-03-02T09:00:10.000Z'],
    ]);
    expect(logs[1]!.message).toContain('no retry left to count: due again until a report');
    expect(logs[2]!.message).toContain('counted as a failed attempt');
  });

  it('pausing does not take a run in progress from its worker: its run_id still reports; a lease that ends while paused is logged', async () => {
    const call = me(await app());
    const { task } = (await call('POST', '/api/cron-task', { agent_id: 'pc', name: 'hourly', schedule: '0 * * * *', max_retries: 1 })).body;
    const id = task.task_id as string;
    at('2026-03-02T09:00:00.000Z');
    const c1 = (await call('POST', `/api/cron-task/${id}/claim?agent_id=pc`, { lease_seconds: 60 })).body.run_id as string;
    at('2026-03-02T09:00:05.000Z');
    expect((await call('POST', `/api/cron-task/${id}/pause?agent_id=pc`, {})).body.task).toMatchObject({ status: 'paused', lease_expires_at: '2026-03-02T09:01:00.000Z' });
    // Another worker cannot claim a paused task; the holder's report is recorded, and the task stays paused.
    expect((await call('POST', `/api/cron-task/${id}/claim?agent_id=pc`, {})).status).toBe(409);
    at('2026-03-02T09:00:20.000Z');
    const done = await call('POST', `/api/cron-task/${id}/done?agent_id=pc`, { run_id: c1, message: 'finished anyway' });
    expect(done.status).toBe(200);
    expect(done.body.log).toMatchObject({ status: 'done', started_at: '2026-03-02T09:00:00.000Z', duration_ms: 20_000 });
    expect(done.body.task).toMatchObject({ status: 'paused', run_count: 1 });
    // Resume, claim again, pause again, and let the lease end: logged once, the task stays paused.
    at('2026-03-02T09:59:00.000Z');
    await call('POST', `/api/cron-task/${id}/resume?agent_id=pc`, {});
    at('2026-03-02T10:00:00.000Z');
    expect((await call('POST', `/api/cron-task/${id}/claim?agent_id=pc`, { lease_seconds: 10 })).status).toBe(200);
    await call('POST', `/api/cron-task/${id}/pause?agent_id=pc`, {});
    at('2026-03-02T10:00:30.000Z');
    expect((await call('POST', `/api/cron-task/${id}/resume?agent_id=pc`, {})).body.task).toMatchObject({ status: 'scheduled', next_run_at: '2026-03-02T11:00:00.000Z' });
    const logs = (await call('GET', `/api/cron-task/${id}/logs?agent_id=pc`)).body.logs as Json[];
    expect(logs.map((l) => [l.status, l.started_at, l.duration_ms])).toStrictEqual([
      ['lease_expired', '2026-03-02T10:00:00.000Z', 10_000],
      ['done', '2026-03-02T09:00:00.000Z', 20_000],
    ]);
  });

  it('max_retries 0: a lapsed lease of a one-shot brings it back (never completed without a report)', async () => {
    const call = me(await app());
    const { task } = (await call('POST', '/api/cron-task', { agent_id: 'z', name: 'once', run_at: '2026-03-02T09:00:00Z' })).body;
    const id = task.task_id as string;
    expect(task.max_retries).toBe(0);
    at('2026-03-02T09:00:00.000Z');
    expect((await call('POST', `/api/cron-task/${id}/claim?agent_id=z`, { lease_seconds: 10 })).status).toBe(200);
    at('2026-03-02T09:00:10.000Z');
    expect((await call('GET', '/api/cron-task?agent_id=z&due=true')).body.tasks.map((t: Json) => [t.task_id, t.status, t.retry_count])).toStrictEqual([[id, 'due', 0]]);
    const again = await call('POST', `/api/cron-task/${id}/claim?agent_id=z`, { lease_seconds: 10 });
    expect(again.status).toBe(200);
    at('2026-03-02T09:00:12.000Z');
    const done = await call('POST', `/api/cron-task/${id}/done?agent_id=z`, { run_id: again.body.run_id });
    expect(done.body.task).toMatchObject({ status: 'completed', last_status: 'done', run_count: 1 });
    const logs = (await call('GET', `/api/cron-task/${id}/logs?agent_id=z`)).body.logs as Json[];
    expect(logs.map((l) => [l.status, l.attempt, l.duration_ms])).toStrictEqual([
      ['done', 1, 2_000],
      ['lease_expired', 1, 10_000],
    ]);
  });

  it(`50 simultaneous claims over ${instances} instance(s) → exactly one run_id, the others 409 naming its expiry`, async () => {
    const shared = env();
    const nodes: Array<ReturnType<typeof me>> = [];
    for (let i = 0; i < instances; i++) nodes.push(me(await app(shared)));
    const { task } = (await nodes[0]!('POST', '/api/cron-task', { agent_id: 'race', name: 'r', schedule: '0 * * * *' })).body;
    at('2026-03-02T09:00:00.000Z');
    const rs = await Promise.all(Array.from({ length: 50 }, (_, i) => nodes[i % instances]!('POST', `/api/cron-task/${task.task_id as string}/claim?agent_id=race`, { lease_seconds: 120 })));
    const won = rs.filter((r) => r.status === 200);
    expect(won).toHaveLength(1);
    expect(rs.filter((r) => r.status === 409).map((r) => r.body.error.details)).toStrictEqual(
      Array.from({ length: 49 }, () => ({ task_id: task.task_id, status: 'claimed', lease_expires_at: '2026-03-02T09:02:00.000Z' })),
    );
    for (const n of nodes) expect((await n('GET', '/api/cron-task?agent_id=race')).body.tasks[0]).toMatchObject({ status: 'claimed', lease_expires_at: won[0]!.body.lease_expires_at });
  });

  it('the scheduler applies a lapsed lease once (logged once, its retry webhook queued), whoever looks at the task', async () => {
    await withScheduler(async ({ rx, scheduler, call }) => {
    const t = (await call(cronTaskCreate, { agent_id: 's', name: 'h', schedule: '0 * * * *', callback_url: rx.url, max_retries: 2 })).task as Json;
    at('2026-03-02T09:00:00.000Z');
    await scheduler.tick();
    await scheduler.settle();
    await call(cronTaskClaim, { task_id: t.task_id, agent_id: 's', lease_seconds: 10 });
    at('2026-03-02T09:00:11.000Z');
    await scheduler.tick();
    await scheduler.settle();
    await scheduler.tick();
    expect((await call(cronTaskList, { agent_id: 's', due: true })).tasks.map((x: Json) => x.status)).toStrictEqual(['retrying']);
    await call(cronTaskClaim, { task_id: t.task_id, agent_id: 's' });
    const logs = (await call(cronTaskLogs, { task_id: t.task_id, agent_id: 's' })).logs as Json[];
    expect(logs.map((l) => l.status)).toStrictEqual(['webhook_ok', 'lease_expired', 'webhook_ok']);
    expect(rx.bodies.map((b) => b.data.scheduled_for)).toStrictEqual(['2026-03-02T09:00:00.000Z', '2026-03-02T09:00:00.000Z']);
    });
  });

  it('the steering tools over MCP (streamable HTTP, the SDK client)', async () => {
    const a = await app();
    const client = await a.httpClient({ 'x-forwarded-for': '203.0.113.9' });
    const sc = async (name: string, args: Json) => {
      const r = await client.callTool({ name, arguments: args });
      expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
      return (r.structuredContent as Json).task as Json;
    };
    const t = await sc('cron_task_create', { agent_id: 'm', name: 'm', run_at: '2026-03-02T12:00:00Z' });
    expect(await sc('cron_task_update', { task_id: t.task_id, agent_id: 'm', schedule: '*/30 * * * *', timezone: 'Asia/Kolkata' })).toMatchObject({ schedule: '*/30 * * * *', next_run_at: '2026-03-02T09:00:00.000Z' });
    expect(await sc('cron_task_pause', { task_id: t.task_id, agent_id: 'm' })).toMatchObject({ status: 'paused' });
    expect(mcpError(await client.callTool({ name: 'cron_task_run_now', arguments: { task_id: t.task_id, agent_id: 'm' } }))).toMatchObject({ code: 'CONFLICT' });
    expect(await sc('cron_task_resume', { task_id: t.task_id, agent_id: 'm' })).toMatchObject({ status: 'scheduled' });
    expect(await sc('cron_task_run_now', { task_id: t.task_id, agent_id: 'm' })).toMatchObject({ status: 'due', next_run_at: '2026-03-02T08:30:00.000Z' });
    // The REST caller on the same address sees the same task.
    expect((await me(a)('GET', '/api/cron-task?agent_id=m&due=true')).body.tasks.map((x: Json) => x.task_id)).toStrictEqual([t.task_id]);
  });
}

describe('cron task steering on the file store', () => {
  steerSuite(() => ({}), 1);
});

describeRedis('cron task steering on Redis', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });
  steerSuite(() => ({ REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix() }), 3);
});
