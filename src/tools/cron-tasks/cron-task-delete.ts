import { z } from 'zod';
import { defineTool } from '../../registry.js';
import { REMOVE } from '../../state/index.js';
import { logsOf, notFound, ownerAgent, tasksOf } from './model.js';
import { agentIdInput, taskIdInput } from './schemas.js';

export const cronTaskDelete = defineTool({
  name: 'cron_task_delete',
  title: 'Delete a cron task',
  description: 'Delete a task with its logs and any webhook deliveries still pending. Cannot be undone.',
  input: z.object({
    task_id: taskIdInput,
    agent_id: agentIdInput,
  }),
  output: z.object({
    deleted: z.literal(true).describe('Always true (an unknown task is a 404)'),
    task_id: z.string().describe('The deleted task'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  rest: { method: 'DELETE', path: '/api/cron-task/{task_id}' },
  example: { task_id: 'task_AbCdEfGhIjKlMnOp', agent_id: 'my-agent' },
  handler: async ({ task_id, agent_id }, { services, caller }) => {
    const oa = ownerAgent(caller, agent_id);
    let found = false;
    await tasksOf(services.store).update(task_id, (cur) => {
      found = cur !== undefined && cur.owner_agent === oa;
      return found ? REMOVE : undefined;
    });
    if (!found) throw notFound(task_id, agent_id);
    const logs = logsOf(services.store);
    const entries = await logs.query({ index: 'task_id', eq: task_id });
    await Promise.all(entries.map((l) => logs.delete(l.log_id)));
    return { deleted: true as const, task_id };
  },
});
