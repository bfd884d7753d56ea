/**
 * Issue 33, lateness: `grace_seconds` on create and update; a due (or retrying) task that nobody
 * claims or reports within it reads `status: "late"` (still listed by due=true), logs `late`
 * once per occurrence and, with a callback_url, gets exactly one signed `cron_task.late`
 * webhook — on the file store, and with three schedulers on one Redis. The scheduler runs with
 * timers off on an injected clock (each test drives `tick`); signatures are checked by hand with
 * node:crypto, per the Standard Webhooks spec, not with the sender's own code.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable, Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../src/core/clock.js';
import { invokeTool } from '../src/invoke.js';
import type { AnyTool } from '../src/registry.js';
import { closeServices, type Services } from '../src/services.js';
import { exportStore, importStore } from '../src/state/transfer.js';
import { cronTaskClaim } from '../src/tools/cron-tasks/cron-task-claim.js';
import { cronTaskCreate } from '../src/tools/cron-tasks/cron-task-create.js';
import { cronTaskDone } from '../src/tools/cron-tasks/cron-task-done.js';
import { cronTaskList } from '../src/tools/cron-tasks/cron-task-list.js';
import { cronTaskLogs } from '../src/tools/cron-tasks/cron-task-logs.js';
import { cronTaskPause, cronTaskResume } from '../src/tools/cron-tasks/cron-task-pause.js';
import { cronTaskUpdate } from '../src/tools/cron-tasks/cron-task-update.js';
import { startScheduler, type Scheduler } from '../src/tools/cron-tasks/scheduler.js';
import { LOGS, TASKS } from '../src/tools/cron-tasks/stored.js';
import { listenTestApp, tempDir, testServices, toolContext, type ListeningApp } from './harness.js';
import { describeRedis, startRedis, type TestRedis } from './redis.js';

type Json = Record<string, any>;
const T0 = Date.parse('2026-03-02T08:30:00.000Z');

interface Hit {
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A loopback receiver that answers 200 (or 503 to each message's first attempt, with `failFirst`) and keeps every request. */
async function receiver(failFirst = false): Promise<{ url: string; hits: Hit[]; close(): Promise<void> }> {
  const hits: Hit[] = [];
  const seen = new Set<string>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      hits.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const id = String(req.headers['webhook-id']);
      const first = !seen.has(id);
      seen.add(id);
      res.writeHead(failFirst && first ? 503 : 200).end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    hits,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

/** Standard Webhooks, by hand: v1,base64(HMAC-SHA256(base64-decoded secret, "{id}.{timestamp}.{body}")). */
function verified(secret: string, h: Hit): boolean {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${String(h.headers['webhook-id'])}.${String(h.headers['webhook-timestamp'])}.${h.body}`).digest();
  return String(h.headers['webhook-signature'])
    .split(' ')
    .some((s) => {
      const [v, sig] = s.split(',');
      const got = Buffer.from(sig ?? '', 'base64');
      return v === 'v1' && got.length === expected.length && timingSafeEqual(got, expected);
    });
}

function lateSuite(env: () => Record<string, string>, instances: number): void {
  const clock = manualClock(T0);
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    clock.t = T0;
    for (const c of cleanup.splice(0).reverse()) await c();
  });
  const at = (t: string) => (clock.t = Date.parse(t));

  /** `n` services on one store, each with its own scheduler (timers off), and a receiver. */
  async function setup(n = 1, failFirst = false) {
    const shared = env();
    const svcs: Services[] = [];
    for (let i = 0; i < n; i++) {
      const s = await testServices(shared, { clock });
      cleanup.push(() => closeServices(s));
      svcs.push(s);
    }
    const rx = await receiver(failFirst);
    cleanup.push(rx.close);
    const schedulers: Scheduler[] = svcs.map((s) => startScheduler(s, { timers: false, backoff: () => 0 }));
    const call = async (tool: AnyTool, input: Json, s = svcs[0]!) => (await invokeTool(tool, input, toolContext(s))).json as Json;
    /** Every scheduler checks at `t`, twice each, all at once; then the attempts they started end. */
    const tick = async (t: string) => {
      at(t);
      for (let round = 0; round < 2; round++) {
        await Promise.all(schedulers.flatMap((s) => [s.tick(), s.tick()]));
        await Promise.all(schedulers.map((s) => s.settle()));
      }
    };
    const logs = async (taskId: string, agent: string) => ((await call(cronTaskLogs, { task_id: taskId, agent_id: agent })).logs as Json[]).map((l) => [l.status, l.created_at, l.attempt]);
    const status = async (agent: string) => ((await call(cronTaskList, { agent_id: agent })).tasks as Json[]).map((t) => t.status);
    return { svcs, rx, call, tick, logs, status };
  }

  it('grace → status late (still listed by due=true), one late log entry, exactly one signed cron_task.late webhook per occurrence; the due one unchanged', async () => {
    const { rx, call, tick, logs, status } = await setup();
    const created = (await call(cronTaskCreate, { agent_id: 'g', name: 'hourly', schedule: '0 * * * *', callback_url: rx.url, grace_seconds: 120 })).task as Json;
    expect(created).toMatchObject({ grace_seconds: 120, status: 'scheduled', next_run_at: '2026-03-02T09:00:00.000Z' });
    const id = created.task_id as string;
    const secret = created.callback_secret as string;
    await tick('2026-03-02T09:00:00.000Z');
    await tick('2026-03-02T09:01:59.999Z');
    expect(await status('g')).toStrictEqual(['due']);
    expect(rx.hits).toHaveLength(1);
    await tick('2026-03-02T09:02:00.000Z');
    const listed = (await call(cronTaskList, { agent_id: 'g', due: true })).tasks as Json[];
    const { callback_secret: _s, ...publicTask } = created;
    expect(listed).toStrictEqual([{ ...publicTask, status: 'late' }]);
    for (const t of ['2026-03-02T09:03:00.000Z', '2026-03-02T09:30:00.000Z']) await tick(t);
    expect(rx.hits).toHaveLength(2);
    // The due message byte for byte as before; the late one names the occurrence, the grace and when it turned late.
    const [due, late] = rx.hits as [Hit, Hit];
    expect(due.body).toBe(
      JSON.stringify({ type: 'cron_task.due', timestamp: '2026-03-02T09:00:00.000Z', data: { task_id: id, agent_id: 'g', name: 'hourly', schedule: '0 * * * *', scheduled_for: '2026-03-02T09:00:00.000Z' } }),
    );
    expect(JSON.parse(late.body)).toStrictEqual({
      type: 'cron_task.late',
      timestamp: '2026-03-02T09:02:00.000Z',
      data: { task_id: id, agent_id: 'g', name: 'hourly', schedule: '0 * * * *', scheduled_for: '2026-03-02T09:00:00.000Z', grace_seconds: 120, late_since: '2026-03-02T09:02:00.000Z' },
    });
    for (const h of rx.hits) expect(verified(secret, h)).toBe(true);
    expect(verified(secret, { ...late, body: late.body.replace('hourly', 'hourlY') })).toBe(false);
    expect(late.headers['webhook-id']).toMatch(/^msg_[A-Za-z0-9_-]{24}$/);
    expect(late.headers['webhook-id']).not.toBe(due.headers['webhook-id']);
    expect(late.headers['webhook-timestamp']).toBe(String(Date.parse('2026-03-02T09:02:00.000Z') / 1000));
    expect(await logs(id, 'g')).toStrictEqual([
      ['webhook_ok', '2026-03-02T09:02:00.000Z', 1],
      ['late', '2026-03-02T09:02:00.000Z', 1],
      ['webhook_ok', '2026-03-02T09:00:00.000Z', 1],
    ]);
    const entry = ((await call(cronTaskLogs, { task_id: id, agent_id: 'g' })).logs as Json[])[1]!;
    expect(entry.message).toBe(`Not claimed or reported within grace_seconds (120s); late since 2026-03-02T09:02:00.000Z (webhook ${String(late.headers['webhook-id'])})`);
    // A report ends it; the next occurrence is late on its own, once.
    at('2026-03-02T09:31:00.000Z');
    expect((await call(cronTaskDone, { task_id: id, agent_id: 'g' })).task).toMatchObject({ status: 'scheduled', next_run_at: '2026-03-02T10:00:00.000Z' });
    for (const t of ['2026-03-02T10:00:00.000Z', '2026-03-02T10:02:00.000Z', '2026-03-02T10:05:00.000Z']) await tick(t);
    expect(rx.hits.map((h) => [JSON.parse(h.body).type, JSON.parse(h.body).data.scheduled_for])).toStrictEqual([
      ['cron_task.due', '2026-03-02T09:00:00.000Z'],
      ['cron_task.late', '2026-03-02T09:00:00.000Z'],
      ['cron_task.due', '2026-03-02T10:00:00.000Z'],
      ['cron_task.late', '2026-03-02T10:00:00.000Z'],
    ]);
    expect((await logs(id, 'g')).filter(([s]) => s === 'late')).toStrictEqual([
      ['late', '2026-03-02T10:02:00.000Z', 1],
      ['late', '2026-03-02T09:02:00.000Z', 1],
    ]);
  });

  it('a claim before the grace ends: never late; a lease that lapses makes it due again, late grace_seconds after the lease ended', async () => {
    const { rx, call, tick, logs, status } = await setup();
    const t = (await call(cronTaskCreate, { agent_id: 'c', name: 'claimed', schedule: '0 * * * *', callback_url: rx.url, grace_seconds: 60 })).task as Json;
    const id = t.task_id as string;
    await tick('2026-03-02T09:00:00.000Z');
    at('2026-03-02T09:00:59.000Z');
    const claim = await call(cronTaskClaim, { task_id: id, agent_id: 'c', lease_seconds: 600 });
    for (const x of ['2026-03-02T09:01:00.000Z', '2026-03-02T09:05:00.000Z']) await tick(x);
    expect(await status('c')).toStrictEqual(['claimed']);
    at('2026-03-02T09:06:00.000Z');
    await call(cronTaskDone, { task_id: id, agent_id: 'c', run_id: claim.run_id });
    // Claimed again at 10:00, and the worker dies: due again at 10:00:10, late at 10:01:10.
    await tick('2026-03-02T10:00:00.000Z');
    await call(cronTaskClaim, { task_id: id, agent_id: 'c', lease_seconds: 10 });
    await tick('2026-03-02T10:01:09.999Z');
    expect(await status('c')).toStrictEqual(['due']);
    await tick('2026-03-02T10:01:10.000Z');
    expect(await status('c')).toStrictEqual(['late']);
    expect(rx.hits.map((h) => [JSON.parse(h.body).type, JSON.parse(h.body).data.scheduled_for, JSON.parse(h.body).data.late_since])).toStrictEqual([
      ['cron_task.due', '2026-03-02T09:00:00.000Z', undefined],
      ['cron_task.due', '2026-03-02T10:00:00.000Z', undefined],
      ['cron_task.late', '2026-03-02T10:00:00.000Z', '2026-03-02T10:01:10.000Z'],
    ]);
    expect((await logs(id, 'c')).filter(([s]) => s !== 'webhook_ok')).toStrictEqual([
      ['late', '2026-03-02T10:01:10.000Z', 1],
      ['lease_expired', '2026-03-02T10:00:10.000Z', 1],
      ['done', '2026-03-02T09:06:00.000Z', 1],
    ]);
  });

  it('a retry nobody takes is late grace_seconds after it fell due; the occurrence is announced late once', async () => {
    const { rx, call, tick, logs, status } = await setup();
    const t = (await call(cronTaskCreate, { agent_id: 'r', name: 'retried', schedule: '0 * * * *', callback_url: rx.url, grace_seconds: 60, max_retries: 2 })).task as Json;
    const id = t.task_id as string;
    await tick('2026-03-02T09:00:00.000Z');
    at('2026-03-02T09:00:30.000Z');
    await call(cronTaskDone, { task_id: id, agent_id: 'r', status: 'failed' });
    await tick('2026-03-02T09:01:29.999Z');
    expect(await status('r')).toStrictEqual(['retrying']);
    await tick('2026-03-02T09:01:30.000Z');
    expect(await status('r')).toStrictEqual(['late']);
    at('2026-03-02T09:02:00.000Z');
    await call(cronTaskDone, { task_id: id, agent_id: 'r', status: 'failed' });
    for (const x of ['2026-03-02T09:03:00.000Z', '2026-03-02T09:10:00.000Z']) await tick(x);
    // Late again (status), but the occurrence was already announced: no second entry or message.
    expect(await status('r')).toStrictEqual(['late']);
    expect(rx.hits.map((h) => JSON.parse(h.body).type)).toStrictEqual(['cron_task.due', 'cron_task.due', 'cron_task.late', 'cron_task.due']);
    expect((await logs(id, 'r')).filter(([s]) => s === 'late')).toStrictEqual([['late', '2026-03-02T09:01:30.000Z', 2]]);
  });

  it('a pause across the due time and the grace sends nothing and logs nothing; after resume the next occurrence can be late', async () => {
    const { rx, call, tick, logs, status } = await setup();
    const t = (await call(cronTaskCreate, { agent_id: 'p', name: 'paused', schedule: '0 * * * *', callback_url: rx.url, grace_seconds: 60 })).task as Json;
    const id = t.task_id as string;
    await call(cronTaskPause, { task_id: id, agent_id: 'p' });
    for (const x of ['2026-03-02T09:00:00.000Z', '2026-03-02T09:01:00.000Z', '2026-03-02T09:30:00.000Z']) await tick(x);
    expect(await status('p')).toStrictEqual(['paused']);
    expect(rx.hits).toStrictEqual([]);
    expect(await logs(id, 'p')).toStrictEqual([]);
    // A timed pause too: resumes by itself at 10:30, the next run 11:00 is late at 11:01.
    await call(cronTaskResume, { task_id: id, agent_id: 'p' });
    await call(cronTaskPause, { task_id: id, agent_id: 'p', paused_until: '2026-03-02T10:30:00Z' });
    for (const x of ['2026-03-02T10:00:00.000Z', '2026-03-02T10:01:00.000Z', '2026-03-02T10:30:00.000Z']) await tick(x);
    expect(rx.hits).toStrictEqual([]);
    for (const x of ['2026-03-02T11:00:00.000Z', '2026-03-02T11:01:00.000Z']) await tick(x);
    expect(await status('p')).toStrictEqual(['late']);
    expect(rx.hits.map((h) => [JSON.parse(h.body).type, JSON.parse(h.body).data.scheduled_for])).toStrictEqual([
      ['cron_task.due', '2026-03-02T11:00:00.000Z'],
      ['cron_task.late', '2026-03-02T11:00:00.000Z'],
    ]);
    expect(await logs(id, 'p')).toStrictEqual([
      ['webhook_ok', '2026-03-02T11:01:00.000Z', 1],
      ['late', '2026-03-02T11:01:00.000Z', 1],
      ['webhook_ok', '2026-03-02T11:00:00.000Z', 1],
    ]);
    // Paused while late: paused, not late; nothing more is sent.
    await call(cronTaskPause, { task_id: id, agent_id: 'p' });
    await tick('2026-03-02T12:10:00.000Z');
    expect(await status('p')).toStrictEqual(['paused']);
    expect(rx.hits).toHaveLength(2);
  });

  it('a one-shot is late once, and never after it completed; a task without callback_url logs late and sends nothing', async () => {
    const { rx, call, tick, logs, status } = await setup();
    const once = (await call(cronTaskCreate, { agent_id: 'o', name: 'once', run_at: '2026-03-02T09:00:00Z', callback_url: rx.url, grace_seconds: 30 })).task as Json;
    const quiet = (await call(cronTaskCreate, { agent_id: 'o', name: 'quiet', schedule: '0 9 * * *', grace_seconds: 30 })).task as Json;
    for (const x of ['2026-03-02T09:00:00.000Z', '2026-03-02T09:00:30.000Z']) await tick(x);
    expect(await status('o')).toStrictEqual(['late', 'late']);
    at('2026-03-02T09:01:00.000Z');
    expect((await call(cronTaskDone, { task_id: once.task_id, agent_id: 'o' })).task.status).toBe('completed');
    for (const x of ['2026-03-02T10:00:00.000Z', '2026-03-03T09:00:00.000Z']) await tick(x);
    expect(rx.hits.map((h) => JSON.parse(h.body).type)).toStrictEqual(['cron_task.due', 'cron_task.late']);
    expect((await logs(once.task_id as string, 'o')).map(([s]) => s)).toStrictEqual(['done', 'webhook_ok', 'late', 'webhook_ok']);
    expect(await logs(quiet.task_id as string, 'o')).toStrictEqual([['late', '2026-03-02T09:00:30.000Z', 1]]);
  });

  it('cron_task_update of grace_seconds applies to the current due run; null clears it; the occurrence is still announced once', async () => {
    const { rx, call, tick, logs, status } = await setup();
    const t = (await call(cronTaskCreate, { agent_id: 'u', name: 'upd', schedule: '0 * * * *', callback_url: rx.url })).task as Json;
    const id = t.task_id as string;
    expect(t.grace_seconds).toBeUndefined();
    for (const x of ['2026-03-02T09:00:00.000Z', '2026-03-02T09:30:00.000Z']) await tick(x);
    expect(await status('u')).toStrictEqual(['due']);
    at('2026-03-02T09:31:00.000Z');
    expect((await call(cronTaskUpdate, { task_id: id, agent_id: 'u', grace_seconds: 3600 })).task).toMatchObject({ grace_seconds: 3600, status: 'due' });
    expect((await call(cronTaskUpdate, { task_id: id, agent_id: 'u', grace_seconds: 600 })).task).toMatchObject({ grace_seconds: 600, status: 'late' });
    await tick('2026-03-02T09:31:00.000Z');
    const cleared = (await call(cronTaskUpdate, { task_id: id, agent_id: 'u', grace_seconds: null })).task as Json;
    expect(cleared.status).toBe('due');
    expect(cleared.grace_seconds).toBeUndefined();
    await call(cronTaskUpdate, { task_id: id, agent_id: 'u', grace_seconds: 60 });
    await tick('2026-03-02T09:40:00.000Z');
    expect(await status('u')).toStrictEqual(['late']);
    expect(rx.hits.map((h) => [JSON.parse(h.body).type, JSON.parse(h.body).data.late_since])).toStrictEqual([
      ['cron_task.due', undefined],
      ['cron_task.late', '2026-03-02T09:10:00.000Z'],
    ]);
    expect((await logs(id, 'u')).filter(([s]) => s === 'late')).toStrictEqual([['late', '2026-03-02T09:10:00.000Z', 1]]);
  });

  it('REST and MCP: grace_seconds is checked like the other fields (400), shown in answers; with no scheduler running, the next call on a late task logs its lateness once', async () => {
    const a: ListeningApp = await listenTestApp({ env: env(), overrides: { clock } });
    cleanup.push(() => a.close());
    const rest = async (method: string, path: string, body?: unknown) => {
      const r = await fetch(`${a.url}${path}`, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: r.status, body: (await r.json()) as Json };
    };
    for (const grace_seconds of [0, 86_401, 1.5, '60', null, -5]) {
      const r = await rest('POST', '/api/cron-task', { agent_id: 'h', name: 'bad', schedule: '0 * * * *', grace_seconds });
      expect([grace_seconds, r.status, r.body.error?.code, r.body.error?.details?.[0]?.path]).toStrictEqual([grace_seconds, 400, 'INVALID_INPUT', 'grace_seconds']);
    }
    const failing = (await rest('POST', '/api/cron-task', { agent_id: 'f', name: 'failing', schedule: '0 * * * *', grace_seconds: 60, max_retries: 1 })).body.task as Json;
    const made = await rest('POST', '/api/cron-task', { agent_id: 'h', name: 'rest', schedule: '0 * * * *', grace_seconds: 86_400 });
    expect(made.status).toBe(201);
    expect(made.body.task).toMatchObject({ grace_seconds: 86_400, status: 'scheduled' });
    const id = made.body.task.task_id as string;
    for (const grace_seconds of [0, 86_401, 1.5, '60']) {
      const r = await rest('PATCH', `/api/cron-task/${id}?agent_id=h`, { grace_seconds });
      expect([grace_seconds, r.status, r.body.error?.code]).toStrictEqual([grace_seconds, 400, 'INVALID_INPUT']);
    }
    expect((await rest('PATCH', `/api/cron-task/${id}?agent_id=h`, { grace_seconds: 60 })).body.task).toMatchObject({ grace_seconds: 60, status: 'scheduled' });
    at('2026-03-02T09:00:59.999Z');
    expect((await rest('GET', '/api/cron-task?agent_id=h&due=true')).body.tasks.map((t: Json) => t.status)).toStrictEqual(['due']);
    at('2026-03-02T09:01:00.000Z');
    expect((await rest('GET', '/api/cron-task?agent_id=h&due=true')).body.tasks.map((t: Json) => t.status)).toStrictEqual(['late']);
    const mcp = await a.httpClient();
    const listed = await mcp.callTool({ name: 'cron_task_list', arguments: { agent_id: 'h', due: true } });
    expect((listed.structuredContent as Json).tasks).toStrictEqual([{ ...made.body.task, grace_seconds: 60, status: 'late', updated_at: '2026-03-02T08:30:00.000Z' }]);
    const viaMcp = await mcp.callTool({ name: 'cron_task_create', arguments: { agent_id: 'h', name: 'mcp', schedule: '@daily', grace_seconds: 30 } });
    expect((viaMcp.structuredContent as Json).task).toMatchObject({ grace_seconds: 30, status: 'scheduled' });
    // Nothing was logged by reading; the claim records that the run was late (stamped when it turned late), then ends it.
    expect((await rest('GET', `/api/cron-task/${id}/logs?agent_id=h`)).body.logs).toStrictEqual([]);
    at('2026-03-02T09:05:00.000Z');
    expect((await rest('POST', `/api/cron-task/${id}/claim?agent_id=h`, {})).body.task).toMatchObject({ status: 'claimed' });
    expect((await rest('POST', `/api/cron-task/${id}/claim?agent_id=h`, {})).status).toBe(409);
    expect((await rest('GET', `/api/cron-task/${id}/logs?agent_id=h`)).body.logs.map((l: Json) => [l.status, l.created_at, l.attempt])).toStrictEqual([['late', '2026-03-02T09:01:00.000Z', 1]]);
    // A failed report after the grace: the lateness of the first attempt is recorded before the report.
    expect((await rest('POST', `/api/cron-task/${failing.task_id as string}/done?agent_id=f`, { status: 'failed' })).body.task).toMatchObject({ status: 'retrying', retry_count: 1 });
    expect((await rest('GET', `/api/cron-task/${failing.task_id as string}/logs?agent_id=f`)).body.logs.map((l: Json) => [l.status, l.created_at, l.attempt, l.message])).toStrictEqual([
      ['failed', '2026-03-02T09:05:00.000Z', 1, null],
      ['late', '2026-03-02T09:01:00.000Z', 1, 'Not claimed or reported within grace_seconds (60s); late since 2026-03-02T09:01:00.000Z'],
    ]);
  });

  it(`${instances} scheduler(s) on one store, each checking twice at once: exactly one late webhook (its first attempt refused, retried under the same webhook-id), one late log entry`, async () => {
    const { svcs, rx, call, tick, logs } = await setup(instances, true);
    const tasks: Json[] = [];
    for (let i = 0; i < 4; i++) tasks.push((await call(cronTaskCreate, { agent_id: 'x', name: `x${i}`, schedule: '*/5 * * * *', callback_url: rx.url, grace_seconds: 30 }, svcs[i % svcs.length])).task as Json);
    for (const x of ['2026-03-02T08:35:00.000Z', '2026-03-02T08:35:30.000Z', '2026-03-02T08:36:00.000Z', '2026-03-02T08:37:00.000Z']) await tick(x);
    const late = rx.hits.filter((h) => JSON.parse(h.body).type === 'cron_task.late');
    // Two POSTs per message (503, then 200), one message per task.
    expect(late).toHaveLength(8);
    const ids = new Set(late.map((h) => String(h.headers['webhook-id'])));
    expect(ids.size).toBe(4);
    for (const t of tasks) {
      const mine = late.filter((h) => JSON.parse(h.body).data.task_id === t.task_id);
      expect(mine).toHaveLength(2);
      for (const h of mine) expect(verified(t.callback_secret as string, h)).toBe(true);
      expect((await logs(t.task_id as string, 'x')).filter(([s]) => s === 'late')).toStrictEqual([['late', '2026-03-02T08:35:30.000Z', 1]]);
    }
    expect(rx.hits.filter((h) => JSON.parse(h.body).type === 'cron_task.due')).toHaveLength(8);
  });
}

describe('cron task lateness on the file store', () => {
  lateSuite(() => ({}), 1);

  it('with its own timers, the scheduler wakes when the grace ends: the late message comes without a manual tick, before the minute tick', async () => {
    const MIN = 60_000;
    const s = await testServices();
    const rx = await receiver();
    try {
      const scheduler = startScheduler(s);
      // Start well inside a minute, so that only the wake-up timer can send it in time (an order of events; the wait is the test's timeout).
      const intoMinute = Date.now() % MIN;
      if (intoMinute > MIN - 15_000) await new Promise((r) => setTimeout(r, MIN - intoMinute + 1000));
      const minuteEnds = Math.ceil((Date.now() + 1) / MIN) * MIN;
      const { task } = (await invokeTool(cronTaskCreate, { name: 'timers', run_at: new Date().toISOString(), callback_url: rx.url, grace_seconds: 2 }, toolContext(s))).json as Json;
      while (!rx.hits.some((h) => JSON.parse(h.body).type === 'cron_task.late')) await new Promise((r) => setTimeout(r, 50));
      expect(Date.now(), 'the late message came before the next minute tick').toBeLessThan(minuteEnds);
      expect(rx.hits.map((h) => JSON.parse(h.body).type)).toStrictEqual(['cron_task.due', 'cron_task.late']);
      for (const h of rx.hits) expect(verified(task.callback_secret as string, h)).toBe(true);
      await scheduler.stop();
    } finally {
      await closeServices(s);
      await rx.close();
    }
  }, 60_000);
});

describeRedis('cron task lateness on Redis', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });
  lateSuite(() => ({ REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix() }), 3);
});
