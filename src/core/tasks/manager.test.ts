import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { closeAfterEach, testServices } from '../../../test/harness.js';
import { ownerKey } from '../../auth/owner.js';
import { manualClock } from '../../core/clock.js';
import { ToolError } from '../../errors.js';
import { defineTool, richResult, type AnyTool, type Caller } from '../../registry.js';
import { closeServices } from '../../services.js';
import { createMemoryStore, STORE_RETRY_AFTER_SECONDS } from '../../state/index.js';
import { CallPath } from '../call.js';
import { TASK_CHUNKS, TASKS } from './record.js';
import { PollTooFast, TaskManager, type TaskOptions } from './manager.js';

/** A slow tool: reports progress, waits `ms` (or until aborted), then answers; `fail` answers a tool error. */
let aborted = 0;
/** Lets a call made with `hold: name` finish: the test, not a timer, decides when. */
const held = new Map<string, () => void>();
const slow = defineTool({
  name: 'slow_thing',
  title: 'Slow',
  description: 'Waits, then answers.',
  input: z.object({ ms: z.number().int().min(0), fail: z.boolean().optional(), big: z.number().int().optional(), bin: z.boolean().optional(), hold: z.string().optional() }),
  output: z.object({ waited: z.number(), pad: z.string().optional() }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  longRunning: true,
  handler: async ({ ms, fail, big, bin, hold }, ctx) => {
    await ctx.progress(1, 2, 'waiting');
    await new Promise<void>((resolve, reject) => {
      // A held call waits for the test to let it go instead of `ms`.
      const t = hold === undefined ? setTimeout(resolve, ms) : void held.set(hold, resolve);
      ctx.signal.addEventListener('abort', () => {
        clearTimeout(t);
        aborted++;
        reject(new ToolError('UPSTREAM_ERROR', 'aborted'));
      });
    });
    await ctx.progress(2, 2, 'done');
    if (fail) throw new ToolError('UPSTREAM_ERROR', 'the site said no');
    const json = big ? { waited: ms, pad: 'é'.repeat(big) } : { waited: ms };
    if (bin) return richResult({ json, body: { data: new Uint8Array([1, 2, 3, 250]), contentType: 'application/x-test', headers: { 'X-Test': 'yes' } } });
    return json;
  },
}) as unknown as AnyTool;

const alice: Caller = { keyId: 'k_alice', ip: '10.0.0.1', transport: 'rest' };
const bob: Caller = { keyId: 'k_bob', ip: '10.0.0.1', transport: 'rest' };
const keyless: Caller = { keyId: null, ip: '10.0.0.2', transport: 'rest' };

const clock = manualClock('2026-11-23T01:00:00Z');
const closing = closeAfterEach();

/** Services and a task manager for one test; after it the manager closes, then the services. */
async function setup(env: Record<string, string> = {}, opts: Partial<TaskOptions> = {}, withClock = false) {
  const services = await testServices(env, { store: createMemoryStore(), ...(withClock ? { clock } : {}) });
  closing({ close: () => closeServices(services) });
  const calls = new CallPath(services);
  const tasks = closing(new TaskManager(services, calls, opts));
  return { services, calls, tasks };
}

/**
 * Polls until the task is `status`. One that settles in another state fails at once; one that
 * never settles fails at the test's timeout: no deadline of its own for a loaded machine to miss.
 */
async function until(tm: TaskManager, who: Caller, id: string, status: string) {
  for (;;) {
    const t = await tm.get(who, id);
    if (t?.status === status) return t;
    if (t && t.status !== 'working') throw new Error(`task ${id} is ${t.status}, not ${status}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('tasks (core)', () => {
  it('a slow call becomes a task: working, progress, then completed with the outcome', async () => {
    const { tasks } = await setup();
    const r = await tasks.create(alice, slow, { ms: 400, hold: 'first' });
    expect(r.kind).toBe('task');
    if (r.kind !== 'task') return;
    expect(r.task).toMatchObject({ status: 'working', ttlMs: 3_600_000, pollIntervalMs: 1000, tool: 'slow_thing' });
    expect(r.task.taskId).toMatch(/^[0-9a-f-]{36}$/);
    // Durable before the answer: a get finds it at once.
    expect((await tasks.get(alice, r.task.taskId))?.status).toBe('working');
    // The call is held after its first progress report: the task shows it, then the call goes on.
    let mid = await until(tasks, alice, r.task.taskId, 'working');
    while (!mid.progress || !held.has('first')) {
      await new Promise((res) => setTimeout(res, 20));
      mid = await until(tasks, alice, r.task.taskId, 'working');
    }
    expect(mid.progress).toEqual({ progress: 1, total: 2, message: 'waiting' });
    expect(mid.statusMessage ?? 'waiting (1/2)').toMatch(/waiting/);
    held.get('first')!();
    const done = await until(tasks, alice, r.task.taskId, 'completed');
    expect(done.progress).toEqual({ progress: 2, total: 2, message: 'done' });
    expect(await tasks.outcome(alice, r.task.taskId)).toEqual({ ok: true, json: { waited: 400 } });
  });

  it('a tool error completes the task with the error outcome (not failed)', async () => {
    const { tasks } = await setup();
    const r = await tasks.create(alice, slow, { ms: 50, fail: true });
    if (r.kind !== 'task') throw new Error('no task');
    const t = await until(tasks, alice, r.task.taskId, 'completed');
    expect(t.statusMessage).toBe('The tool answered an error: UPSTREAM_ERROR');
    expect(await tasks.outcome(alice, r.task.taskId)).toEqual({ ok: false, error: { code: 'UPSTREAM_ERROR', message: 'the site said no' } });
  });

  it('bad input is answered at once, without a task', async () => {
    const { tasks, services } = await setup();
    const r = await tasks.create(alice, slow, { ms: -1 });
    expect(r.kind).toBe('done');
    if (r.kind === 'done') expect(r.outcome.ok ? null : r.outcome.error.code).toBe('INVALID_INPUT');
    expect(await services.store.collection(TASKS).count()).toBe(0);
  });

  it('counts once against the limits at creation; a refused call gets no task; polling costs nothing', async () => {
    const { tasks, services } = await setup({ RATE_LIMITS: 'on', PLAN_KEYLESS: '2/100/10' });
    const a = await tasks.create(keyless, slow, { ms: 50 });
    expect(a.kind).toBe('task');
    if (a.kind !== 'task') return;
    expect(a.headers?.['RateLimit-Remaining'] ?? a.headers?.['ratelimit-remaining']).toBe('1');
    for (let i = 0; i < 10; i++) await tasks.get(keyless, a.task.taskId);
    const b = await tasks.create(keyless, slow, { ms: 50 });
    expect(b.kind).toBe('task');
    const c = await tasks.create(keyless, slow, { ms: 50 });
    expect(c.kind).toBe('done');
    if (c.kind === 'done') expect(c.outcome.ok ? null : c.outcome.error.code).toBe('RATE_LIMITED');
    expect(await services.store.collection(TASKS).count()).toBe(2);
  });

  it('cancel aborts the handler and the task reads cancelled; a finished task is left alone', async () => {
    const { tasks } = await setup();
    const before = aborted;
    const r = await tasks.create(alice, slow, { ms: 60_000 });
    if (r.kind !== 'task') throw new Error('no task');
    expect(await tasks.cancel(alice, r.task.taskId)).toBe(true);
    expect((await tasks.get(alice, r.task.taskId))?.status).toBe('cancelled');
    expect(aborted).toBe(before + 1);
    await new Promise((res) => setTimeout(res, 50));
    expect((await tasks.get(alice, r.task.taskId))?.status).toBe('cancelled'); // the handler's abort error does not overwrite it
    const d = await tasks.create(alice, slow, { ms: 50 });
    if (d.kind !== 'task') throw new Error('no task');
    await until(tasks, alice, d.task.taskId, 'completed');
    expect(await tasks.cancel(alice, d.task.taskId)).toBe(true);
    expect((await tasks.get(alice, d.task.taskId))?.status).toBe('completed');
  });

  it('another caller sees no such task (get, outcome, cancel), exactly as for an unknown id', async () => {
    const { tasks } = await setup();
    const r = await tasks.create(alice, slow, { ms: 100 });
    if (r.kind !== 'task') throw new Error('no task');
    for (const other of [bob, keyless, { ...alice, keyId: null }]) {
      expect(await tasks.get(other, r.task.taskId)).toBeUndefined();
      expect(await tasks.cancel(other, r.task.taskId)).toBe(false);
      expect(await tasks.outcome(other, r.task.taskId)).toBeUndefined();
    }
    expect(await tasks.get(alice, 'nope')).toBeUndefined();
    expect((await tasks.get(alice, r.task.taskId))?.status).toBe('working');
  });

  it('large and binary outcomes are kept in chunks and read back whole; removed with the task at its TTL', async () => {
    const { tasks, services } = await setup({}, { ttlMs: 60_000 }, true);
    const r = await tasks.create(alice, slow, { ms: 50, big: 300_000, bin: true });
    if (r.kind !== 'task') throw new Error('no task');
    await until(tasks, alice, r.task.taskId, 'completed');
    const o = await tasks.outcome(alice, r.task.taskId);
    expect(o).toMatchObject({ ok: true, json: { waited: 50 }, body: { base64: 'AQID+g==', contentType: 'application/x-test', headers: { 'X-Test': 'yes' } } });
    expect(o?.ok && (o.json.pad as string).length).toBe(300_000);
    expect(await services.store.collection(TASK_CHUNKS).count()).toBeGreaterThan(1);
    clock.advance(60_001);
    expect(await tasks.get(alice, r.task.taskId)).toBeUndefined();
    await new Promise((res) => setTimeout(res, 20));
    await tasks.sweep();
    expect(await services.store.collection(TASKS).count()).toBe(0);
    expect(await services.store.collection(TASK_CHUNKS).count()).toBe(0);
  });

  it('a result over the cap ends the task failed with -32603 and a clear message', async () => {
    const { tasks } = await setup({}, { maxResultBytes: 100_000 });
    const r = await tasks.create(alice, slow, { ms: 50, big: 200_000 });
    if (r.kind !== 'task') throw new Error('no task');
    const t = await until(tasks, alice, r.task.taskId, 'failed');
    expect(t.error).toMatchObject({ code: -32603, data: { reason: 'result_too_large' } });
    expect(t.error?.message).toMatch(/larger than the 100000 bytes a task keeps/);
  });

  it('a working task of an instance that died is reported failed (lease ran out, or another process of an embedded store)', async () => {
    const { tasks, services } = await setup({}, { leaseMs: 1000 }, true);
    const coll = services.store.collection(TASKS);
    const base = { owner: ownerKey(alice), tool: 'slow_thing', status: 'working' as const, createdAt: new Date(clock.t).toISOString(), lastUpdatedAt: new Date(clock.t).toISOString(), ttlMs: 3_600_000, expiresAt: clock.t + 3_600_000 };
    await coll.insert({ ...base, taskId: 'dead-1', instance: 'gone', leaseUntil: clock.t + 1000 });
    // The embedded store belongs to one process: a task of another instance cannot be running.
    const t = await tasks.get(alice, 'dead-1');
    expect(t).toMatchObject({ status: 'failed', error: { code: -32603, data: { reason: 'instance_lost' } } });
    expect(t?.error?.message).toMatch(/stopped before it finished/);
    expect((await coll.get('dead-1'))?.status).toBe('failed'); // recorded, not only shown
  });

  it('the lease is renewed while the task runs (a working task is never reported failed by its own instance)', async () => {
    const { tasks, services } = await setup({}, { leaseMs: 300 });
    // Held until the lease has been renewed, so the call is still running whatever the machine's load.
    const r = await tasks.create(alice, slow, { ms: 1000, hold: 'lease' });
    if (r.kind !== 'task') throw new Error('no task');
    const coll = services.store.collection(TASKS);
    const first = (await coll.get(r.task.taskId))!.leaseUntil;
    // Past the first lease, so a renewal is due and a lost one would show as failed.
    await new Promise((res) => setTimeout(res, 500));
    while ((await coll.get(r.task.taskId))!.leaseUntil <= first) await new Promise((res) => setTimeout(res, 20));
    expect((await tasks.get(alice, r.task.taskId))?.status).toBe('working');
    expect((await coll.get(r.task.taskId))!.leaseUntil).toBeGreaterThan(first);
    held.get('lease')!();
    await until(tasks, alice, r.task.taskId, 'completed');
  });

  it('shutting down fails the tasks still running here', async () => {
    const { tasks, services } = await setup();
    const r = await tasks.create(alice, slow, { ms: 60_000 });
    if (r.kind !== 'task') throw new Error('no task');
    await tasks.close();
    expect((await services.store.collection(TASKS).get(r.task.taskId))).toMatchObject({ status: 'failed', error: { data: { reason: 'shutdown' } } });
  });

  it('settle() resolves once the tasks running here have recorded their outcome (a draining server waits for it)', async () => {
    const { tasks, services } = await setup();
    await tasks.settle(); // none running
    const a = await tasks.create(alice, slow, { ms: 0, hold: 'settle-a' });
    const b = await tasks.create(bob, slow, { ms: 0, hold: 'settle-b' });
    if (a.kind !== 'task' || b.kind !== 'task') throw new Error('no task');
    let settled = false;
    const settling = tasks.settle().then(() => (settled = true));
    held.get('settle-a')!();
    await until(tasks, alice, a.task.taskId, 'completed');
    expect(settled).toBe(false);
    held.get('settle-b')!();
    await settling;
    expect(await services.store.collection(TASKS).get(b.task.taskId)).toMatchObject({ status: 'completed' });
  });

  it('a task asked for after shutdown is 503 STORAGE_UNAVAILABLE with the Retry-After of every storage refusal', async () => {
    const { tasks } = await setup();
    await tasks.close();
    const r = await tasks.create(alice, slow, { ms: 0 });
    if (r.kind !== 'done' || r.outcome.ok) throw new Error('not refused');
    const err = r.outcome.error;
    expect([err.code, err.status, err.headers]).toStrictEqual(['STORAGE_UNAVAILABLE', 503, { 'Retry-After': String(STORE_RETRY_AFTER_SECONDS) }]);
    expect(STORE_RETRY_AFTER_SECONDS).toBe(5);
  });

  it('polling is bounded per owner by a token bucket', async () => {
    const { tasks } = await setup({ RATE_LIMITS: 'on' }, { poll: { perSecond: 10, burst: 5 } }, true);
    for (let i = 0; i < 5; i++) tasks.poll(alice);
    expect(() => tasks.poll(alice)).toThrow(PollTooFast);
    tasks.poll(bob); // another owner has its own bucket
    clock.advance(100);
    tasks.poll(alice);
    try {
      tasks.poll(alice);
      throw new Error('not refused');
    } catch (err) {
      expect(err).toBeInstanceOf(PollTooFast);
      expect((err as PollTooFast).retryAfterMs).toBe(100);
    }
  });

  // RATE_LIMITS=off "turns off all of it" (docs/auth.md), yet polling still answered 429.
  it('polling is not bounded with RATE_LIMITS=off', async () => {
    const { tasks } = await setup({ RATE_LIMITS: 'off' }, { poll: { perSecond: 10, burst: 5 } }, true);
    expect(() => {
      for (let i = 0; i < 50; i++) tasks.poll(alice);
    }).not.toThrow();
  });
});
