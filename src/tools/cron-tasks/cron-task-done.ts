import { z } from 'zod';
import { defineTool } from '../../registry.js';
import { appendLog, LIMITS, notFound, ownerAgent, tasksOf, toPublic, toPublicLog, wakeScheduler } from './model.js';
import { agentIdInput, CONTROL_EXCEPT_WS, logOutput, taskIdInput, taskOutput } from './schemas.js';
import { applyReport } from './transitions.js';

export const cronTaskDone = defineTool({
  name: 'cron_task_done',
  title: 'Report a cron task run',
  description:
    'Report the outcome of a due task. Without status (or status "done"): the run counts, and the task waits for its next fire time. ' +
    'With status "failed" (and a message): while retries are left (max_retries) the task stays due with status "retrying" and retry.scheduled true; ' +
    'otherwise the occurrence is recorded as failed and the task moves to its next fire time. Every report is logged.',
  input: z.object({
    task_id: taskIdInput,
    agent_id: agentIdInput,
    status: z.enum(['done', 'failed']).default('done').describe('done (default) or failed'),
    message: z
      .string()
      .max(LIMITS.message)
      .refine((s) => !CONTROL_EXCEPT_WS.test(s), 'must not contain control characters other than newline and tab')
      .optional()
      .describe(`What happened, kept in the log (at most ${LIMITS.message} characters)`),
  }),
  output: z.object({
    task: taskOutput.describe('The task after the report'),
    log: logOutput.describe('The log entry recorded'),
    retry: z
      .object({
        scheduled: z.boolean().describe('true: the failure will be retried; the task is due again now (status retrying)'),
        attempt: z.number().int().describe('The retry now pending (1 = first retry), 0 when none'),
        max_retries: z.number().int().describe("The task's max_retries"),
      })
      .describe('What happens next'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  rest: { method: 'POST', path: '/api/cron-task/{task_id}/done' },
  example: { task_id: 'task_AbCdEfGhIjKlMnOp', agent_id: 'my-agent', status: 'failed', message: 'upstream API returned 503' },
  handler: async ({ task_id, agent_id, status, message }, { services, caller }) => {
    const now = services.clock.now();
    const oa = ownerAgent(caller, agent_id);
    let outcome: ReturnType<typeof applyReport> | undefined;
    const updated = await tasksOf(services.store).update(task_id, (cur) => {
      outcome = undefined;
      if (!cur || cur.owner_agent !== oa) return undefined;
      outcome = applyReport(cur, status, now);
      return outcome.next;
    });
    if (!updated || !outcome) throw notFound(task_id, agent_id);
    if (updated.wake_at !== null) wakeScheduler(services);
    const log = await appendLog(services.store, updated, { status, message: message ?? null, attempt: outcome.attempt, at: now });
    return { task: toPublic(updated, now), log: toPublicLog(log), retry: outcome.retry };
  },
});
