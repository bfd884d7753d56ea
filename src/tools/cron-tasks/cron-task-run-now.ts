import { z } from 'zod';
import { defineTool } from '../../registry.js';
import { toPublic } from './model.js';
import { agentIdInput, taskIdInput, taskOutput } from './schemas.js';
import { steerTask } from './steer.js';
import { applyRunNow } from './steering.js';

export const cronTaskRunNow = defineTool({
  name: 'cron_task_run_now',
  title: 'Run a cron task now',
  description:
    'Make a task due now, once (its webhook is sent too, with scheduled_for = now); its schedule is untouched: after the report it waits for its next fire time. ' +
    'A task already due stays as it is; a paused or completed task is a 409.',
  input: z.object({
    task_id: taskIdInput,
    agent_id: agentIdInput,
  }),
  output: z.object({ task: taskOutput.describe('The task, now due') }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  errors: ['CONFLICT'],
  rest: { method: 'POST', path: '/api/cron-task/{task_id}/run' },
  example: { task_id: 'task_AbCdEfGhIjKlMnOp', agent_id: 'my-agent' },
  handler: async ({ task_id, agent_id }, ctx) => {
    const now = ctx.services.clock.now();
    const rec = await steerTask(ctx, agent_id, task_id, applyRunNow);
    return { task: toPublic(rec, now) };
  },
});
