import { afterEach, describe, expect, it } from 'vitest';
import { toolHarness, type HarnessOptions, type ToolHarness } from '../../../test/harness.js';
import type { AnyTool, Caller } from '../../registry.js';
import { cronTaskAgentLogs } from './cron-task-agent-logs.js';
import { cronTaskCreate } from './cron-task-create.js';
import { cronTaskDelete } from './cron-task-delete.js';
import { cronTaskDone } from './cron-task-done.js';
import { cronTaskList } from './cron-task-list.js';
import { cronTaskLogs } from './cron-task-logs.js';
import { cronTaskTemplates } from './cron-task-templates.js';
import { manualClock } from '../../core/clock.js';
import { LIMITS, logsOf, tasksOf } from './model.js';

// Monday 2 March 2026, 08:30 UTC.
const T0 = Date.parse('2026-03-02T08:30:00.000Z');
const MIN = 60_000;
const HOUR = 60 * MIN;
const clock = manualClock(T0);
const running: ToolHarness[] = [];

async function harness(opts: HarnessOptions = {}): Promise<ToolHarness> {
  const s = await toolHarness({ clock, ...opts });
  running.push(s);
  return s;
}
afterEach(async () => {
  clock.t = T0;
  for (const s of running.splice(0)) await s.close();
});

type Json = Record<string, unknown>;
const call = (s: ToolHarness, tool: AnyTool, input: unknown, caller: Partial<Caller> = {}): Promise<Json> => s.call(tool, input, { caller });
const failure = (s: ToolHarness, tool: AnyTool, input: unknown, caller: Partial<Caller> = {}) => s.failure(tool, input, { caller });

const iso = (t: number) => new Date(t).toISOString();
const create = async (s: ToolHarness, input: Json, caller: Partial<Caller> = {}) => (await call(s, cronTaskCreate, input, caller)).task as Json;
const done = (s: ToolHarness, input: Json, caller: Partial<Caller> = {}) => call(s, cronTaskDone, input, caller);
const list = (s: ToolHarness, input: Json = {}, caller: Partial<Caller> = {}) => call(s, cronTaskList, input, caller);

describe('cron_task_create', () => {
  it('returns the whole task; next_run_at is the first fire time after creation', async () => {
    const s = await harness();
    const task = await create(s, { name: '  Report ', schedule: ' 0  9 * * 1-5 ', description: 'daily\nreport', tags: ['a', ' b '], max_retries: 2 });
    expect(task).toStrictEqual({
      task_id: task.task_id,
      agent_id: 'default',
      name: 'Report',
      schedule: '0 9 * * 1-5',
      timezone: 'UTC',
      description: 'daily\nreport',
      tags: ['a', 'b'],
      callback_url: null,
      max_retries: 2,
      status: 'scheduled',
      retry_count: 0,
      run_count: 0,
      last_run_at: null,
      last_status: null,
      next_run_at: '2026-03-02T09:00:00.000Z',
      created_at: iso(T0),
      updated_at: iso(T0),
    });
    expect(task.task_id).toMatch(/^task_[A-Za-z0-9]{16}$/);
  });

  it('a task with callback_url gets a whsec_ secret of 32 random bytes, shown on create only', async () => {
    const s = await harness();
    const task = await create(s, { agent_id: 'bot', name: 'hook', schedule: '@hourly', callback_url: 'https://hooks.example.com/x?y=1', timezone: 'Asia/Tokyo' });
    const secret = task.callback_secret as string;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(task).toMatchObject({ callback_url: 'https://hooks.example.com/x?y=1', schedule: '@hourly', timezone: 'Asia/Tokyo', next_run_at: '2026-03-02T09:00:00.000Z' });
    const other = await create(s, { agent_id: 'bot', name: 'hook2', schedule: '@hourly', callback_url: 'https://hooks.example.com/x' });
    expect(other.callback_secret).not.toBe(secret);
    const listed = (await list(s, { agent_id: 'bot' })).tasks as Json[];
    expect(listed).toHaveLength(2);
    for (const t of listed) expect(Object.keys(t)).not.toContain('callback_secret');
    expect(JSON.stringify(await done(s, { task_id: task.task_id, agent_id: 'bot' }))).not.toContain('whsec_');
  });

  it('refuses a callback URL to a literal private address when private fetches are off', async () => {
    const s = await harness({ env: { FETCH_ALLOW_PRIVATE: 'false' } });
    expect(await failure(s, cronTaskCreate, { name: 'x', schedule: '@daily', callback_url: 'http://127.0.0.1:8080/hook' })).toMatchObject({
      status: 400,
      code: 'URL_NOT_ALLOWED',
      details: [{ path: 'callback_url', message: expect.stringContaining('not allowed') }],
    });
    expect(await failure(s, cronTaskCreate, { name: 'x', schedule: '@daily', callback_url: 'http://[::ffff:10.0.0.1]/hook' })).toMatchObject({ code: 'URL_NOT_ALLOWED' });
  });

  const bad: Array<[string, Json, number, string]> = [
    ['name missing', { schedule: '@daily' }, 400, 'INVALID_INPUT'],
    ['name empty', { name: '  ', schedule: '@daily' }, 400, 'INVALID_INPUT'],
    ['name too long', { name: 'n'.repeat(LIMITS.name + 1), schedule: '@daily' }, 400, 'INVALID_INPUT'],
    ['name with control chars', { name: 'a\u0000b', schedule: '@daily' }, 400, 'INVALID_INPUT'],
    ['name not a string', { name: ['x'], schedule: '@daily' }, 400, 'INVALID_INPUT'],
    ['schedule missing', { name: 'x' }, 400, 'INVALID_INPUT'],
    ['schedule too long', { name: 'x', schedule: '*'.repeat(LIMITS.schedule + 1) }, 400, 'INVALID_INPUT'],
    ['schedule with 6 fields', { name: 'x', schedule: '0 0 9 * * *' }, 422, 'PARSE_ERROR'],
    ['schedule out of range', { name: 'x', schedule: '61 * * * *' }, 422, 'PARSE_ERROR'],
    ['schedule empty', { name: 'x', schedule: '' }, 422, 'PARSE_ERROR'],
    ['schedule unknown macro', { name: 'x', schedule: '@every_5m' }, 422, 'PARSE_ERROR'],
    ['schedule never fires', { name: 'x', schedule: '0 0 30 2 *' }, 422, 'PARSE_ERROR'],
    ['schedule quartz extension', { name: 'x', schedule: '0 0 L * ?' }, 422, 'PARSE_ERROR'],
    ['timezone unknown', { name: 'x', schedule: '@daily', timezone: 'Mars/Olympus' }, 400, 'INVALID_INPUT'],
    ['timezone offset', { name: 'x', schedule: '@daily', timezone: '+02:00' }, 400, 'INVALID_INPUT'],
    ['timezone path', { name: 'x', schedule: '@daily', timezone: '../../etc/passwd' }, 400, 'INVALID_INPUT'],
    ['description too long', { name: 'x', schedule: '@daily', description: 'd'.repeat(LIMITS.description + 1) }, 400, 'INVALID_INPUT'],
    ['description with NUL', { name: 'x', schedule: '@daily', description: 'a\u0000' }, 400, 'INVALID_INPUT'],
    ['tags not an array', { name: 'x', schedule: '@daily', tags: 'a,b' }, 400, 'INVALID_INPUT'],
    ['too many tags', { name: 'x', schedule: '@daily', tags: Array.from({ length: LIMITS.tags + 1 }, (_, i) => `t${i}`) }, 400, 'INVALID_INPUT'],
    ['tag too long', { name: 'x', schedule: '@daily', tags: ['t'.repeat(LIMITS.tag + 1)] }, 400, 'INVALID_INPUT'],
    ['tag empty', { name: 'x', schedule: '@daily', tags: [''] }, 400, 'INVALID_INPUT'],
    ['tag not a string', { name: 'x', schedule: '@daily', tags: [{}] }, 400, 'INVALID_INPUT'],
    ['callback_url not a URL', { name: 'x', schedule: '@daily', callback_url: 'not a url' }, 400, 'INVALID_INPUT'],
    ['callback_url ftp', { name: 'x', schedule: '@daily', callback_url: 'ftp://example.com/x' }, 400, 'URL_NOT_ALLOWED'],
    ['callback_url javascript', { name: 'x', schedule: '@daily', callback_url: 'javascript:alert(1)' }, 400, 'URL_NOT_ALLOWED'],
    ['callback_url with credentials', { name: 'x', schedule: '@daily', callback_url: 'https://u:p@example.com/' }, 400, 'URL_NOT_ALLOWED'],
    ['callback_url bad port', { name: 'x', schedule: '@daily', callback_url: 'http://example.com:25/' }, 400, 'URL_NOT_ALLOWED'],
    ['callback_url too long', { name: 'x', schedule: '@daily', callback_url: `https://example.com/${'a'.repeat(LIMITS.callbackUrl)}` }, 400, 'INVALID_INPUT'],
    ['max_retries negative', { name: 'x', schedule: '@daily', max_retries: -1 }, 400, 'INVALID_INPUT'],
    ['max_retries 11', { name: 'x', schedule: '@daily', max_retries: 11 }, 400, 'INVALID_INPUT'],
    ['max_retries fractional', { name: 'x', schedule: '@daily', max_retries: 1.5 }, 400, 'INVALID_INPUT'],
    ['max_retries string', { name: 'x', schedule: '@daily', max_retries: '3' }, 400, 'INVALID_INPUT'],
    ['agent_id empty', { name: 'x', schedule: '@daily', agent_id: '' }, 400, 'INVALID_INPUT'],
    ['agent_id too long', { name: 'x', schedule: '@daily', agent_id: 'a'.repeat(LIMITS.agentId + 1) }, 400, 'INVALID_INPUT'],
    ['agent_id with a pipe', { name: 'x', schedule: '@daily', agent_id: 'a|b' }, 400, 'INVALID_INPUT'],
    ['agent_id with a slash', { name: 'x', schedule: '@daily', agent_id: '../x' }, 400, 'INVALID_INPUT'],
    ['agent_id a number', { name: 'x', schedule: '@daily', agent_id: 7 }, 400, 'INVALID_INPUT'],
  ];
  for (const [what, input, status, code] of bad) {
    it(`bad input: ${what} → ${status} ${code}`, async () => {
      const s = await harness();
      expect(await failure(s, cronTaskCreate, input)).toMatchObject({ status, code });
      expect(await tasksOf(s.services.store).count()).toBe(0);
    });
  }

  it('a bad schedule says why (422 with the reason)', async () => {
    const s = await harness();
    expect(await failure(s, cronTaskCreate, { name: 'x', schedule: '0 25 * * *' })).toStrictEqual({
      status: 422,
      code: 'PARSE_ERROR',
      message: 'hour 25 out of range 0-23',
      details: { field: 'hour', value: '25' },
    });
  });

  it(`caps an agent at ${LIMITS.tasksPerAgent} tasks (409); other agents are not affected`, async () => {
    const s = await harness();
    await Promise.all(Array.from({ length: LIMITS.tasksPerAgent }, (_, i) => create(s, { agent_id: 'busy', name: `t${i}`, schedule: '@daily' })));
    expect(await failure(s, cronTaskCreate, { agent_id: 'busy', name: 'one more', schedule: '@daily' })).toStrictEqual({
      status: 409,
      code: 'CONFLICT',
      message: `Agent "busy" already has ${LIMITS.tasksPerAgent} tasks; delete some first`,
      details: { agent_id: 'busy', limit: LIMITS.tasksPerAgent },
    });
    expect((await create(s, { agent_id: 'calm', name: 'x', schedule: '@daily' })).agent_id).toBe('calm');
  });
});

describe('state machine', () => {
  it('scheduled → due → done → scheduled at the next fire time', async () => {
    const s = await harness();
    const t = await create(s, { agent_id: 'a1', name: 'hourly', schedule: '0 * * * *' });
    const id = t.task_id as string;
    expect((await list(s, { agent_id: 'a1', due: true })).count).toBe(0);
    clock.t = Date.parse('2026-03-02T09:00:00.000Z');
    // Due exactly at next_run_at.
    const due = await list(s, { agent_id: 'a1', due: true });
    expect(due).toStrictEqual({ agent_id: 'a1', tasks: [{ ...t, status: 'due' }], count: 1 });
    clock.t = Date.parse('2026-03-02T09:00:42.000Z');
    const r = await done(s, { task_id: id, agent_id: 'a1' });
    expect(r).toStrictEqual({
      task: {
        ...t,
        status: 'scheduled',
        run_count: 1,
        last_run_at: '2026-03-02T09:00:42.000Z',
        last_status: 'done',
        next_run_at: '2026-03-02T10:00:00.000Z',
        updated_at: '2026-03-02T09:00:42.000Z',
      },
      log: { log_id: (r.log as Json).log_id, task_id: id, agent_id: 'a1', status: 'done', message: null, attempt: 1, created_at: '2026-03-02T09:00:42.000Z' },
      retry: { scheduled: false, attempt: 0, max_retries: 0 },
    });
    expect((await list(s, { agent_id: 'a1', due: true })).count).toBe(0);
    expect((await list(s, { agent_id: 'a1' })).count).toBe(1);
  });

  it('missed occurrences coalesce into one due state; done moves to the next fire time after now', async () => {
    const s = await harness();
    const t = await create(s, { agent_id: 'a1', name: 'every 15', schedule: '*/15 * * * *' });
    clock.t = T0 + 5 * HOUR + 7 * MIN; // 13:37, twenty occurrences missed
    const due = (await list(s, { agent_id: 'a1', due: true })).tasks as Json[];
    expect(due.map((x) => [x.task_id, x.status, x.next_run_at])).toStrictEqual([[t.task_id, 'due', '2026-03-02T08:45:00.000Z']]);
    const r = await done(s, { task_id: t.task_id, agent_id: 'a1', status: 'done', message: 'caught up' });
    expect((r.task as Json).next_run_at).toBe('2026-03-02T13:45:00.000Z');
    expect((r.task as Json).run_count).toBe(1);
    expect((r.log as Json).message).toBe('caught up');
  });

  it('failed with retries left → retrying (stays due); the last allowed failure → failed, next occurrence', async () => {
    const s = await harness();
    const t = await create(s, { agent_id: 'a1', name: 'flaky', schedule: '0 9 * * *', max_retries: 2 });
    const id = t.task_id as string;
    clock.t = Date.parse('2026-03-02T09:01:00.000Z');
    const f1 = await done(s, { task_id: id, agent_id: 'a1', status: 'failed', message: 'upstream 503' });
    expect(f1.task).toStrictEqual({
      ...t,
      status: 'retrying',
      retry_count: 1,
      last_run_at: '2026-03-02T09:01:00.000Z',
      next_run_at: '2026-03-02T09:00:00.000Z',
      updated_at: '2026-03-02T09:01:00.000Z',
    });
    expect(f1.retry).toStrictEqual({ scheduled: true, attempt: 1, max_retries: 2 });
    expect(f1.log).toMatchObject({ status: 'failed', message: 'upstream 503', attempt: 1 });
    expect(((await list(s, { agent_id: 'a1', due: true })).tasks as Json[]).map((x) => x.status)).toStrictEqual(['retrying']);

    clock.t += MIN;
    const f2 = await done(s, { task_id: id, agent_id: 'a1', status: 'failed' });
    expect(f2.retry).toStrictEqual({ scheduled: true, attempt: 2, max_retries: 2 });
    expect(f2.task).toMatchObject({ status: 'retrying', retry_count: 2, last_status: null, run_count: 0 });
    expect(f2.log).toMatchObject({ status: 'failed', message: null, attempt: 2 });

    clock.t += MIN;
    const f3 = await done(s, { task_id: id, agent_id: 'a1', status: 'failed', message: 'still down' });
    expect(f3.retry).toStrictEqual({ scheduled: false, attempt: 0, max_retries: 2 });
    expect(f3.task).toStrictEqual({
      ...t,
      status: 'scheduled',
      retry_count: 0,
      run_count: 0,
      last_run_at: '2026-03-02T09:03:00.000Z',
      last_status: 'failed',
      next_run_at: '2026-03-03T09:00:00.000Z',
      updated_at: '2026-03-02T09:03:00.000Z',
    });
    expect(f3.log).toMatchObject({ status: 'failed', attempt: 3 });
  });

  it('a retry that succeeds: done resets retry_count and counts the run', async () => {
    const s = await harness();
    const t = await create(s, { name: 'flaky', schedule: '0 9 * * *', max_retries: 3 });
    clock.t = Date.parse('2026-03-02T09:05:00.000Z');
    await done(s, { task_id: t.task_id, status: 'failed' });
    const r = await done(s, { task_id: t.task_id });
    expect(r.task).toMatchObject({ status: 'scheduled', retry_count: 0, run_count: 1, last_status: 'done', next_run_at: '2026-03-03T09:00:00.000Z' });
    expect(r.log).toMatchObject({ status: 'done', attempt: 2 });
    expect(r.retry).toStrictEqual({ scheduled: false, attempt: 0, max_retries: 3 });
  });

  it('failed with max_retries 0 goes straight to the next occurrence', async () => {
    const s = await harness();
    const t = await create(s, { name: 'once', schedule: '30 8 * * *' });
    clock.t = Date.parse('2026-03-03T08:31:00.000Z');
    const r = await done(s, { task_id: t.task_id, status: 'failed', message: 'nope' });
    expect(r.task).toMatchObject({ status: 'scheduled', retry_count: 0, run_count: 0, last_status: 'failed', next_run_at: '2026-03-04T08:30:00.000Z' });
    expect(r.retry).toStrictEqual({ scheduled: false, attempt: 0, max_retries: 0 });
  });

  it('done before the task is due counts the run and keeps waiting for the same fire time', async () => {
    const s = await harness();
    const t = await create(s, { name: 'early', schedule: '0 9 * * *' });
    const r = await done(s, { task_id: t.task_id });
    expect(r.task).toMatchObject({ status: 'scheduled', run_count: 1, next_run_at: '2026-03-02T09:00:00.000Z' });
  });

  it('failed before the task is due, with retries left, makes it due now', async () => {
    const s = await harness();
    const t = await create(s, { name: 'early', schedule: '0 9 * * *', max_retries: 1 });
    const r = await done(s, { task_id: t.task_id, status: 'failed' });
    expect(r.task).toMatchObject({ status: 'retrying', retry_count: 1, next_run_at: iso(T0) });
  });

  it('DST: 02:30 daily in Europe/Berlin fires once a day through both transitions', async () => {
    const s = await harness();
    clock.t = Date.parse('2026-03-27T12:00:00.000Z');
    const t = await create(s, { name: 'night job', schedule: '30 2 * * *', timezone: 'Europe/Berlin' });
    const runs = [t.next_run_at];
    for (let i = 0; i < 3; i++) {
      clock.t = Date.parse(runs[runs.length - 1] as string);
      expect(((await list(s, { due: true })).tasks as Json[]).length).toBe(1);
      runs.push(((await done(s, { task_id: t.task_id })).task as Json).next_run_at);
    }
    // 28 Mar CET (+1); 29 Mar 02:30 does not exist (02:00 → 03:00): it runs at 03:30 CEST, the
    // instant "02:30 +01:00" names; then CEST (+2).
    expect(runs).toStrictEqual(['2026-03-28T01:30:00.000Z', '2026-03-29T01:30:00.000Z', '2026-03-30T00:30:00.000Z', '2026-03-31T00:30:00.000Z']);

    clock.t = Date.parse('2026-10-23T12:00:00.000Z');
    const u = await create(s, { name: 'autumn', schedule: '30 2 * * *', timezone: 'Europe/Berlin' });
    const autumn = [u.next_run_at];
    for (let i = 0; i < 3; i++) {
      clock.t = Date.parse(autumn[autumn.length - 1] as string);
      autumn.push(((await done(s, { task_id: u.task_id })).task as Json).next_run_at);
    }
    // 25 Oct 02:30 happens twice (03:00 CEST → 02:00 CET): it runs once, at the first.
    expect(autumn).toStrictEqual(['2026-10-24T00:30:00.000Z', '2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z', '2026-10-27T01:30:00.000Z']);
  });

  it('DST: 09:00 in America/New_York moves from 14:00Z to 13:00Z across the March change', async () => {
    const s = await harness();
    clock.t = Date.parse('2026-03-06T15:00:00.000Z');
    const t = await create(s, { name: 'ny', schedule: '0 9 * * *', timezone: 'America/New_York' });
    expect(t.next_run_at).toBe('2026-03-07T14:00:00.000Z');
    clock.t = Date.parse('2026-03-07T14:00:00.000Z');
    expect(((await done(s, { task_id: t.task_id })).task as Json).next_run_at).toBe('2026-03-08T13:00:00.000Z');
  });
});

describe('ownership', () => {
  it('another agent or another key gets 404 for a task, exactly as for a task that does not exist', async () => {
    const s = await harness();
    const mine = await create(s, { agent_id: 'alice', name: 'mine', schedule: '@daily' }, { keyId: 'k1' });
    const id = mine.task_id as string;
    const strangers: Array<[string, Partial<Caller>]> = [
      ['bob', { keyId: 'k1' }],
      ['alice', { keyId: 'k2' }],
      ['alice', { keyId: null }],
    ];
    clock.t = T0 + 2 * 24 * HOUR;
    for (const [agent, caller] of strangers) {
      expect((await list(s, { agent_id: agent }, caller)).count).toBe(0);
      expect((await list(s, { agent_id: agent, due: true }, caller)).count).toBe(0);
      for (const [tool, extra] of [
        [cronTaskDone, {}],
        [cronTaskDone, { status: 'failed' }],
        [cronTaskLogs, {}],
        [cronTaskDelete, {}],
      ] as const) {
        const theirs = await failure(s, tool, { task_id: id, agent_id: agent, ...extra }, caller);
        const none = await failure(s, tool, { task_id: 'task_doesnotexist0000', agent_id: agent, ...extra }, caller);
        expect(theirs).toStrictEqual({ ...none, message: none.message.replace('task_doesnotexist0000', id), details: { task_id: id, agent_id: agent } });
        expect(theirs.status).toBe(404);
      }
      expect((await call(s, cronTaskAgentLogs, { agent_id: agent }, caller)).logs).toStrictEqual([]);
    }
    // Nothing changed for the owner.
    expect((await list(s, { agent_id: 'alice' }, { keyId: 'k1' })).tasks).toStrictEqual([{ ...mine, status: 'due' }]);
    expect((await done(s, { task_id: id, agent_id: 'alice' }, { keyId: 'k1' })).task).toMatchObject({ run_count: 1 });
  });

  it('key ids that look like index separators cannot reach another key’s tasks', async () => {
    const s = await harness();
    const a = await create(s, { agent_id: 'x', name: 'a', schedule: '@daily' }, { keyId: 'a' });
    const b = await create(s, { agent_id: 'y', name: 'b', schedule: '@daily' }, { keyId: 'a|x' });
    const c = await create(s, { agent_id: 'x', name: 'c', schedule: '@daily' }, { keyId: 'a}' });
    clock.t = T0 + 2 * 24 * HOUR;
    const ids = async (agent: string, keyId: string, due = false) => ((await list(s, { agent_id: agent, due }, { keyId })).tasks as Json[]).map((t) => t.task_id);
    for (const due of [false, true]) {
      expect(await ids('x', 'a', due)).toStrictEqual([a.task_id]);
      expect(await ids('y', 'a|x', due)).toStrictEqual([b.task_id]);
      expect(await ids('x', 'a}', due)).toStrictEqual([c.task_id]);
    }
  });

  it('keyless tasks are private to the client address (issue 33); without agent_id the agent is "default"', async () => {
    const s = await harness();
    const t = await create(s, { name: 'anon', schedule: '@daily' }, { ip: '10.0.0.1' });
    const named = await create(s, { agent_id: 'bot', name: 'named', schedule: '@daily' }, { ip: '10.0.0.1' });
    expect(t.agent_id).toBe('default');
    clock.t = T0 + 2 * 24 * HOUR;
    const ids = async (input: Json, caller: Partial<Caller>) => ((await list(s, input, caller)).tasks as Json[]).map((x) => x.task_id);
    expect(await ids({}, { ip: '10.0.0.1' })).toStrictEqual([t.task_id]);
    expect(await ids({ agent_id: 'bot', due: true }, { ip: '10.0.0.1' })).toStrictEqual([named.task_id]);
    for (const other of [{ ip: '10.0.0.2' }, { ip: 'stdio', transport: 'stdio' as const }, { keyId: 'k1' }]) {
      for (const [agent, task] of [['default', t], ['bot', named]] as const) {
        expect(await ids({ agent_id: agent }, other)).toStrictEqual([]);
        expect(await ids({ agent_id: agent, due: true }, other)).toStrictEqual([]);
        for (const tool of [cronTaskDone, cronTaskLogs, cronTaskDelete]) {
          expect(await failure(s, tool, { task_id: task.task_id, agent_id: agent }, other)).toMatchObject({ status: 404, code: 'NOT_FOUND' });
        }
        expect((await call(s, cronTaskAgentLogs, { agent_id: agent }, other)).logs).toStrictEqual([]);
      }
    }
    expect((await done(s, { task_id: t.task_id }, { ip: '10.0.0.1' })).task).toMatchObject({ run_count: 1 });
  });
});

describe('logs', () => {
  it('newest first, limited, per task and per agent', async () => {
    const s = await harness({ disk: true });
    const a = await create(s, { agent_id: 'ag', name: 'a', schedule: '* * * * *', max_retries: 10 });
    const b = await create(s, { agent_id: 'ag', name: 'b', schedule: '* * * * *' });
    const expected: Array<[string, string, string | null]> = [];
    for (let i = 0; i < 6; i++) {
      const task = i % 2 ? b : a;
      const status = i % 3 === 0 ? 'failed' : 'done';
      await done(s, { task_id: task.task_id, agent_id: 'ag', status, message: `m${i}` });
      expected.unshift([task.task_id as string, status, `m${i}`]);
    }
    const all = (await call(s, cronTaskAgentLogs, { agent_id: 'ag' })) as { agent_id: string; logs: Json[] };
    expect(all.agent_id).toBe('ag');
    expect(all.logs.map((l) => [l.task_id, l.status, l.message])).toStrictEqual(expected);
    expect(all.logs.every((l) => l.created_at === iso(T0) && l.agent_id === 'ag')).toBe(true);
    expect(((await call(s, cronTaskAgentLogs, { agent_id: 'ag', limit: 2 })).logs as Json[]).map((l) => l.message)).toStrictEqual(['m5', 'm4']);
    const la = (await call(s, cronTaskLogs, { task_id: a.task_id, agent_id: 'ag' })) as { task_id: string; logs: Json[] };
    expect(la.task_id).toBe(a.task_id);
    expect(la.logs.map((l) => [l.message, l.attempt])).toStrictEqual([
      ['m4', 1],
      ['m2', 2],
      ['m0', 1],
    ]);
    expect(((await call(s, cronTaskLogs, { task_id: b.task_id, agent_id: 'ag', limit: 1 })).logs as Json[]).map((l) => l.message)).toStrictEqual(['m5']);
    for (const limit of [0, 501, 1.5, '10', -1]) {
      expect(await failure(s, cronTaskLogs, { task_id: a.task_id, agent_id: 'ag', limit })).toMatchObject({ status: 400, code: 'INVALID_INPUT' });
      expect(await failure(s, cronTaskAgentLogs, { agent_id: 'ag', limit })).toMatchObject({ status: 400, code: 'INVALID_INPUT' });
    }
  });

  it(`keeps the last ${LIMITS.logsPerTask} entries of a task`, async () => {
    const s = await harness();
    const t = await create(s, { name: 'chatty', schedule: '* * * * *' });
    for (let i = 0; i < LIMITS.logsPerTask + 7; i++) await done(s, { task_id: t.task_id, message: `m${i}` });
    const logs = (await call(s, cronTaskLogs, { task_id: t.task_id, limit: 500 })).logs as Json[];
    expect(logs).toHaveLength(LIMITS.logsPerTask);
    expect(logs[0]!.message).toBe(`m${LIMITS.logsPerTask + 6}`);
    expect(logs[logs.length - 1]!.message).toBe('m7');
    expect(await logsOf(s.services.store).count()).toBe(LIMITS.logsPerTask);
  });

  it('done: bad status, message and ids are 400', async () => {
    const s = await harness();
    const t = await create(s, { name: 'x', schedule: '@daily' });
    for (const input of [
      { task_id: t.task_id, status: 'ok' },
      { task_id: t.task_id, status: 'FAILED' },
      { task_id: t.task_id, message: 'm'.repeat(LIMITS.message + 1) },
      { task_id: t.task_id, message: 42 },
      { task_id: t.task_id, message: 'a\u0007b' },
      { task_id: '' },
      { task_id: 'a/b' },
      { task_id: 't'.repeat(LIMITS.taskId + 1) },
      { task_id: 'x', agent_id: 'bad agent' },
      {},
    ]) {
      expect(await failure(s, cronTaskDone, input)).toMatchObject({ status: 400, code: 'INVALID_INPUT' });
    }
    expect(await logsOf(s.services.store).count()).toBe(0);
  });
});

describe('cron_task_delete', () => {
  it('removes the task and its logs; a second delete is 404', async () => {
    const s = await harness({ disk: true });
    const t = await create(s, { agent_id: 'd', name: 'x', schedule: '@daily' });
    const keep = await create(s, { agent_id: 'd', name: 'y', schedule: '@daily' });
    await done(s, { task_id: t.task_id, agent_id: 'd' });
    await done(s, { task_id: keep.task_id, agent_id: 'd' });
    expect(await call(s, cronTaskDelete, { task_id: t.task_id, agent_id: 'd' })).toStrictEqual({ deleted: true, task_id: t.task_id });
    expect(((await list(s, { agent_id: 'd' })).tasks as Json[]).map((x) => x.task_id)).toStrictEqual([keep.task_id]);
    expect(((await call(s, cronTaskAgentLogs, { agent_id: 'd' })).logs as Json[]).map((l) => l.task_id)).toStrictEqual([keep.task_id]);
    expect(await failure(s, cronTaskDelete, { task_id: t.task_id, agent_id: 'd' })).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    expect(await failure(s, cronTaskLogs, { task_id: t.task_id, agent_id: 'd' })).toMatchObject({ status: 404, code: 'NOT_FOUND' });
  });
});

describe('cron_task_templates', () => {
  it('at least 12 templates, the contract ids among them, each accepted by create as is', async () => {
    const s = await harness();
    const { templates } = (await call(s, cronTaskTemplates, {})) as { templates: Json[] };
    expect(templates.length).toBeGreaterThanOrEqual(12);
    const byId = new Map(templates.map((t) => [t.template_id, t]));
    expect(byId.size).toBe(templates.length);
    expect(byId.get('daily-morning')).toStrictEqual({ template_id: 'daily-morning', name: 'Daily morning', schedule: '0 9 * * *', description: 'Every day at 09:00', tags: ['daily'] });
    for (const id of ['daily-evening', 'hourly', 'every-30min', 'weekday-morning', 'weekday-evening', 'weekly', 'monthly']) expect(byId.has(id), id).toBe(true);
    expect(byId.get('every-30min')!.schedule).toBe('*/30 * * * *');
    for (const tpl of templates) {
      const task = await create(s, { ...tpl, agent_id: 'tpl' });
      expect(task).toMatchObject({ name: tpl.name, schedule: tpl.schedule, description: tpl.description, tags: tpl.tags });
    }
  });
});
