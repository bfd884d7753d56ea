import { z } from 'zod';
import { ToolError } from '../../errors.js';
import { defineTool } from '../../registry.js';
import { zoneSchema } from '../../lib/zone-time.js';
import { agentRange, ids, LIMITS, ownerAgent, ownerOf, tasksOf, toPublic, wakeScheduler, type TaskRecord } from './model.js';
import { planInput } from './plan.js';
import { planned } from './transitions.js';
import { agentIdInput, fields, taskOutput } from './schemas.js';

const MAX_ID_ATTEMPTS = 8;

/** The URL as stored: http(s), no credentials, no bad port, no literal non-public IP (§6). */
export function checkCallback(raw: string, check: (u: string) => URL): string {
  try {
    return check(raw).href;
  } catch (err) {
    if (err instanceof ToolError) {
      throw new ToolError(err.code, `callback_url: ${err.message}`, [{ path: 'callback_url', message: err.message }]);
    }
    throw err;
  }
}

export const cronTaskCreate = defineTool({
  name: 'cron_task_create',
  title: 'Create a cron task',
  description:
    'Register recurring work for an agent: a name and a 5-field cron schedule (or @hourly/@daily/@weekly/@monthly/@yearly) in an IANA time zone; ' +
    'or, with run_at instead of schedule, a one-shot task that runs once and then reads status completed. ' +
    'The task falls due at each fire time; poll cron_task_list with due=true, then report with cron_task_done. ' +
    'With callback_url the service also POSTs a signed webhook (Standard Webhooks) when the task falls due; the signing secret callback_secret is returned only here.',
  input: z.object({
    agent_id: agentIdInput,
    name: fields.name,
    schedule: fields.schedule.optional().describe(`${fields.schedule.description}; or give run_at instead`),
    run_at: fields.run_at.optional(),
    timezone: zoneSchema('timezone').default('UTC').describe('IANA time zone the schedule runs in (default UTC), e.g. "Europe/Paris"'),
    description: fields.description.default(''),
    tags: fields.tags.default([]),
    callback_url: fields.callback_url.optional(),
    max_retries: fields.max_retries.default(0),
    grace_seconds: fields.grace_seconds.optional(),
  }),
  output: z.object({
    task: taskOutput
      .extend({
        callback_secret: z
          .string()
          .optional()
          .describe('whsec_… secret that signs this task’s webhooks; present only with callback_url and shown only now'),
      })
      .describe('The new task'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  errors: ['PARSE_ERROR', 'URL_NOT_ALLOWED'],
  rest: { method: 'POST', path: '/api/cron-task', status: 201 },
  inputRules: [{ exactlyOne: ['schedule', 'run_at'] }],
  example: { agent_id: 'my-agent', name: 'Morning report', schedule: '0 9 * * 1-5', timezone: 'Europe/Paris', tags: ['reports'], max_retries: 2 },
  handler: async (input, { services, caller }) => {
    const now = services.clock.now();
    const plan = planInput(input, now);
    const callbackUrl = input.callback_url === undefined ? null : checkCallback(input.callback_url, (u) => services.fetcher.checkUrl(u));
    const tasks = tasksOf(services.store);
    const oa = ownerAgent(caller, input.agent_id);
    const full = () =>
      new ToolError('CONFLICT', `Agent "${input.agent_id}" already has ${LIMITS.tasksPerAgent} tasks; delete some first`, {
        agent_id: input.agent_id,
        limit: LIMITS.tasksPerAgent,
      });
    const iso = new Date(now).toISOString();
    const base = planned(
      {
        task_id: '',
        owner: ownerOf(caller),
        agent_id: input.agent_id,
        owner_agent: oa,
        agent_next: '',
        name: input.name,
        ...plan,
        timezone: input.timezone,
        description: input.description,
        tags: input.tags,
        callback_url: callbackUrl,
        callback_secret: callbackUrl === null ? null : ids.secret(),
        max_retries: input.max_retries,
        ...(input.grace_seconds !== undefined && { grace_seconds: input.grace_seconds }),
        retry_count: 0,
        run_count: 0,
        last_run_at: null,
        last_status: null,
        next_run_at: iso,
        created_at: iso,
        updated_at: iso,
        notify_at: null,
        notify_round: 0,
        webhooks: [],
        wake_at: null,
      },
      now,
    );
    let created: TaskRecord | undefined;
    for (let i = 0; i < MAX_ID_ATTEMPTS && !created; i++) {
      const rec: TaskRecord = { ...base, task_id: ids.task() };
      // The cap per (owner, agent), counted and inserted in one atomic step (across instances on Redis).
      const res = await tasks.insertCapped(rec, { within: agentRange(oa), max: LIMITS.tasksPerAgent }, { durability: 'replicated' });
      if (res === 'full') throw full();
      if (res === 'inserted') created = rec;
    }
    if (!created) throw new Error(`no free task id after ${MAX_ID_ATTEMPTS} attempts`);
    if (created.wake_at !== null) wakeScheduler(services);
    const task = toPublic(created, now);
    return { task: created.callback_secret === null ? task : { ...task, callback_secret: created.callback_secret } };
  },
});
