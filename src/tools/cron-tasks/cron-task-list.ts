import { z } from 'zod';
import { defineTool } from '../../registry.js';
import { agentRange, ownerAgent, tasksOf, toPublic } from './model.js';
import { agentIdInput, taskOutput } from './schemas.js';
import { expireClaim } from './transitions.js';

export const cronTaskList = defineTool({
  name: 'cron_task_list',
  view: 'tasks',
  title: 'List cron tasks',
  description:
    "List an agent's cron tasks, soonest next_run_at first (ties by task_id; claimed, paused and completed ones after). With due=true only the tasks that are due now (status due, retrying or late; a claimed task is left out until its lease ends): " +
    'do the work, then report it with cron_task_done. Missed occurrences collapse into one due state.',
  input: z.object({
    agent_id: agentIdInput,
    due: z.boolean().default(false).describe('true: only the tasks due now (status due, retrying or late)'),
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
    // An index range: only this agent's tasks (with due, only the due ones) are read, in order.
    const records = await tasksOf(services.store).query(agentRange(ownerAgent(caller, agent_id), due ? now : undefined));
    // A lapsed claim reads as applied (a failed attempt); the next write or the scheduler stores it.
    let tasks = records.map((r) => toPublic(expireClaim(r, now).next, now));
    // A late task is still due: lateness only says nobody has taken it within its grace.
    if (due) tasks = tasks.filter((t) => t.status === 'due' || t.status === 'retrying' || t.status === 'late');
    return { agent_id, tasks, count: tasks.length };
  },
});
