import { z } from 'zod';
import { ToolError } from '../../errors.js';
import { defineTool } from '../../registry.js';
import { zoneSchema } from '../../lib/zone-time.js';
import { checkCallback } from './cron-task-create.js';
import { ids, ownedTask, toPublic } from './model.js';
import { checkedSchedule, type Plan } from './plan.js';
import { agentIdInput, fields, taskIdInput, taskOutput } from './schemas.js';
import { steerTask } from './steer.js';
import { applyUpdate, type Changes } from './steering.js';

export const cronTaskUpdate = defineTool({
  name: 'cron_task_update',
  title: 'Update a cron task',
  description:
    'Change a task in place: name, schedule (or run_at for a one-shot), timezone, description, tags, callback_url, max_retries, grace_seconds; fields left out stay as they are, null clears an optional one ' +
    '(timezone → UTC, description → "", tags → [], callback_url → none, max_retries → 0, grace_seconds → never late). A new schedule, run_at or timezone recomputes next_run_at from now (DST-correct). ' +
    'A new callback_url gets a new callback_secret, returned only in this answer.',
  input: z.object({
    task_id: taskIdInput,
    agent_id: agentIdInput,
    name: fields.name.optional(),
    schedule: fields.schedule.optional().describe(`${fields.schedule.description}; makes the task recurring (not with run_at)`),
    run_at: fields.run_at.optional().describe(`${fields.run_at.description}; makes the task a one-shot (not with schedule)`),
    timezone: zoneSchema('timezone').nullable().optional().describe('IANA time zone the schedule runs in; null: UTC'),
    description: fields.description.nullable().optional().describe(`${fields.description.description}; null: empty`),
    tags: fields.tags.nullable().optional().describe(`${fields.tags.description}; null: none`),
    callback_url: fields.callback_url.nullable().optional().describe(`${fields.callback_url.description}; null: no webhook`),
    max_retries: fields.max_retries.nullable().optional().describe(`${fields.max_retries.description}; null: 0`),
    grace_seconds: fields.grace_seconds.nullable().optional().describe(`${fields.grace_seconds.description}; null: never late`),
  }),
  output: z.object({
    task: taskOutput
      .extend({
        callback_secret: z.string().optional().describe('whsec_… secret of a new callback_url; present only when callback_url changed, and shown only now'),
      })
      .describe('The task after the update'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
  errors: ['PARSE_ERROR', 'URL_NOT_ALLOWED'],
  rest: { method: 'PATCH', path: '/api/cron-task/{task_id}' },
  example: { task_id: 'task_AbCdEfGhIjKlMnOp', agent_id: 'my-agent', schedule: '30 8 * * 1-5', timezone: 'Europe/Paris', description: null },
  handler: async (input, ctx) => {
    const { services, caller } = ctx;
    const now = services.clock.now();
    if (input.schedule !== undefined && input.run_at !== undefined) {
      throw new ToolError('INVALID_INPUT', 'Give schedule or run_at, not both', [{ path: 'run_at', message: 'not with schedule' }]);
    }
    // Read for validation only (the schedule is checked in the zone it will run in); the change is atomic below.
    const cur = await ownedTask(services.store, caller, input.agent_id, input.task_id);
    const zone = input.timezone === undefined ? cur.timezone : (input.timezone ?? 'UTC');
    let plan: Plan | undefined;
    if (input.schedule !== undefined) plan = { schedule: checkedSchedule(input.schedule, zone, now), run_at: null };
    else if (input.run_at !== undefined) plan = { schedule: null, run_at: new Date(input.run_at).toISOString() };
    else if (cur.schedule !== null && zone !== cur.timezone) checkedSchedule(cur.schedule, zone, now);
    const changes: Changes = {
      ...(input.name !== undefined && { name: input.name }),
      ...(plan !== undefined && { plan }),
      ...(input.timezone !== undefined && { timezone: zone }),
      ...(input.description !== undefined && { description: input.description ?? '' }),
      ...(input.tags !== undefined && { tags: input.tags ?? [] }),
      ...(input.max_retries !== undefined && { max_retries: input.max_retries ?? 0 }),
      ...(input.grace_seconds !== undefined && { grace_seconds: input.grace_seconds }),
      ...(input.callback_url !== undefined && {
        callback: { url: input.callback_url === null ? null : checkCallback(input.callback_url, (u) => services.fetcher.checkUrl(u)), secret: ids.secret() },
      }),
    };
    let issued = false;
    const rec = await steerTask(ctx, input.agent_id, input.task_id, (t, at) => {
      const r = applyUpdate(t, changes, at);
      issued = r.secretIssued;
      return r.next;
    });
    const task = toPublic(rec, now);
    return { task: issued && rec.callback_secret !== null ? { ...task, callback_secret: rec.callback_secret } : task };
  },
});
