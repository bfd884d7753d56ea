/**
 * Webhooks of due cron tasks against a real loopback receiver: Standard Webhooks signatures
 * checked by the `standardwebhooks` package, retries with the same webhook-id, one webhook
 * per occurrence, timeouts. The scheduler runs with timers off and an injected clock: each
 * test drives `tick(now)`; nothing sleeps.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { invokeTool } from '../src/invoke.js';
import { manualClock } from '../src/core/clock.js';
import type { AnyTool } from '../src/registry.js';
import { startScheduler, type SchedulerOptions } from '../src/tools/cron-tasks/scheduler.js';
import { defaultBackoff } from '../src/tools/cron-tasks/webhook.js';
import { closeServices, type Services } from '../src/services.js';
import { cronTaskCreate } from '../src/tools/cron-tasks/cron-task-create.js';
import { cronTaskDelete } from '../src/tools/cron-tasks/cron-task-delete.js';
import { cronTaskDone } from '../src/tools/cron-tasks/cron-task-done.js';
import { cronTaskLogs } from '../src/tools/cron-tasks/cron-task-logs.js';
import { tasksOf } from '../src/tools/cron-tasks/model.js';
import { testServices, toolContext } from './harness.js';

const MIN = 60_000;
// Near real time: standardwebhooks refuses timestamps more than 5 minutes off.
const T0 = Math.floor(Date.now() / MIN) * MIN;
const clock = manualClock(T0);

interface Hit {
  headers: Record<string, string>;
  body: string;
  at: number;
}
type Reply = number | 'hang' | { status: number; headers: Record<string, string> };

interface Receiver {
  url: string;
  hits: Hit[];
  /** Resolves once `n` requests have arrived: the wait has no bound but the test's timeout. */
  hit(n: number): Promise<void>;
  /** Resolves when the sender closed a request this receiver held open ('hang') without an answer. */
  cut: Promise<void>;
  close(): Promise<void>;
}

/** A loopback receiver that answers from a script (then 200) and records every request. */
async function receiver(script: Reply[] = []): Promise<Receiver> {
  const hits: Hit[] = [];
  const hanging: http.ServerResponse[] = [];
  const waiting: Array<{ n: number; resolve: () => void }> = [];
  let closing = false;
  let onCut = () => {};
  const cut = new Promise<void>((r) => (onCut = r));
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      hits.push({ headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString('utf8'), at: clock.now() });
      for (const w of waiting.filter((x) => hits.length >= x.n)) w.resolve();
      const reply = script.shift() ?? 200;
      if (reply === 'hang') {
        hanging.push(res);
        res.on('close', () => closing || onCut());
        return;
      }
      if (typeof reply === 'number') res.writeHead(reply, { 'content-type': 'text/plain' }).end('ok');
      else res.writeHead(reply.status, reply.headers).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    hits,
    hit: (n) => (hits.length >= n ? Promise.resolve() : new Promise<void>((resolve) => void waiting.push({ n, resolve }))),
    cut,
    close: () =>
      new Promise<void>((r) => {
        closing = true;
        for (const h of hanging) h.destroy();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  clock.t = T0;
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function setup(opts: SchedulerOptions = {}, script: Reply[] = [], env: Record<string, string> = {}) {
  const s: Services = await testServices(env, { clock });
  cleanup.push(() => closeServices(s));
  const rx = await receiver(script);
  cleanup.push(rx.close);
  const scheduler = startScheduler(s, { timers: false, backoff: () => 1000, ...opts });
  const call = async (tool: unknown, input: unknown) => (await invokeTool(tool as AnyTool, input, toolContext(s))).json as Record<string, any>;
  return { s, rx, scheduler, call };
}

/** One due check at clock time, then wait for the attempts it started. */
async function tickAt(scheduler: ReturnType<typeof startScheduler>, t: number) {
  clock.t = t;
  const r = await scheduler.tick();
  await scheduler.settle();
  return r;
}

describe('cron webhooks', () => {
  it('POSTs a Standard Webhooks message that the standardwebhooks package verifies; a tampered body fails', async () => {
    const { rx, scheduler, call } = await setup();
    const { task } = await call(cronTaskCreate, { agent_id: 'hooks', name: 'ping', schedule: '* * * * *', callback_url: rx.url });
    expect(await tickAt(scheduler, T0 + 30_000)).toStrictEqual({ queued: 0, started: 0 });
    expect(rx.hits).toHaveLength(0);
    expect(await tickAt(scheduler, T0 + MIN)).toStrictEqual({ queued: 1, started: 1 });
    expect(rx.hits).toHaveLength(1);
    const hit = rx.hits[0]!;
    const wh = new Webhook(task.callback_secret);
    expect(wh.verify(hit.body, hit.headers)).toStrictEqual({
      type: 'cron_task.due',
      timestamp: new Date(T0 + MIN).toISOString(),
      data: { task_id: task.task_id, agent_id: 'hooks', name: 'ping', schedule: '* * * * *', scheduled_for: new Date(T0 + MIN).toISOString() },
    });
    expect(hit.headers['content-type']).toBe('application/json');
    expect(hit.headers['webhook-id']).toMatch(/^msg_[A-Za-z0-9_-]{24}$/);
    expect(hit.headers['webhook-timestamp']).toBe(String((T0 + MIN) / 1000));
    expect(hit.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    const tampered = hit.body.replace('"ping"', '"pong"');
    expect(tampered).not.toBe(hit.body);
    expect(() => wh.verify(tampered, hit.headers)).toThrow(WebhookVerificationError);
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(hit.body, hit.headers)).toThrow(WebhookVerificationError);
    const logs = (await call(cronTaskLogs, { task_id: task.task_id, agent_id: 'hooks' })).logs;
    expect(logs).toStrictEqual([
      {
        log_id: logs[0].log_id,
        task_id: task.task_id,
        agent_id: 'hooks',
        status: 'webhook_ok',
        message: `Delivered: HTTP 200 (webhook ${hit.headers['webhook-id']})`,
        attempt: 1,
        created_at: new Date(T0 + MIN).toISOString(),
      },
    ]);
  });

  it('500, 500, 200: exactly 3 attempts with the same webhook-id, backoff between them, each outcome logged', async () => {
    const { rx, scheduler, call, s } = await setup({ backoff: (n) => n * 1000 }, [500, 500]);
    const { task } = await call(cronTaskCreate, { name: 'retry me', schedule: '* * * * *', callback_url: rx.url });
    await tickAt(scheduler, T0 + MIN);
    expect(rx.hits).toHaveLength(1);
    // Not before the backoff.
    await tickAt(scheduler, T0 + MIN + 999);
    expect(rx.hits).toHaveLength(1);
    await tickAt(scheduler, T0 + MIN + 1000);
    expect(rx.hits).toHaveLength(2);
    await tickAt(scheduler, T0 + MIN + 2999);
    await tickAt(scheduler, T0 + MIN + 3000);
    expect(rx.hits).toHaveLength(3);
    // Still due (not reported): no new webhook, however late.
    await tickAt(scheduler, T0 + 10 * MIN - 1);
    expect(rx.hits).toHaveLength(3);
    // Reported done: the next occurrence gets its own.
    await call(cronTaskDone, { task_id: task.task_id });
    await tickAt(scheduler, T0 + 10 * MIN);
    expect(rx.hits).toHaveLength(4);
    const ids = rx.hits.map((h) => h.headers['webhook-id']);
    expect(new Set(ids.slice(0, 3)).size).toBe(1);
    expect(ids[3]).not.toBe(ids[0]);
    expect(rx.hits.slice(0, 3).map((h) => h.body)).toStrictEqual(Array(3).fill(rx.hits[0]!.body));
    for (const h of rx.hits.slice(0, 3)) new Webhook(task.callback_secret).verify(h.body, h.headers);
    const logs = (await call(cronTaskLogs, { task_id: task.task_id })).logs as Array<Record<string, unknown>>;
    const id = ids[0];
    expect(logs.map((l) => [l.status, l.attempt, l.message])).toStrictEqual([
      ['webhook_ok', 1, `Delivered: HTTP 200 (webhook ${ids[3]})`],
      ['done', 1, null],
      ['webhook_ok', 3, `Delivered: HTTP 200 (webhook ${id})`],
      ['webhook_failed', 2, `HTTP 500; attempt 2 of 5, next in 2s (webhook ${id})`],
      ['webhook_failed', 1, `HTTP 500; attempt 1 of 5, next in 1s (webhook ${id})`],
    ]);
    expect((await tasksOf(s.store).get(task.task_id))!.webhooks).toStrictEqual([]);
  });

  it('gives up after 5 attempts; 4xx and redirects are not retried', async () => {
    const { rx, scheduler, call } = await setup({}, [503, 503, 429, 408, 502, 404, { status: 302, headers: { location: 'http://127.0.0.1:1/' } }]);
    const a = (await call(cronTaskCreate, { name: 'a', schedule: '* * * * *', callback_url: rx.url })).task;
    for (let i = 0; i < 8; i++) await tickAt(scheduler, T0 + MIN + i * 1000);
    expect(rx.hits).toHaveLength(5);
    const la = (await call(cronTaskLogs, { task_id: a.task_id })).logs as Array<Record<string, unknown>>;
    expect(la.map((l) => [l.status, l.attempt])).toStrictEqual([5, 4, 3, 2, 1].map((n) => ['webhook_failed', n]));
    expect(la[0]!.message).toBe(`HTTP 502; gave up after 5 attempts (webhook ${rx.hits[0]!.headers['webhook-id']})`);

    await call(cronTaskDone, { task_id: a.task_id });
    const b = (await call(cronTaskCreate, { name: 'b', schedule: '* * * * *', callback_url: rx.url })).task;
    await tickAt(scheduler, T0 + 2 * MIN);
    // a's next occurrence → 404; b's → 302. Neither is retried.
    for (let i = 1; i < 5; i++) await tickAt(scheduler, T0 + 2 * MIN + i * 1000);
    expect(rx.hits).toHaveLength(7);
    const last = [...(await call(cronTaskLogs, { task_id: a.task_id, limit: 1 })).logs, ...(await call(cronTaskLogs, { task_id: b.task_id })).logs];
    expect(last.map((l: { message: string }) => l.message.split(' (webhook')[0]).sort()).toStrictEqual(['HTTP 302; not retried', 'HTTP 404; not retried']);
  });

  it('a hanging receiver is cut off at the deadline and retried', async () => {
    // The fetcher's own deadline far past the test's timeout: only the attempt's 300 ms can end it.
    const { rx, scheduler, call } = await setup({ timeoutMs: 300 }, ['hang'], { FETCH_TIMEOUT_MS: '600000' });
    const { task } = await call(cronTaskCreate, { name: 'slow', schedule: '* * * * *', callback_url: rx.url });
    await tickAt(scheduler, T0 + MIN);
    // The attempt ended while the receiver still held the request: the sender cut it off (without
    // the deadline the attempt, and this test, would wait forever).
    await rx.cut;
    expect(rx.hits).toHaveLength(1);
    const [log] = (await call(cronTaskLogs, { task_id: task.task_id })).logs;
    expect(log).toMatchObject({ status: 'webhook_failed', attempt: 1, message: expect.stringMatching(/^UPSTREAM_TIMEOUT: .*; attempt 1 of 5, next in 1s/) });
    await tickAt(scheduler, T0 + MIN + 1000);
    expect(rx.hits).toHaveLength(2);
    expect(rx.hits[1]!.headers['webhook-id']).toBe(rx.hits[0]!.headers['webhook-id']);
  });

  it('one webhook per occurrence however often the due check runs; a reported failure with retries left sends one more', async () => {
    const { rx, scheduler, call } = await setup();
    const { task } = await call(cronTaskCreate, { name: 'once', schedule: '0 * * * *', callback_url: rx.url, max_retries: 1 });
    const due = Date.parse(task.next_run_at);
    // Several due checks, some concurrent, over the hour the task stays due.
    clock.t = due;
    await Promise.all([scheduler.tick(), scheduler.tick(), scheduler.tick()]);
    await scheduler.settle();
    for (let t = due; t < due + 30 * MIN; t += 5 * MIN) await tickAt(scheduler, t);
    expect(rx.hits).toHaveLength(1);

    clock.t = due + 31 * MIN;
    const failed = await call(cronTaskDone, { task_id: task.task_id, status: 'failed', message: 'boom' });
    expect(failed.retry).toStrictEqual({ scheduled: true, attempt: 1, max_retries: 1 });
    for (let i = 0; i < 3; i++) await tickAt(scheduler, due + 31 * MIN + i * 1000);
    expect(rx.hits).toHaveLength(2);
    const [first, retry] = rx.hits.map((h) => JSON.parse(h.body) as { data: Record<string, unknown> });
    expect(retry!.data).toStrictEqual(first!.data);
    expect(rx.hits[1]!.headers['webhook-id']).not.toBe(rx.hits[0]!.headers['webhook-id']);

    // The last allowed failure: no webhook until the next occurrence.
    clock.t = due + 40 * MIN;
    expect((await call(cronTaskDone, { task_id: task.task_id, status: 'failed' })).retry.scheduled).toBe(false);
    for (let t = due + 40 * MIN; t < due + 60 * MIN; t += 5 * MIN) await tickAt(scheduler, t);
    expect(rx.hits).toHaveLength(2);
    await tickAt(scheduler, due + 60 * MIN);
    expect(rx.hits).toHaveLength(3);
    expect((JSON.parse(rx.hits[2]!.body) as { data: { scheduled_for: string } }).data.scheduled_for).toBe(new Date(due + 60 * MIN).toISOString());
  });

  it('a task without callback_url never touches the scheduler; a deleted task stops its retries', async () => {
    const { rx, scheduler, call, s } = await setup({}, [500]);
    await call(cronTaskCreate, { name: 'quiet', schedule: '* * * * *' });
    expect(await tasksOf(s.store).count({ index: 'wake_at', gte: 0 })).toBe(0);
    const { task } = await call(cronTaskCreate, { name: 'loud', schedule: '* * * * *', callback_url: rx.url });
    await tickAt(scheduler, T0 + MIN);
    expect(rx.hits).toHaveLength(1);
    await call(cronTaskDelete, { task_id: task.task_id });
    for (let i = 1; i < 4; i++) await tickAt(scheduler, T0 + MIN + i * 1000);
    expect(rx.hits).toHaveLength(1);
  });

  it('the default backoff grows exponentially with jitter', () => {
    expect([1, 2, 3, 4].map((n) => defaultBackoff(n, () => 0))).toStrictEqual([1000, 3000, 9000, 27000]);
    expect([1, 2, 3, 4].map((n) => defaultBackoff(n, () => 1))).toStrictEqual([2000, 6000, 18000, 54000]);
  });
});

describe('scheduler with its own timers', () => {
  it('a reported failure wakes the scheduler: the retry webhook goes out without a manual tick', async () => {
    const s = await testServices();
    cleanup.push(() => closeServices(s));
    const rx = await receiver();
    cleanup.push(rx.close);
    const ctx = toolContext(s);
    const { task } = (await invokeTool(cronTaskCreate as unknown as AnyTool, { name: 'w', schedule: '0 0 1 1 *', callback_url: rx.url, max_retries: 1 }, ctx)).json as Record<string, any>;
    const scheduler = startScheduler(s);
    // The minute tick would send it too: report well inside a minute, and see the webhook come
    // before that minute's end (an order of events, not a duration; the wait is the test's timeout).
    const intoMinute = Date.now() % MIN;
    if (intoMinute > MIN - 15_000) await new Promise((r) => setTimeout(r, MIN - intoMinute + 1000));
    const minuteEnds = Math.ceil((Date.now() + 1) / MIN) * MIN;
    await invokeTool(cronTaskDone as unknown as AnyTool, { task_id: task.task_id, status: 'failed' }, ctx);
    await rx.hit(1);
    expect(Date.now(), 'the webhook came before the next minute tick').toBeLessThan(minuteEnds);
    expect(rx.hits).toHaveLength(1);
    new Webhook(task.callback_secret).verify(rx.hits[0]!.body, rx.hits[0]!.headers);
    await scheduler.stop();
  }, 60_000);
});
