import { z } from 'zod';
import { defineTool } from '../../registry.js';
import { ownerAgent, tasksOf, toPublic } from './model.js';
import { agentIdInput, taskOutput } from './schemas.js';

export const cronTaskList = defineTool({
  name: 'cron_task_list',
  title: 'List cron tasks',
  description:
    "List an agent's cron tasks, soonest next_run_at first. With due=true only the tasks that are due now (status due or retrying): " +
    'do the work, then report it with cron_task_done. Missed occurrences collapse into one due state.',
  group: 'cron tasks',
  input: z.object({
    agent_id: agentIdInput,
    due: z.boolean().default(false).describe('true: only the tasks due now (status due or retrying)'),
  }),
  output: z.object({
    agent_id: z.string().describe('The agent'),
    tasks: z.array(taskOutput).describe('The tasks, soonest next_run_at first'),
    count: z.number().int().describe('Number of tasks returned'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  rest: { method: 'GET', path: '/api/cron-task' },
  example: { agent_id: 'my-agent', due: true },
  handler: async ({ agent_id, due }, { services, caller }) => {
    const now = services.clock.now();
    const records = await tasksOf(services.store).query({ index: 'owner_agent', eq: ownerAgent(caller, agent_id) });
    let tasks = records.map((r) => toPublic(r, now));
    if (due) tasks = tasks.filter((t) => t.status !== 'scheduled');
    tasks.sort((a, b) => (a.next_run_at < b.next_run_at ? -1 : a.next_run_at > b.next_run_at ? 1 : a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.task_id < b.task_id ? -1 : 1));
    return { agent_id, tasks, count: tasks.length };
  },
});
