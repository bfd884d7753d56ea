import { z } from 'zod';
import { defineTool } from '../../registry.js';
import { logsOf, ownerAgent, toPublicLog } from './model.js';
import { agentIdInput, limitInput, logOutput } from './schemas.js';

export const cronTaskAgentLogs = defineTool({
  name: 'cron_task_agent_logs',
  title: 'Cron logs of an agent',
  description: "The log entries of all of an agent's tasks, newest first (done, failed, webhook_ok, webhook_failed).",
  input: z.object({
    agent_id: agentIdInput,
    limit: limitInput,
  }),
  output: z.object({
    agent_id: z.string().describe('The agent'),
    logs: z.array(logOutput).describe('Entries, newest first'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  rest: { method: 'GET', path: '/api/cron-task/logs' },
  example: { agent_id: 'my-agent', limit: 50 },
  handler: async ({ agent_id, limit }, { services, caller }) => {
    const logs = await logsOf(services.store).query({ index: 'owner_agent', eq: ownerAgent(caller, agent_id), order: 'desc', limit });
    return { agent_id, logs: logs.map(toPublicLog) };
  },
});
