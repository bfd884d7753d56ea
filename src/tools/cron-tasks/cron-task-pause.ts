import { z } from 'zod';
import { ToolError } from '../../errors.js';
import { defineTool } from '../../registry.js';
import { toPublic } from './model.js';
import { agentIdInput, taskIdInput, taskOutput } from './schemas.js';
import { steerTask } from './steer.js';
import { applyPause, applyResume } from './steering.js';

const PAUSE_END = Date.parse('9999-01-01T00:00:00.000Z');

export const cronTaskPause = defineTool({
  name: 'cron_task_pause',
  title: 'Pause a cron task',
  description:
    'Pause a task: status "paused", never due, no webhook (deliveries still pending are dropped) until cron_task_resume — or, with paused_until, until then: ' +
    'it resumes by itself and next_run_at is already its first fire time after paused_until. Occurrences missed while paused are not replayed.',
  input: z.object({
    task_id: taskIdInput,
    agent_id: agentIdInput,
    paused_until: z.iso
      .datetime({ offset: true })
      .optional()
      .describe('When the task resumes by itself (ISO 8601 date-time with Z or an offset, in the future); without it the task stays paused until cron_task_resume'),
  }),
  output: z.object({ task: taskOutput.describe('The paused task') }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  errors: ['CONFLICT'],
  rest: { method: 'POST', path: '/api/cron-task/{task_id}/pause' },
  example: { task_id: 'task_AbCdEfGhIjKlMnOp', agent_id: 'my-agent', paused_until: '2026-12-01T08:00:00Z' },
  handler: async ({ task_id, agent_id, paused_until }, ctx) => {
    const now = ctx.services.clock.now();
    const until = paused_until === undefined ? null : Date.parse(paused_until);
    if (until !== null && !(until > now && until < PAUSE_END)) {
      throw new ToolError('INVALID_INPUT', 'paused_until must be in the future (before year 9999)', [{ path: 'paused_until', message: 'must be in the future' }]);
    }
    const rec = await steerTask(ctx, agent_id, task_id, (t, at) => applyPause(t, until, at));
    return { task: toPublic(rec, now) };
  },
});

export const cronTaskResume = defineTool({
  name: 'cron_task_resume',
  title: 'Resume a cron task',
  description: 'Resume a paused task: it waits for its first fire time after now (missed occurrences are not replayed); a one-shot whose run_at has passed is due at once. A task that is not paused is answered unchanged.',
  input: z.object({
    task_id: taskIdInput,
    agent_id: agentIdInput,
  }),
  output: z.object({ task: taskOutput.describe('The task after resuming') }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  rest: { method: 'POST', path: '/api/cron-task/{task_id}/resume' },
  example: { task_id: 'task_AbCdEfGhIjKlMnOp', agent_id: 'my-agent' },
  handler: async ({ task_id, agent_id }, ctx) => {
    const now = ctx.services.clock.now();
    const rec = await steerTask(ctx, agent_id, task_id, applyResume);
    return { task: toPublic(rec, now) };
  },
});
