/** The cron task tools over REST (app.request) and MCP (a real SDK client), per docs/contract.md §3. */
import { afterEach, describe, expect, it } from 'vitest';
import { manualClock } from '../src/core/clock.js';
import { mcpError, startTestApp, type TestApp } from './harness.js';
import { jsonWithoutRequestId } from './request-ids.js';

const T0 = Date.parse('2026-03-02T08:30:00.000Z');
const clock = manualClock(T0);
const apps: TestApp[] = [];
async function app(): Promise<TestApp> {
  const a = await startTestApp({ overrides: { clock } });
  apps.push(a);
  return a;
}
afterEach(async () => {
  clock.t = T0;
  for (const a of apps.splice(0)) await a.close();
});

type Json = Record<string, any>;
const json = async (r: Response): Promise<Json> => (await jsonWithoutRequestId(r)) as Json;

describe('cron tasks over REST', () => {
  it('create (201) → list → due → done → logs → agent logs → delete, with the contract paths', async () => {
    const t = await app();
    const created = await t.request('POST', '/api/cron-task', { agent_id: 'rest-bot', name: 'hourly', schedule: '0 * * * *', tags: ['x'], max_retries: 1, extra: 'ignored' });
    expect(created.status).toBe(201);
    const body = await json(created);
    const task = body.task as Json;
    expect(body).toStrictEqual({
      success: true,
      task: {
        task_id: task.task_id,
        agent_id: 'rest-bot',
        name: 'hourly',
        schedule: '0 * * * *',
        timezone: 'UTC',
        description: '',
        tags: ['x'],
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
      },
    });
    const id = task.task_id as string;

    expect(await json(await t.request('GET', '/api/cron-task?agent_id=rest-bot&due=true'))).toStrictEqual({ success: true, agent_id: 'rest-bot', tasks: [], count: 0 });
    expect(await json(await t.request('GET', '/api/cron-task?agent_id=rest-bot'))).toStrictEqual({ success: true, agent_id: 'rest-bot', tasks: [task], count: 1 });
    clock.t = Date.parse('2026-03-02T09:00:10.000Z');
    expect(await json(await t.request('GET', '/api/cron-task?agent_id=rest-bot&due=true'))).toStrictEqual({
      success: true,
      agent_id: 'rest-bot',
      tasks: [{ ...task, status: 'due' }],
      count: 1,
    });

    // Body optional: failed with a message → retrying.
    const failed = await t.request('POST', `/api/cron-task/${id}/done?agent_id=rest-bot`, { status: 'failed', message: 'boom' });
    expect(failed.status).toBe(200);
    const f = await json(failed);
    expect(f.retry).toStrictEqual({ scheduled: true, attempt: 1, max_retries: 1 });
    expect(f.task).toMatchObject({ status: 'retrying', retry_count: 1 });
    // No body at all, no content type: done.
    const ok = await t.app.request(`/api/cron-task/${id}/done?agent_id=rest-bot`, { method: 'POST' });
    expect(ok.status).toBe(200);
    const d = await json(ok);
    expect(d).toStrictEqual({
      success: true,
      task: { ...task, status: 'scheduled', run_count: 1, last_run_at: '2026-03-02T09:00:10.000Z', last_status: 'done', next_run_at: '2026-03-02T10:00:00.000Z', updated_at: '2026-03-02T09:00:10.000Z' },
      log: { log_id: d.log.log_id, task_id: id, agent_id: 'rest-bot', status: 'done', message: null, attempt: 2, created_at: '2026-03-02T09:00:10.000Z' },
      retry: { scheduled: false, attempt: 0, max_retries: 1 },
    });

    const logs = await json(await t.request('GET', `/api/cron-task/${id}/logs?agent_id=rest-bot&limit=1`));
    expect(logs).toStrictEqual({ success: true, task_id: id, logs: [d.log] });
    const agentLogs = await json(await t.request('GET', '/api/cron-task/logs?agent_id=rest-bot'));
    expect(agentLogs.agent_id).toBe('rest-bot');
    expect(agentLogs.logs.map((l: Json) => [l.status, l.message])).toStrictEqual([
      ['done', null],
      ['failed', 'boom'],
    ]);

    const templates = await json(await t.request('GET', '/api/cron-task/templates'));
    expect(templates.success).toBe(true);
    expect(templates.templates.length).toBeGreaterThanOrEqual(12);
    expect(templates.templates[0]).toStrictEqual({ template_id: 'daily-morning', name: 'Daily morning', schedule: '0 9 * * *', description: 'Every day at 09:00', tags: ['daily'] });

    const del = await t.request('DELETE', `/api/cron-task/${id}?agent_id=rest-bot`);
    expect(del.status).toBe(200);
    expect(await json(del)).toStrictEqual({ success: true, deleted: true, task_id: id });
    const again = await t.request('DELETE', `/api/cron-task/${id}?agent_id=rest-bot`);
    expect(again.status).toBe(404);
    expect(await json(again)).toStrictEqual({
      success: false,
      error: { code: 'NOT_FOUND', message: `No task "${id}" for agent "rest-bot"`, details: { task_id: id, agent_id: 'rest-bot' } },
    });
  });

  it('without agent_id every call means agent "default"; another agent gets 404', async () => {
    const t = await app();
    const { task } = await json(await t.request('POST', '/api/cron-task', { name: 'd', schedule: '@daily' }));
    expect(task.agent_id).toBe('default');
    expect((await json(await t.request('GET', '/api/cron-task'))).count).toBe(1);
    expect((await t.request('POST', `/api/cron-task/${task.task_id as string}/done?agent_id=other`)).status).toBe(404);
    expect((await t.request('GET', `/api/cron-task/${task.task_id as string}/logs?agent_id=other`)).status).toBe(404);
    expect((await t.request('DELETE', `/api/cron-task/${task.task_id as string}?agent_id=other`)).status).toBe(404);
    expect((await t.request('POST', `/api/cron-task/${task.task_id as string}/done`)).status).toBe(200);
  });

  it('bad input: 400 for fields, 422 for a cron expression that does not parse, never 500', async () => {
    const t = await app();
    const cases: Array<[string, string, unknown, number, string]> = [
      ['POST', '/api/cron-task', { name: 'x', schedule: '* * *' }, 422, 'PARSE_ERROR'],
      ['POST', '/api/cron-task', { name: 'x', schedule: 'every day' }, 422, 'PARSE_ERROR'],
      ['POST', '/api/cron-task', { name: 'x', schedule: '@daily', timezone: 'Nowhere/City' }, 400, 'INVALID_INPUT'],
      ['POST', '/api/cron-task', { name: 'x', schedule: '@daily', max_retries: 11 }, 400, 'INVALID_INPUT'],
      ['POST', '/api/cron-task', { name: 'x', schedule: '@daily', callback_url: 'file:///etc/passwd' }, 400, 'URL_NOT_ALLOWED'],
      ['POST', '/api/cron-task', { schedule: '@daily' }, 400, 'INVALID_INPUT'],
      ['POST', '/api/cron-task', '[1]', 400, 'INVALID_INPUT'],
      ['POST', '/api/cron-task', '{"name":', 400, 'INVALID_INPUT'],
      ['GET', '/api/cron-task?due=yes', undefined, 400, 'INVALID_INPUT'],
      ['GET', '/api/cron-task?agent_id=%00', undefined, 400, 'INVALID_INPUT'],
      ['GET', `/api/cron-task?agent_id=${'a'.repeat(5000)}`, undefined, 400, 'INVALID_INPUT'],
      ['GET', '/api/cron-task/logs?limit=0', undefined, 400, 'INVALID_INPUT'],
      ['GET', '/api/cron-task/logs?limit=501', undefined, 400, 'INVALID_INPUT'],
      ['GET', '/api/cron-task/task_x/logs?limit=abc', undefined, 400, 'INVALID_INPUT'],
      ['POST', '/api/cron-task/task_x/done', { status: 'maybe' }, 400, 'INVALID_INPUT'],
      ['POST', '/api/cron-task/task%2F..%2Fx/done', {}, 400, 'INVALID_INPUT'],
      ['POST', '/api/cron-task/task_x/done', {}, 404, 'NOT_FOUND'],
      ['DELETE', '/api/cron-task/__proto__', undefined, 404, 'NOT_FOUND'],
      ['DELETE', '/api/cron-task/constructor', undefined, 404, 'NOT_FOUND'],
    ];
    for (const [method, path, body, status, code] of cases) {
      const r = await t.request(method, path, body);
      const b = await json(r);
      expect([method, path, r.status, b.error?.code]).toStrictEqual([method, path, status, code]);
    }
  });

  it('the uniform face POST /api/tools/{name} reaches the same tasks', async () => {
    const t = await app();
    const { task } = await json(await t.request('POST', '/api/tools/cron_task_create', { name: 'anon', schedule: '@daily' }));
    expect((await json(await t.request('GET', '/api/cron-task'))).tasks.map((x: Json) => x.task_id)).toStrictEqual([task.task_id]);
  });
});

describe('cron tasks over MCP', () => {
  it('lists the cron tools with honest annotations; create/list/done work; errors are isError results', async () => {
    const t = await app();
    const client = await t.mcpClient();
    const tools = (await client.listTools()).tools.filter((x) => x.name.startsWith('cron_task_'));
    expect(tools.map((x) => [x.name, x.annotations?.readOnlyHint, x.annotations?.destructiveHint ?? false])).toStrictEqual([
      ['cron_task_create', false, false],
      ['cron_task_list', true, false],
      ['cron_task_done', false, false],
      ['cron_task_logs', true, false],
      ['cron_task_agent_logs', true, false],
      ['cron_task_templates', true, false],
      ['cron_task_delete', false, true],
      ['cron_task_update', false, true],
      ['cron_task_pause', false, false],
      ['cron_task_resume', false, false],
      ['cron_task_run_now', false, false],
      ['cron_task_claim', false, false],
    ]);
    const created = await client.callTool({ name: 'cron_task_create', arguments: { agent_id: 'mcp', name: 'm', schedule: '*/30 * * * *', timezone: 'Europe/Paris' } });
    expect(created.isError).toBeFalsy();
    const task = (created.structuredContent as Json).task as Json;
    expect(task).toMatchObject({ agent_id: 'mcp', next_run_at: '2026-03-02T09:00:00.000Z', status: 'scheduled' });
    expect(JSON.parse((created.content as Array<{ text: string }>)[0]!.text)).toStrictEqual(created.structuredContent);
    clock.t = Date.parse('2026-03-02T09:00:00.000Z');
    const due = await client.callTool({ name: 'cron_task_list', arguments: { agent_id: 'mcp', due: true } });
    expect(due.structuredContent).toStrictEqual({ agent_id: 'mcp', tasks: [{ ...task, status: 'due' }], count: 1 });
    const done = await client.callTool({ name: 'cron_task_done', arguments: { agent_id: 'mcp', task_id: task.task_id } });
    expect((done.structuredContent as Json).task.next_run_at).toBe('2026-03-02T09:30:00.000Z');
    const bad = await client.callTool({ name: 'cron_task_create', arguments: { name: 'x', schedule: '0 0 31 2 *' } });
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent).toBeUndefined();
    expect(mcpError(bad)).toMatchObject({ code: 'PARSE_ERROR', message: expect.stringContaining('never runs') });
    const missing = await client.callTool({ name: 'cron_task_logs', arguments: { task_id: task.task_id } });
    expect(mcpError(missing)).toStrictEqual({ code: 'NOT_FOUND', message: `No task "${task.task_id as string}" for agent "default"`, details: { task_id: task.task_id, agent_id: 'default' } });
  });
});
