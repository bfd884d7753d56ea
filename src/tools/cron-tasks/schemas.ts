/** Zod pieces shared by the seven cron task tools. */
import { z } from 'zod';
import { AGENT_ID_PATTERN, DEFAULT_AGENT, LIMITS, TASK_ID_PATTERN } from './model.js';

// C0/C1 control characters; newlines and tabs are allowed in descriptions and messages only.
export const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
export const CONTROL_EXCEPT_WS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;

export const agentIdInput = z
  .string()
  .min(1)
  .max(LIMITS.agentId)
  .regex(AGENT_ID_PATTERN, 'must be letters, digits and . _ : @ -')
  .default(DEFAULT_AGENT)
  .describe(`The agent the task belongs to (1-${LIMITS.agentId} characters of A-Z a-z 0-9 . _ : @ -; default "${DEFAULT_AGENT}")`);

export const taskIdInput = z
  .string()
  .min(1)
  .max(LIMITS.taskId)
  .regex(TASK_ID_PATTERN, 'must be letters, digits, _ and -')
  .describe('The task id returned by cron_task_create');

export const limitInput = z.number().int().min(1).max(500).default(50).describe('How many entries to return, newest first: 1-500 (default 50)');

// Output fields whose name says it all carry no description: tools/list is paid for in context (issue 34).
export const taskOutput = z.object({
  task_id: z.string(),
  agent_id: z.string(),
  name: z.string(),
  schedule: z.string().describe('Cron expression (5 fields or a macro)'),
  timezone: z.string().describe('IANA time zone the schedule runs in'),
  description: z.string().describe('Description (may be empty)'),
  tags: z.array(z.string()),
  callback_url: z.string().nullable().describe('Webhook called when the task falls due, or null'),
  max_retries: z.number().int().describe('Retries allowed after a reported failure (0-10)'),
  status: z.enum(['scheduled', 'due', 'retrying']).describe('scheduled (next_run_at in the future), due, or retrying (due again after a reported failure)'),
  retry_count: z.number().int().describe('Failures reported for the current occurrence that were retried'),
  run_count: z.number().int().describe('Occurrences reported done'),
  last_run_at: z.string().nullable().describe('Time of the last done/failed report, or null'),
  last_status: z.enum(['done', 'failed']).nullable().describe('Outcome of the last finished occurrence, or null'),
  next_run_at: z.string().describe('The occurrence the task waits for (in the past while due)'),
  created_at: z.string(),
  updated_at: z.string().describe('Time of the last change'),
});

export const logOutput = z.object({
  log_id: z.string().describe('Log entry id (sorts in recording order)'),
  task_id: z.string(),
  agent_id: z.string(),
  status: z.enum(['done', 'failed', 'webhook_ok', 'webhook_failed']).describe('What happened'),
  message: z.string().nullable().describe("The agent's message, or what the webhook delivery saw"),
  attempt: z.number().int().describe('Run attempt (1 = first try, 2 = first retry …) or webhook delivery attempt (1-5)'),
  created_at: z.string().describe('When it was recorded'),
});
