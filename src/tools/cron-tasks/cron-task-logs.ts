import { z } from 'zod';
import { defineTool } from '../../registry.js';
import { logsOf, ownedTask, toPublicLog } from './model.js';
import { agentIdInput, limitInput, logOutput, taskIdInput } from './schemas.js';

export const cronTaskLogs = defineTool({
  name: 'cron_task_logs',
  title: 'Cron task logs',
  description: 'The log of one task, newest first: done and failed reports, and webhook delivery outcomes (webhook_ok / webhook_failed). The last 100 entries per task are kept.',
  input: z.object({
    task_id: taskIdInput,
    agent_id: agentIdInput,
    limit: limitInput,
  }),
  output: z.object({
    task_id: z.string().describe('The task'),
    logs: z.array(logOutput).describe('Entries, newest first'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  rest: { method: 'GET', path: '/api/cron-task/{task_id}/logs' },
  example: { task_id: 'task_AbCdEfGhIjKlMnOp', agent_id: 'my-agent', limit: 20 },
  handler: async ({ task_id, agent_id, limit }, { services, caller }) => {
    await ownedTask(services.store, caller, agent_id, task_id);
    const logs = await logsOf(services.store).query({ index: 'task_id', eq: task_id, order: 'desc', limit });
    return { task_id, logs: logs.map(toPublicLog) };
  },
});
