/**
 * Issue 33: `export` / `import` carry the steering state of cron tasks — a timed pause, a
 * completed one-shot, a claim and its lease (the run_id still reports), a retry, grace_seconds
 * (a late task is late on the target too), and the keyless
 * owner (another address still cannot reach the task) — from the file store to Redis and back.
 */
import { Readable, Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
import { cronTaskPause } from '../src/tools/cron-tasks/cron-task-pause.js';
import { LOGS, TASKS } from '../src/tools/cron-tasks/stored.js';
import { tempDir, testServices, toolContext } from './harness.js';
import { describeRedis, startRedis, type TestRedis } from './redis.js';

type Json = Record<string, any>;
const T0 = Date.parse('2026-03-02T08:30:00.000Z');
const ALICE = '198.51.100.1';
const BOB = '198.51.100.2';

function transferSuite(source: () => Record<string, string>, target: () => Record<string, string>): void {
  it('every steering field survives export and import; the keyless owner still decides who reaches a task', async () => {
    const clock = manualClock(T0);
    const at = (t: string) => (clock.t = Date.parse(t));
    const open: Services[] = [];
    const call = async (s: Services, ip: string, tool: unknown, input: Json): Promise<Json> => {
      const r = await invokeTool(tool as AnyTool, input, toolContext(s, { ip }));
      return r.json as Json;
    };
    try {
      const src = await testServices(source(), { clock });
      open.push(src);
      const paused = (await call(src, ALICE, cronTaskCreate, { name: 'paused', schedule: '0 * * * *' })).task as Json;
      await call(src, ALICE, cronTaskPause, { task_id: paused.task_id, paused_until: '2026-03-02T12:30:00Z' });
      const once = (await call(src, ALICE, cronTaskCreate, { name: 'once', run_at: '2026-03-02T08:00:00Z' })).task as Json;
      await call(src, ALICE, cronTaskDone, { task_id: once.task_id, message: 'ran' });
      const claimed = (await call(src, ALICE, cronTaskCreate, { name: 'claimed', schedule: '0 * * * *', max_retries: 2 })).task as Json;
      const retrying = (await call(src, ALICE, cronTaskCreate, { name: 'retrying', schedule: '0 * * * *', max_retries: 2 })).task as Json;
      const bobs = (await call(src, BOB, cronTaskCreate, { name: 'bob', schedule: '0 * * * *' })).task as Json;
      const late = (await call(src, ALICE, cronTaskCreate, { name: 'late', run_at: '2026-03-02T08:45:00Z', grace_seconds: 60 })).task as Json;
      at('2026-03-02T09:00:00.000Z');
      const claim = await call(src, ALICE, cronTaskClaim, { task_id: claimed.task_id, lease_seconds: 600 });
      await call(src, ALICE, cronTaskDone, { task_id: retrying.task_id, status: 'failed' });
      at('2026-03-02T09:01:00.000Z');

      const aliceBefore = (await call(src, ALICE, cronTaskList, {})).tasks as Json[];
      expect(aliceBefore.map((t) => [t.name, t.status, t.grace_seconds])).toStrictEqual([
        ['late', 'late', 60],
        ['retrying', 'retrying', undefined],
        ['claimed', 'claimed', undefined],
        ['paused', 'paused', undefined],
        ['once', 'completed', undefined],
      ]);
      expect(aliceBefore.map((t) => [t.name, t.status])).toStrictEqual([
        ['late', 'late'],
        ['retrying', 'retrying'],
        ['claimed', 'claimed'],
        ['paused', 'paused'],
        ['once', 'completed'],
      ]);
      const logsBefore = await Promise.all(aliceBefore.map(async (t) => (await call(src, ALICE, cronTaskLogs, { task_id: t.task_id })).logs));

      let text = '';
      await exportStore(
        src.store,
        new Writable({
          write(chunk: Buffer, _enc, cb) {
            text += chunk.toString();
            cb();
          },
        }),
        { known: [TASKS, LOGS] },
      );
      const dst = await testServices(target(), { clock });
      open.push(dst);
      // merge: the target's own start-up may already have written records of other families.
      await importStore(dst.store, Readable.from([text]), { merge: true, known: [TASKS, LOGS] });

      expect((await call(dst, ALICE, cronTaskList, {})).tasks).toStrictEqual(aliceBefore);
      expect(await Promise.all(aliceBefore.map(async (t) => (await call(dst, ALICE, cronTaskLogs, { task_id: t.task_id })).logs))).toStrictEqual(logsBefore);
      // The keyless owner came along: Bob sees only his task and cannot reach Alice's.
      expect(((await call(dst, BOB, cronTaskList, {})).tasks as Json[]).map((t) => t.task_id)).toStrictEqual([bobs.task_id]);
      await expect(call(dst, BOB, cronTaskDone, { task_id: claimed.task_id, run_id: claim.run_id })).rejects.toMatchObject({ code: 'NOT_FOUND' });
      // The claim and its lease: a second claim is refused, the holder's run_id reports with its duration.
      await expect(call(dst, ALICE, cronTaskClaim, { task_id: claimed.task_id })).rejects.toMatchObject({ code: 'CONFLICT', details: { lease_expires_at: '2026-03-02T09:10:00.000Z' } });
      const done = await call(dst, ALICE, cronTaskDone, { task_id: claimed.task_id, run_id: claim.run_id });
      expect(done.log).toMatchObject({ status: 'done', started_at: '2026-03-02T09:00:00.000Z', duration_ms: 60_000 });
      // grace_seconds came along. No scheduler runs here: the claim (which ends the lateness) first logs that the run was late, once.
      expect((await call(dst, ALICE, cronTaskClaim, { task_id: late.task_id })).task).toMatchObject({ status: 'claimed', grace_seconds: 60 });
      expect(((await call(dst, ALICE, cronTaskLogs, { task_id: late.task_id })).logs as Json[]).map((l) => [l.status, l.created_at])).toStrictEqual([['late', '2026-03-02T08:46:00.000Z']]);
      // The timed pause ends by itself on the target too.
      at('2026-03-02T12:30:00.000Z');
      expect(((await call(dst, ALICE, cronTaskList, {})).tasks as Json[]).find((t) => t.task_id === paused.task_id)).toMatchObject({ status: 'scheduled', next_run_at: '2026-03-02T13:00:00.000Z' });
    } finally {
      for (const s of open) await closeServices(s);
    }
  });
}

describe('cron task export/import, file store → file store', () => {
  transferSuite(
    () => ({ DATA_DIR: tempDir('dtb-cron-x-') }),
    () => ({ DATA_DIR: tempDir('dtb-cron-y-') }),
  );
});

describeRedis('cron task export/import across stores', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });
  describe('file store → Redis', () => {
    transferSuite(
      () => ({ DATA_DIR: tempDir('dtb-cron-x-') }),
      () => ({ REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix() }),
    );
  });
  describe('Redis → file store', () => {
    transferSuite(
      () => ({ REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix() }),
      () => ({ DATA_DIR: tempDir('dtb-cron-y-') }),
    );
  });
});
